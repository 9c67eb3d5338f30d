#include "meta/listing_records.h"

#include <lzma.h>
#include <xxhash.h>

#include <algorithm>

namespace ossmount::meta {
namespace {

constexpr uint64_t kFormat = 1;
constexpr uint64_t kNever = 0;  // an expiry that never comes
constexpr uint64_t kHasCrc64 = 1;
constexpr uint64_t kAppendable = 2;
// A listing this large is not what a budgeted cache held: the record is damaged.
constexpr uint64_t kMaxRawBytes = uint64_t{1} << 32;

uint64_t KeyOf(const std::string& dir_path) {
  return XXH3_64bits(dir_path.data(), dir_path.size());
}

std::string Compress(const std::string& raw) {
  std::string out(lzma_stream_buffer_bound(raw.size()), '\0');
  size_t used = 0;
  if (lzma_easy_buffer_encode(
          0, LZMA_CHECK_NONE, nullptr, reinterpret_cast<const uint8_t*>(raw.data()), raw.size(),
          reinterpret_cast<uint8_t*>(out.data()), &used, out.size()) != LZMA_OK) {
    return std::string();
  }
  out.resize(used);
  return out;
}

std::optional<std::string> Decompress(const std::string& packed, uint64_t raw_size) {
  if (raw_size > kMaxRawBytes) return std::nullopt;
  std::string out(raw_size, '\0');
  uint64_t memlimit = UINT64_MAX;
  size_t in_pos = 0, out_pos = 0;
  if (lzma_stream_buffer_decode(
          &memlimit, 0, nullptr, reinterpret_cast<const uint8_t*>(packed.data()), &in_pos,
          packed.size(), reinterpret_cast<uint8_t*>(out.data()), &out_pos, out.size()) != LZMA_OK ||
      out_pos != raw_size) {
    return std::nullopt;
  }
  return out;
}

}  // namespace

std::string ListingRecords::Encode(const std::string& dir_path, const DirSnapshot& listing,
                                   TimePoint expiry) {
  RecordWriter children;
  for (size_t i = 0; i < listing.size(); ++i) {
    const DirSnapshot::Child c = listing.child(i);
    children.Str(c.name)
        .U64(static_cast<uint64_t>(c.kind))
        .U64(c.size)
        .U64(static_cast<uint64_t>(c.mtime_sec))
        .Str(c.etag)
        .U64((c.crc64 ? kHasCrc64 : 0) | (c.appendable ? kAppendable : 0))
        .U64(c.crc64.value_or(0));
  }
  const uint64_t when =
      expiry == TimePoint::max()
          ? kNever
          : static_cast<uint64_t>(std::max<int64_t>(
                1, std::chrono::duration_cast<std::chrono::nanoseconds>(expiry.time_since_epoch())
                       .count()));
  RecordWriter w;
  w.U64(kFormat)
      .Str(dir_path)
      .U64(when)
      .U64(listing.hidden().invalid)
      .U64(listing.hidden().clashes)
      .U64(listing.size())
      .U64(children.bytes().size())
      .Str(Compress(children.bytes()));
  return w.bytes();
}

std::optional<ListingRecords::Restored> ListingRecords::DecodeOne(std::string_view payload) {
  RecordReader r(payload);
  uint64_t format = 0, when = 0, count = 0, raw_size = 0;
  HiddenCounts hidden;
  Restored out;
  std::string packed;
  if (!r.U64(format) || format != kFormat || !r.Str(out.dir_path) || !r.U64(when) ||
      !r.U64(hidden.invalid) || !r.U64(hidden.clashes) || !r.U64(count) || !r.U64(raw_size) ||
      !r.Str(packed)) {
    return std::nullopt;
  }
  std::optional<std::string> raw = Decompress(packed, raw_size);
  if (!raw) return std::nullopt;
  RecordReader cr(*raw);
  std::vector<DirChild> children;
  children.reserve(std::min<uint64_t>(count, raw->size() / 8));
  for (uint64_t i = 0; i < count; ++i) {
    DirChild child;
    uint64_t kind = 0, mtime = 0, flags = 0, crc = 0;
    if (!cr.Str(child.name) || !cr.U64(kind) || !cr.U64(child.attr.size) || !cr.U64(mtime) ||
        !cr.Str(child.attr.etag) || !cr.U64(flags) || !cr.U64(crc)) {
      return std::nullopt;
    }
    // DirSnapshot's contract: valid names, sorted and unique.
    if (kind > static_cast<uint64_t>(NodeKind::kSymlink) || !ValidComponent(child.name) ||
        (!children.empty() && !(children.back().name < child.name))) {
      return std::nullopt;
    }
    child.attr.kind = static_cast<NodeKind>(kind);
    child.attr.mtime_sec = static_cast<int64_t>(mtime);
    if ((flags & kHasCrc64) != 0) child.attr.crc64 = crc;
    child.attr.appendable = (flags & kAppendable) != 0;
    children.push_back(std::move(child));
  }
  out.listing = std::make_shared<const DirSnapshot>(children, hidden);
  out.expiry = when == kNever ? TimePoint::max()
                              : TimePoint(std::chrono::duration_cast<TimePoint::duration>(
                                    std::chrono::nanoseconds(when)));
  out.key = KeyOf(out.dir_path);
  return out;
}

std::vector<ListingRecords::Restored> ListingRecords::Decode(const RecordLog::Records& records) {
  std::vector<Restored> out;
  for (const auto& [key, payload] : records) {
    std::optional<Restored> one = DecodeOne(payload);
    if (!one || one->key != key) continue;
    one->payload = payload;
    out.push_back(std::move(*one));
  }
  return out;
}

Result<std::unique_ptr<ListingRecords>> ListingRecords::Create(
    const std::string& path, const std::vector<Restored>& initial) {
  RecordLog::Records records;
  // Records read from a file are taken as they are: compressing them again would hold up a
  // restarted daemon's start by milliseconds per thousand names.
  for (const Restored& r : initial) {
    records[r.key] = r.payload.empty() ? Encode(r.dir_path, *r.listing, r.expiry) : r.payload;
  }
  auto log = RecordLog::Create(path, records);
  if (!log.ok()) return log.status();
  std::unique_ptr<ListingRecords> out(new ListingRecords(std::move(*log)));
  for (const Restored& r : initial) out->dirs_[r.dir_path].recorded_bytes = records[r.key].size();
  return out;
}

ListingRecords::ListingRecords(std::unique_ptr<RecordLog> log)
    : log_(std::move(log)), writer_([this] { WriteLoop(); }) {}

ListingRecords::~ListingRecords() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  writer_.join();
}

void ListingRecords::Kept(const std::string& dir_path, std::shared_ptr<const DirSnapshot> listing,
                          TimePoint expiry) {
  {
    std::lock_guard lock(mu_);
    Dir& dir = dirs_[dir_path];
    dir.generation = ++generations_;
    if (!dir.pending) queue_.push_back(dir_path);
    dir.pending = std::move(listing);
    dir.expiry = expiry;
  }
  changed_.notify_all();
}

void ListingRecords::Dropped(const std::string& dir_path) {
  std::lock_guard lock(mu_);
  auto it = dirs_.find(dir_path);
  if (it == dirs_.end()) return;
  if (it->second.recorded_bytes > 0) {
    log_->Erase(KeyOf(dir_path));
    log_->MarkDead(it->second.recorded_bytes);
  }
  // A listing the writer has taken is not written: its generation is gone with the entry.
  dirs_.erase(it);
  CompactIfDue();
}

void ListingRecords::WriteLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    changed_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const std::string dir_path = std::move(queue_.front());
    queue_.pop_front();
    auto it = dirs_.find(dir_path);
    if (it == dirs_.end() || !it->second.pending) {
      changed_.notify_all();  // for Flush: the queue may be empty now
      continue;
    }
    std::shared_ptr<const DirSnapshot> listing = std::move(it->second.pending);
    const TimePoint expiry = it->second.expiry;
    const uint64_t generation = it->second.generation;
    ++writing_;
    lock.unlock();
    const std::string payload = Encode(dir_path, *listing, expiry);
    lock.lock();
    --writing_;
    it = dirs_.find(dir_path);
    // Written only if nothing was kept or dropped for the directory meanwhile.
    if (it != dirs_.end() && it->second.generation == generation) {
      if (it->second.recorded_bytes > 0) log_->MarkDead(it->second.recorded_bytes);
      log_->Put(KeyOf(dir_path), payload);
      it->second.recorded_bytes = payload.size();
      CompactIfDue();
    }
    changed_.notify_all();  // for Flush
  }
}

void ListingRecords::CompactIfDue() {
  if (!log_->CompactionDue()) return;
  auto live = RecordLog::Load(log_->path());
  if (!live.ok()) return;
  log_->Rewrite([&](const RecordLog::Emit& emit) {
    for (const auto& [key, payload] : *live) emit(key, payload);
  });
}

void ListingRecords::Flush() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [this] { return stop_ || (queue_.empty() && writing_ == 0); });
}

Status ListingRecords::error() const {
  std::lock_guard lock(mu_);
  return log_->error();
}

size_t ListingRecords::recorded() const {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(std::count_if(
      dirs_.begin(), dirs_.end(), [](const auto& d) { return d.second.recorded_bytes > 0; }));
}

uint64_t ListingRecords::bytes() const {
  std::lock_guard lock(mu_);
  return log_->bytes();
}

}  // namespace ossmount::meta
