// DiskBlockCache implementation: the facade that ties the cache's parts together and keeps
// the index and the directory in agreement. See disk_block_cache.h for the contract,
// block_file.h for the file format and layout. Its parts: OpenCacheDirectory
// (cache_directory.h) checks and locks DIR, ScanBlocks (block_scan.h) indexes what DIR
// holds at start-up, BlockIndex (block_index.h) is the LRU index, BlockWriter
// (block_writer.h) the write queue and its threads. Here: reads (Get, OpenVerified), the
// rename of a written block into place, the free-space floor and its watcher thread.
//
// Durability: block files are NOT fsynced. A crash can leave a renamed file whose data did
// not reach the disk (empty or partly zero); the checksums catch that on the next read and
// the block is refetched. An fsync per block would cost a disk flush per small file on the
// writer thread for no gain in what a reader can observe.
//
// Locks, in the order they may be taken:
//   floor_mu_ (one free-space check at a time)  before  mu_ (index_, stats_)  before  the
//   scan's insert lock (Open only).
// The writer's queue lock and watcher_mu_ are never held with any other lock, nor while
// calling out. Unlinks and the rename into place happen under mu_, so a block is in the
// index exactly when its file is in place; a reader remembers the generation it found, so a
// bad file it drops is never a newer one written meanwhile. Disk reads run without a lock.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "common/format_bytes.h"
#include "data/block_file.h"
#include "data/block_file_io.h"
#include "data/block_index.h"
#include "data/block_scan.h"
#include "data/block_writer.h"
#include "data/cache_directory.h"
#include "data/disk_block_cache.h"

namespace ossmount::data {

namespace {

// After the cache has given way to other files (--cache-min-free), it says so again only
// when it has not had to for this long.
constexpr std::chrono::seconds kGiveWayQuiet{60};

class DiskBlockCacheImpl final : public DiskBlockCache {
 public:
  DiskBlockCacheImpl(DiskCacheOptions options, CacheDirectory dir)
      : options_(std::move(options)),
        dir_fd_(std::move(dir.fd)),
        layout_(dir.layout),
        index_(options_.max_size) {}

  ~DiskBlockCacheImpl() override {
    {
      std::lock_guard lock(watcher_mu_);
      watcher_stop_ = true;
    }
    watcher_cv_.notify_all();
    if (watcher_.joinable()) watcher_.join();
    writer_.reset();  // writes every queued block first
    // dir_fd_ closes after this, with the members: that lets go of the directory lock.
  }

  // Indexes what DIR holds and evicts down to max_size. Before Start().
  Status Scan(const std::function<void(const std::string&)>& on_notice) {
    std::lock_guard lock(mu_);
    if (Status s = ScanBlocks(dir_fd_.get(), options_.dir, on_notice, &index_); !s.ok()) return s;
    index_.EvictToFit(0, remove_file_);
    spdlog::info(
        "disk cache '{}': {} block(s), {} bytes (limit {}); new blocks keep their header {}",
        options_.dir, index_.blocks(), index_.bytes(), options_.max_size,
        layout_ == BlockLayout::kHeaderInXattr ? "in an extended attribute" : "in the file");
    return Status::Ok();
  }

  void Start() {
    BlockWriter::Limits limits;
    limits.max_blocks = options_.max_pending_writes;
    limits.max_bytes = options_.max_pending_bytes;
    limits.threads = options_.writer_threads;
    writer_ = std::make_unique<BlockWriter>(
        limits, [this](const BlockId& id, const BlockDigest& digest, const ByteBuffer& data) {
          WriteBlock(id, digest, data);
        });
    watcher_ = std::thread([this] { SpaceWatcherLoop(); });
  }

  // Evicts least recently used blocks until the file system has room for `incoming` more
  // bytes (and for the blocks other writers are writing now) above min_free; refreshes
  // capacity_. True when they fit: they then count as being written (in
  // writes_in_progress_bytes_) until the caller takes them off. False when even an empty
  // cache leaves too little: the block is not written. An unreadable file system size
  // (statvfs failed) applies no floor. One check at a time, so that two never evict for the
  // same shortfall and each sees the bytes the one before let through.
  bool KeepFloor(uint64_t incoming) {
    std::lock_guard floor_lock(floor_mu_);
    std::optional<FileSystemSpace> space =
        options_.space_for_test ? options_.space_for_test() : ReadFileSystemSpace(dir_fd_.get());
    if (!space) {
      capacity_ = options_.max_size;
      writes_in_progress_bytes_ += incoming;
      return true;
    }
    const uint64_t floor = FloorBytes(options_.min_free, *space);
    const uint64_t others = writes_in_progress_bytes_.load();
    const uint64_t shortfall = Shortfall(*space, floor, incoming + others);
    std::lock_guard lock(mu_);
    const uint64_t evictions_before = index_.evictions();
    const uint64_t freed = index_.EvictLeastRecent(shortfall, remove_file_);
    stats_.space_evictions += index_.evictions() - evictions_before;
    // What the file system has above the floor once the evicted blocks are gone.
    const FileSystemSpace after{space->size, space->available + freed};
    capacity_ = std::min(options_.max_size, index_.bytes() + RoomAboveFloor(after, floor));
    const bool fits = freed >= shortfall;
    if (shortfall > 0) {
      // A cache kept at the floor gives way at nearly every write, as one at max_size evicts:
      // said when it starts, and again only after a minute without it.
      const auto now = std::chrono::steady_clock::now();
      const bool first_time = last_gave_way_ == std::chrono::steady_clock::time_point{};
      if (first_time || now - last_gave_way_ > kGiveWayQuiet) {
        spdlog::warn(
            "disk cache: --cache-min-free keeps {} free on the file system of '{}' ({} "
            "available): the cache gives way to other files, holding {} ({} now at most; "
            "least recently used blocks are evicted{})",
            FormatBytes(static_cast<double>(floor)), options_.dir,
            FormatBytes(static_cast<double>(space->available)),
            FormatBytes(static_cast<double>(index_.bytes())),
            FormatBytes(static_cast<double>(capacity_)),
            fits ? "" : "; new blocks are not cached until there is room");
      }
      last_gave_way_ = now;
    }
    if (fits) {
      writes_in_progress_bytes_ += incoming;
    } else if (incoming > 0) {  // a block refused, not a watcher's check
      ++stats_.no_space;
      ++stats_.dropped;
    }
    return fits;
  }

  std::optional<std::shared_ptr<const ByteBuffer>> Get(const BlockId& id,
                                                       uint64_t expected_length) override {
    Loaded block = Load(id, expected_length, /*for_passthrough=*/false);
    if (!block.data) return std::nullopt;
    return std::shared_ptr<const ByteBuffer>(std::move(block.data));
  }

  std::optional<UniqueFd> OpenVerified(const BlockId& id, uint64_t expected_length) override {
    Loaded block = Load(id, expected_length, /*for_passthrough=*/true);
    if (!block.fd) return std::nullopt;
    return std::move(block.fd);
  }

  BlockLayout layout() const override { return layout_; }

  void Put(const BlockId& id, std::shared_ptr<const ByteBuffer> data) override {
    if (!data) return;
    const BlockDigest digest = DigestOf(id);
    {
      std::lock_guard lock(mu_);
      if (BlockHeaderSize(id) + data->size() > options_.max_size) {
        ++stats_.dropped;
        return;
      }
      if (index_.Contains(digest)) return;  // already on disk
    }
    if (writer_->Enqueue(id, digest, std::move(data)) == BlockWriter::Enqueued::kFull) {
      std::lock_guard lock(mu_);
      ++stats_.dropped;
    }
  }

  bool Contains(const BlockId& id) const override {
    const BlockDigest digest = DigestOf(id);
    std::lock_guard lock(mu_);
    return index_.Contains(digest);
  }

  uint64_t max_size() const override { return options_.max_size; }

  uint64_t capacity() const override { return capacity_.load(); }

  void Flush() override { writer_->Flush(); }

  DiskCacheStats Stats() const override {
    DiskCacheStats s;
    {
      std::lock_guard lock(mu_);
      s = stats_;
      s.evictions = index_.evictions();
      s.bytes = index_.bytes();
      s.blocks = index_.blocks();
    }
    s.pending = writer_->pending();
    return s;
  }

 private:
  // What Load found: `data` (Get) or `fd` (OpenVerified) set when the block is intact.
  struct Loaded {
    std::shared_ptr<ByteBuffer> data;
    UniqueFd fd;
  };

  // REQUIRES: mu_ held, the block leaving the index. Removes its file.
  void RemoveFile(const BlockDigest& digest) const {
    ::unlinkat(dir_fd_.get(), BlockFilePath(digest).c_str(), 0);
  }

  // Reads block `id` and verifies it. A corrupt block is dropped and counted. For
  // passthrough, only a file laid out as exactly the block's bytes qualifies: its
  // descriptor is returned (a block with its header in the file is left alone, uncounted:
  // the caller reads it with Get next), and a miss is not counted (Get's will be).
  Loaded Load(const BlockId& id, uint64_t expected_length, bool for_passthrough) {
    const BlockDigest digest = DigestOf(id);
    uint64_t generation = 0;
    {
      std::lock_guard lock(mu_);
      std::optional<uint64_t> found = index_.Touch(digest);
      if (!found) {
        if (!for_passthrough) ++stats_.misses;
        return {};
      }
      generation = *found;
    }
    UniqueFd fd(
        ::openat(dir_fd_.get(), BlockFilePath(digest).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) {
      int err = errno;
      std::lock_guard lock(mu_);
      if (!for_passthrough) ++stats_.misses;
      // Gone behind our back (someone cleaned the directory): forget it.
      if (err == ENOENT) index_.Forget(digest, generation);
      return {};
    }
    BlockRead read = ReadBlockFile(fd.get(), id, expected_length, for_passthrough);
    if (read.header_in_file) return {};
    const BlockCheck check = read.check;
    std::lock_guard lock(mu_);
    if (check != BlockCheck::kOk) {
      ++stats_.corrupt;
      ++stats_.misses;
      if (index_.Forget(digest, generation)) RemoveFile(digest);
      spdlog::warn("disk cache: dropped block {} of '{}' ({}); it will be refetched",
                   BlockFilePath(digest), id.key, BlockCheckName(check));
      return {};
    }
    ++stats_.hits;
    Loaded out;
    if (for_passthrough) {
      out.fd = std::move(fd);
    } else {
      out.data = std::move(read.data);
    }
    return out;
  }

  // Every space_check_interval until the cache closes: gives way to other files.
  void SpaceWatcherLoop() {
    std::unique_lock lock(watcher_mu_);
    while (!watcher_cv_.wait_for(lock, options_.space_check_interval,
                                 [this] { return watcher_stop_; })) {
      lock.unlock();
      KeepFloor(0);
      lock.lock();
    }
  }

  // On a writer thread: makes room above the floor, writes a temporary file, renames it
  // into place.
  void WriteBlock(const BlockId& id, const BlockDigest& digest, const ByteBuffer& data) {
    if (options_.before_write_for_test) options_.before_write_for_test();
    const uint64_t estimate =
        data.size() + (layout_ == BlockLayout::kHeaderInFile ? BlockHeaderSize(id) : 0);
    if (!KeepFloor(estimate)) return;  // counted there
    // At the top level, renamed into the block's subdirectory when complete.
    const std::string temp =
        std::string(kTempPrefix) + BlockFileName(digest) + "." + std::to_string(++temp_counter_);
    PlaceBlock(id, digest, temp, WriteTempBlockFile(dir_fd_.get(), temp, id, data, layout_));
    writes_in_progress_bytes_ -= estimate;
  }

  // Renames the written file `temp` into place and indexes it, evicting down to max_size
  // first; else removes it, counting a failure.
  void PlaceBlock(const BlockId& id, const BlockDigest& digest, const std::string& temp,
                  const TempBlockFile& file) {
    bool ok = file.ok;
    int err = file.error;
    std::lock_guard lock(mu_);
    if (ok && !index_.Contains(digest)) {
      index_.EvictToFit(file.size, remove_file_);
      const std::string path = BlockFilePath(digest);
      int renamed = ::renameat(dir_fd_.get(), temp.c_str(), dir_fd_.get(), path.c_str());
      if (renamed != 0 && errno == ENOENT &&
          ::mkdirat(dir_fd_.get(), BlockSubdirectory(digest.bytes[0]).c_str(), 0700) == 0) {
        // Its subdirectory was deleted under us (someone emptied DIR with rm -rf DIR/*
        // while mounted): made again, so the cache goes on filling instead of failing every
        // write until a restart.
        renamed = ::renameat(dir_fd_.get(), temp.c_str(), dir_fd_.get(), path.c_str());
      }
      if (renamed == 0) {
        index_.Insert(digest, file.size);
        ++stats_.writes;
        return;
      }
      err = errno;
      ok = false;
    }
    if (file.created) ::unlinkat(dir_fd_.get(), temp.c_str(), 0);
    if (!ok) {
      ++stats_.dropped;
      // A full or vanished disk fails every write: log the 1st, 2nd, 4th, 8th, ... failure.
      ++write_failures_;
      if ((write_failures_ & (write_failures_ - 1)) == 0) {
        spdlog::warn("disk cache: cannot write a block of '{}' into '{}': {} ({} failed so far)",
                     id.key, options_.dir, std::strerror(err), write_failures_);
      }
    }
  }

  const DiskCacheOptions options_;
  const UniqueFd dir_fd_;     // DIR, locked; every file operation is relative to it
  const BlockLayout layout_;  // of the blocks this process writes (never kAuto)
  // What the index calls for each block it evicts.
  const BlockIndex::EvictedFn remove_file_ = [this](const BlockDigest& d) { RemoveFile(d); };

  mutable std::mutex mu_;  // guards index_, stats_, write_failures_, last_gave_way_
  BlockIndex index_;
  DiskCacheStats stats_;  // but evictions, bytes, blocks (index_) and pending (writer_)
  uint64_t write_failures_ = 0;
  // The last KeepFloor with a shortfall; the epoch until the first.
  std::chrono::steady_clock::time_point last_gave_way_;

  std::mutex floor_mu_;  // one KeepFloor at a time; taken before mu_, never under it
  std::atomic<uint64_t> writes_in_progress_bytes_{0};  // blocks past KeepFloor, not yet in place
  std::atomic<uint64_t> capacity_{0};                  // see capacity()
  std::atomic<uint64_t> temp_counter_{0};

  std::unique_ptr<BlockWriter> writer_;  // from Start()
  std::mutex watcher_mu_;                // guards watcher_stop_
  std::condition_variable watcher_cv_;   // watcher_stop_
  bool watcher_stop_ = false;
  std::thread watcher_;  // the free-space watcher, from Start()
};

}  // namespace

Result<std::shared_ptr<DiskBlockCache>> DiskBlockCache::Open(const DiskCacheOptions& options) {
  if (options.dir.empty()) {
    return Status(ErrorCode::kInvalidArgument, "the disk cache needs a directory (--cache DIR)");
  }
  if (options.max_size == 0) {
    return Status(ErrorCode::kInvalidArgument, "--max-cache-size must be more than 0");
  }
  Result<CacheDirectory> dir = OpenCacheDirectory(options);
  if (!dir.ok()) return dir.status();
  DiskCacheOptions kept = options;
  kept.on_notice = nullptr;  // for Open only: it may refer to the caller's stack
  auto cache = std::make_shared<DiskBlockCacheImpl>(std::move(kept), std::move(*dir));
  if (Status s = cache->Scan(options.on_notice); !s.ok()) return s;
  cache->KeepFloor(0);
  cache->Start();
  return std::shared_ptr<DiskBlockCache>(std::move(cache));
}

}  // namespace ossmount::data
