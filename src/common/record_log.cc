#include "common/record_log.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>

#include <fstream>
#include <sstream>
#include "common/write_all.h"

namespace ossmount {
namespace {

// A record: payload length (4), op (1), key (8), payload, XXH3 of op, key and payload (8).
constexpr size_t kHeader = 4 + 1 + 8;
constexpr size_t kTrailer = 8;
constexpr char kPut = 'P';
constexpr char kErase = 'E';
constexpr uint64_t kMinCompactBytes = 1 << 20;

void PutLe(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t GetLe(const char* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return value;
}

std::string Frame(char op, uint64_t key, std::string_view payload) {
  std::string out;
  out.reserve(kHeader + payload.size() + kTrailer);
  PutLe(out, payload.size(), 4);
  out.push_back(op);
  PutLe(out, key, 8);
  out.append(payload);
  PutLe(out, XXH3_64bits(out.data() + 4, out.size() - 4), 8);
  return out;
}

Status Errno(const std::string& what, const std::string& path) {
  return Status(ErrorCode::kInternal, what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<RecordLog>> RecordLog::Create(const std::string& path,
                                                     const Records& initial) {
  std::unique_ptr<RecordLog> log(new RecordLog(path, UniqueFd()));
  log->Rewrite([&initial](const Emit& emit) {
    for (const auto& [key, payload] : initial) emit(key, payload);
  });
  if (!log->error().ok()) return log->error();
  return log;
}

Result<RecordLog::Records> RecordLog::Load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status(ErrorCode::kNotFound, "no record file " + path);
  std::ostringstream text;
  text << file.rdbuf();
  const std::string in = text.str();
  Records records;
  size_t at = 0;
  while (in.size() - at >= kHeader + kTrailer) {
    const uint64_t length = GetLe(in.data() + at, 4);
    if (in.size() - at - kHeader - kTrailer < length) break;  // torn
    const char* body = in.data() + at + 4;
    const size_t body_size = 1 + 8 + length;
    if (XXH3_64bits(body, body_size) != GetLe(body + body_size, 8)) break;  // damaged
    const char op = body[0];
    const uint64_t key = GetLe(body + 1, 8);
    if (op == kPut) {
      records[key].assign(body + 9, length);
    } else if (op == kErase) {
      records.erase(key);
    } else {
      break;
    }
    at += kHeader + length + kTrailer;
  }
  return records;
}

void RecordLog::Append(char op, uint64_t key, std::string_view payload) {
  if (!error_.ok()) return;
  const std::string frame = Frame(op, key, payload);
  if (!WriteAll(fd_.get(), frame)) {
    error_ = Errno("cannot write", path_);
    return;
  }
  bytes_ += frame.size();
}

void RecordLog::Put(uint64_t key, std::string_view payload) { Append(kPut, key, payload); }

void RecordLog::Erase(uint64_t key) {
  Append(kErase, key, {});
  MarkDead(0);
}

void RecordLog::MarkDead(size_t payload_size) { dead_bytes_ += kHeader + payload_size + kTrailer; }

bool RecordLog::CompactionDue() const {
  return error_.ok() && bytes_ >= kMinCompactBytes && dead_bytes_ * 2 > bytes_;
}

void RecordLog::Rewrite(const std::function<void(const Emit&)>& emit_all) {
  if (!error_.ok()) return;
  const std::string next = path_ + ".new";
  UniqueFd fd(open(next.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600));
  if (!fd) {
    error_ = Errno("cannot create", next);
    return;
  }
  std::string batch;
  uint64_t written = 0;
  bool ok = true;
  auto flush = [&] {
    if (ok && !WriteAll(fd.get(), batch)) ok = false;
    written += batch.size();
    batch.clear();
  };
  emit_all([&](uint64_t key, std::string_view payload) {
    batch += Frame(kPut, key, payload);
    if (batch.size() >= (1 << 16)) flush();
  });
  flush();
  if (!ok) {
    error_ = Errno("cannot write", next);
    return;
  }
  if (rename(next.c_str(), path_.c_str()) != 0) {
    error_ = Errno("cannot rename over", path_);
    return;
  }
  fd_ = std::move(fd);
  bytes_ = written;
  dead_bytes_ = 0;
}

RecordWriter& RecordWriter::U64(uint64_t value) {
  PutLe(out_, value, 8);
  return *this;
}

RecordWriter& RecordWriter::Str(std::string_view value) {
  PutLe(out_, value.size(), 8);
  out_.append(value);
  return *this;
}

bool RecordReader::U64(uint64_t& value) {
  if (!ok_ || in_.size() < 8) return ok_ = false;
  value = GetLe(in_.data(), 8);
  in_.remove_prefix(8);
  return true;
}

bool RecordReader::Str(std::string& value) {
  uint64_t size = 0;
  if (!U64(size) || in_.size() < size) return ok_ = false;
  value.assign(in_.data(), size);
  in_.remove_prefix(size);
  return true;
}

}  // namespace ossmount
