#include "fs/handle_records.h"

namespace ossmount::fs {

std::string HandleRecord::Encode() const {
  RecordWriter out;
  out.U64(static_cast<uint64_t>(kind)).U64(ino).Str(path).Str(etag).U64(size);
  out.U64(static_cast<uint64_t>(mtime_sec)).U64(crc64.has_value() ? 1 : 0).U64(crc64.value_or(0));
  out.U64(appendable ? 1 : 0);
  return out.bytes();
}

std::optional<HandleRecord> HandleRecord::Decode(std::string_view payload) {
  RecordReader in(payload);
  HandleRecord r;
  uint64_t kind = 0, mtime = 0, has_crc = 0, crc = 0, appendable = 0;
  if (!in.U64(kind) || !in.U64(r.ino) || !in.Str(r.path) || !in.Str(r.etag) || !in.U64(r.size) ||
      !in.U64(mtime) || !in.U64(has_crc) || !in.U64(crc) || !in.U64(appendable)) {
    return std::nullopt;
  }
  if (kind < 1 || kind > 3) return std::nullopt;
  r.kind = static_cast<Kind>(kind);
  r.mtime_sec = static_cast<int64_t>(mtime);
  if (has_crc != 0) r.crc64 = crc;
  r.appendable = appendable != 0;
  return r;
}

void HandleRecords::Opened(uint64_t fh, const HandleRecord& record) {
  std::string payload = record.Encode();
  std::lock_guard lock(mu_);
  log_->Put(fh, payload);
  std::string& live = live_[fh];
  if (!live.empty()) log_->MarkDead(live.size());  // a number given twice: the last counts
  live = std::move(payload);
}

void HandleRecords::Released(uint64_t fh) {
  std::lock_guard lock(mu_);
  auto it = live_.find(fh);
  if (it == live_.end()) return;
  log_->MarkDead(it->second.size());
  live_.erase(it);
  log_->Erase(fh);
  if (log_->CompactionDue()) {
    log_->Rewrite([this](const RecordLog::Emit& emit) {
      for (const auto& [number, payload] : live_) emit(number, payload);
    });
  }
}

Status HandleRecords::error() const {
  std::lock_guard lock(mu_);
  return log_->error();
}

std::map<uint64_t, HandleRecord> HandleRecords::Decode(const RecordLog::Records& records) {
  std::map<uint64_t, HandleRecord> handles;
  for (const auto& [fh, payload] : records) {
    if (auto record = HandleRecord::Decode(payload)) handles.emplace(fh, std::move(*record));
  }
  return handles;
}

}  // namespace ossmount::fs
