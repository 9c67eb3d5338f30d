// DiskBlockCache implementation: an in-memory LRU index over block files in 256
// subdirectories, background writer threads. See disk_block_cache.h for the contract and
// block_file.h for the file format and layout.
//
// Memory: the index is what a large cache costs the daemon for as long as it runs (a
// million blocks for ImageNet's 1.28 million images). Each block is one hash-set node of
// its binary digest, size, generation and LRU links (72 bytes, no other allocation); the
// file's name and path are built from the digest when a file is touched.
//
// Durability: block files are NOT fsynced. A crash can leave a renamed file whose data did
// not reach the disk (empty or partly zero); the checksums catch that on the next read and
// the block is refetched. An fsync per block would cost a disk flush per small file on the
// writer thread for no gain in what a reader can observe.
//
// Locks: mu_ (index, LRU, byte count, counters) and queue_mu_ (write queue) are never held
// together. Unlinks and the rename into place happen under mu_, so the index and the
// directory agree: a block is in the index exactly when its file is in place. floor_mu_
// serializes the free-space checks (KeepFloor) and is taken before mu_.
#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <boost/intrusive/list.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "common/format_bytes.h"
#include "common/write_all.h"
#include "data/block_file.h"
#include "data/directory_lock.h"
#include "data/disk_block_cache.h"

namespace ossmount::data {

namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

// A hit refreshes its block's mtime (the recency a restart sees) only when it is older
// than this.
constexpr std::time_t kMtimeRefreshAge = 600;

// After the cache has given way to other files (--cache-min-free), it says so again only
// when it has not had to for this long.
constexpr std::chrono::seconds kGiveWayQuiet{60};

// Reads up to `size` bytes at `offset`; returns how many were read (short only at EOF), or
// -1 with errno set.
ssize_t ReadFull(int fd, char* buf, size_t size, off_t offset) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, buf + done, size - done, offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

// mkdir -p, each directory it creates 0700.
Status MakeDirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status(ErrorCode::kInvalidArgument,
                    "cannot create cache directory '" + part + "': " + ErrnoText(errno));
    }
  }
  return Status::Ok();
}

// Whether files in the directory `dir_fd` take the block header attribute (ext4, xfs,
// btrfs and tmpfs do; some network and FUSE file systems do not).
bool TakesBlockXattr(int dir_fd) {
  const std::string probe = std::string(kTempPrefix) + "xattr-probe." + std::to_string(::getpid());
  int fd =
      ::openat(dir_fd, probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  const bool ok = ::fsetxattr(fd, kBlockXattrName, "probe", 5, 0) == 0;
  ::close(fd);
  ::unlinkat(dir_fd, probe.c_str(), 0);
  return ok;
}

struct DigestHash {
  size_t operator()(const BlockDigest& digest) const noexcept {
    size_t h;
    std::memcpy(&h, digest.bytes.data(), sizeof(h));  // SHA-256 bytes: uniform already
    return h;
  }
};

// Calls `each(name)` for every entry of the directory `dir_fd` but "." and "..".
Status ForEachName(int dir_fd, const std::string& what,
                   const std::function<void(const char* name)>& each) {
  int fd = ::dup(dir_fd);
  if (fd < 0) return Status(ErrorCode::kInternal, "dup: " + ErrnoText(errno));
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return Status(ErrorCode::kInvalidArgument,
                  "cannot list cache directory '" + what + "': " + ErrnoText(errno));
  }
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    each(e->d_name);
  }
  ::closedir(d);
  return Status::Ok();
}

// Creates (0700) or checks the 256 block subdirectories of the cache directory `dir_fd`.
// One that is not a directory of this user, private to it, is refused, as the top level is.
Status MakeSubdirectories(int dir_fd, const std::string& dir) {
  for (int i = 0; i < 256; ++i) {
    const std::string sub = BlockSubdirectory(static_cast<unsigned char>(i));
    if (::mkdirat(dir_fd, sub.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status(ErrorCode::kInvalidArgument,
                    "cannot create '" + dir + "/" + sub + "': " + ErrnoText(errno));
    }
    struct stat st;
    if (::fstatat(dir_fd, sub.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      return Status(ErrorCode::kAccessDenied,
                    "'" + dir + "/" + sub +
                        "' is not a private directory of this user, so the cache cannot keep "
                        "its blocks there; remove it");
    }
  }
  return Status::Ok();
}

class DiskBlockCacheImpl final : public DiskBlockCache {
 public:
  DiskBlockCacheImpl(DiskCacheOptions options, int dir_fd, BlockLayout layout)
      : options_(std::move(options)), dir_fd_(dir_fd), layout_(layout) {}

  ~DiskBlockCacheImpl() override {
    {
      std::lock_guard lock(queue_mu_);
      stop_ = true;
    }
    queue_cv_.notify_all();
    space_cv_.notify_all();
    for (auto& w : writers_) {
      if (w.joinable()) w.join();  // the writers drain the queue first
    }
    if (space_watcher_.joinable()) space_watcher_.join();
    ::close(dir_fd_);
  }

  // Deletes leftover temporary files at the top level, moves blocks a cache of an older
  // version kept there into their subdirectories, indexes the blocks of every
  // subdirectory (oldest use first, by mtime, which every hit refreshes and a move keeps)
  // and evicts down to max_size. Before Start(). `on_notice` as DiskCacheOptions says.
  Status Scan(const std::function<void(const std::string&)>& on_notice) {
    if (Status made = MakeSubdirectories(dir_fd_, options_.dir); !made.ok()) return made;
    size_t temps = 0, moved = 0;
    bool announced = false;
    const auto move_start = std::chrono::steady_clock::now();
    Status top = ForEachName(dir_fd_, options_.dir, [&](const char* name) {
      if (std::string_view(name).substr(0, kTempPrefix.size()) == kTempPrefix) {
        if (::unlinkat(dir_fd_, name, 0) == 0) ++temps;
        return;
      }
      std::optional<BlockDigest> digest = ParseBlockFileName(name);
      if (!digest) return;  // a subdirectory, or not ours: leave it alone
      struct stat st;
      if (::fstatat(dir_fd_, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) return;
      if (!announced) {
        announced = true;
        const std::string notice =
            "disk cache: moving the blocks in '" + options_.dir +
            "' into its 256 subdirectories (a cache written by an older version; once, a few "
            "seconds per 100,000 blocks)";
        spdlog::info("{}", notice);
        if (on_notice) on_notice(notice);
      }
      if (::renameat(dir_fd_, name, dir_fd_, BlockFilePath(*digest).c_str()) == 0) ++moved;
    });
    if (!top.ok()) return top;

    // Entries go into the index as their files are found, each one's generation holding
    // the file's mtime for now; the LRU order is then one sort of pointers: 8 bytes per
    // block at the peak, where a list of what was found would take 48 (half a gigabyte
    // for a cache of ten million blocks). The subdirectories are read by several threads
    // (the work is a stat per block: file system metadata, which after a reboot comes from
    // the disk, where requests in parallel are answered sooner), each inserting one
    // subdirectory's blocks at a time.
    std::lock_guard lock(mu_);
    std::vector<const Entry*> by_mtime;
    // Subdirectory 0 first, alone: digests spread blocks evenly over the subdirectories, so
    // it tells how many the index will hold, and the index grows once instead of
    // rehashing at every doubling.
    std::vector<FoundBlock> found;
    if (Status listed = ReadSubdirectory(0, &found); !listed.ok()) return listed;
    index_.reserve(found.size() * 256);
    by_mtime.reserve(found.size() * 256);
    IndexFoundLocked(found, &by_mtime);

    // The calling thread holds mu_ throughout; the readers take turns with insert_mu.
    std::atomic<int> next{1};
    std::mutex insert_mu;  // guards the index, bytes_, by_mtime and error below
    Status error = Status::Ok();
    auto reader = [&] {
      std::vector<FoundBlock> mine;
      for (int i; (i = next.fetch_add(1)) < 256;) {
        mine.clear();
        Status listed = ReadSubdirectory(i, &mine);
        std::lock_guard insert_lock(insert_mu);
        if (!listed.ok()) {
          if (error.ok()) error = listed;
          next = 256;
          return;
        }
        IndexFoundLocked(mine, &by_mtime);
      }
    };
    const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    std::vector<std::thread> helpers;
    for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(reader);
    reader();
    for (auto& h : helpers) h.join();
    if (!error.ok()) return error;
    std::sort(by_mtime.begin(), by_mtime.end(),
              [](const Entry* a, const Entry* b) { return a->generation < b->generation; });
    for (const Entry* e : by_mtime) {
      e->generation = ++generation_;
      lru_.push_back(Mutable(*e));
    }
    by_mtime = {};
    EvictLocked(0);
    if (temps > 0) spdlog::info("disk cache: removed {} unfinished block file(s)", temps);
    if (moved > 0) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - move_start);
      spdlog::info("disk cache: moved {} block(s) into subdirectories in {} ms", moved, ms.count());
    }
    spdlog::info(
        "disk cache '{}': {} block(s), {} bytes (limit {}); new blocks keep their header {}",
        options_.dir, index_.size(), bytes_, options_.max_size,
        layout_ == BlockLayout::kHeaderInXattr ? "in an extended attribute" : "in the file");
    return Status::Ok();
  }

  void Start() {
    const int n = std::max(1, options_.writer_threads);
    for (int i = 0; i < n; ++i) writers_.emplace_back([this] { WriterLoop(); });
    space_watcher_ = std::thread([this] { SpaceWatcherLoop(); });
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
        options_.space_for_test ? options_.space_for_test() : ReadFileSystemSpace(dir_fd_);
    if (!space) {
      capacity_ = options_.max_size;
      writes_in_progress_bytes_ += incoming;
      return true;
    }
    const uint64_t floor = FloorBytes(options_.min_free, *space);
    const uint64_t others = writes_in_progress_bytes_.load();
    const uint64_t shortfall = Shortfall(*space, floor, incoming + others);
    std::lock_guard lock(mu_);
    const uint64_t evictions_before = stats_.evictions;
    const uint64_t freed = EvictLeastRecentLocked(shortfall);
    stats_.space_evictions += stats_.evictions - evictions_before;
    // What the file system has above the floor once the evicted blocks are gone.
    const FileSystemSpace after{space->size, space->available + freed};
    capacity_ = std::min(options_.max_size, bytes_ + RoomAboveFloor(after, floor));
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
            FormatBytes(static_cast<double>(bytes_)), FormatBytes(static_cast<double>(capacity_)),
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
      if (index_.count(Entry(digest))) return;  // already on disk
    }
    bool dropped = false;
    {
      std::lock_guard lock(queue_mu_);
      if (stop_ || queued_.count(digest)) return;
      const uint64_t bytes = data->size();
      if (queue_.size() >= options_.max_pending_writes ||
          (!queue_.empty() && queued_bytes_ + bytes > options_.max_pending_bytes)) {
        dropped = true;
      } else {
        queued_.insert(digest);
        queued_bytes_ += bytes;
        queue_.push_back(Pending{id, digest, std::move(data)});
      }
    }
    if (dropped) {
      std::lock_guard lock(mu_);
      ++stats_.dropped;
      return;
    }
    queue_cv_.notify_one();
  }

  bool Contains(const BlockId& id) const override {
    const Entry key(DigestOf(id));
    std::lock_guard lock(mu_);
    return index_.count(key) > 0;
  }

  uint64_t max_size() const override { return options_.max_size; }

  uint64_t capacity() const override { return capacity_.load(); }

  void Flush() override {
    std::unique_lock lock(queue_mu_);
    idle_cv_.wait(lock, [this] { return queue_.empty() && writing_ == 0; });
  }

  DiskCacheStats Stats() const override {
    DiskCacheStats s;
    {
      std::lock_guard lock(mu_);
      s = stats_;
      s.bytes = bytes_;
      s.blocks = index_.size();
    }
    std::lock_guard lock(queue_mu_);
    s.pending = queue_.size() + static_cast<size_t>(writing_);
    return s;
  }

 private:
  using LruHook = boost::intrusive::list_member_hook<
      boost::intrusive::link_mode<boost::intrusive::normal_link>>;
  // One block of the index. The set orders and finds entries by `digest` alone, which
  // never changes; the other fields are mutable so that they can change in place.
  struct Entry {
    explicit Entry(const BlockDigest& d) : digest(d) {}
    BlockDigest digest;
    mutable LruHook lru;              // in lru_ exactly while in index_
    mutable uint64_t size = 0;        // of the file, header included
    mutable uint64_t generation = 0;  // tells a re-written block from the one read
  };
  struct EntryHash {
    size_t operator()(const Entry& e) const noexcept { return DigestHash()(e.digest); }
  };
  struct EntryEqual {
    bool operator()(const Entry& a, const Entry& b) const noexcept { return a.digest == b.digest; }
  };
  using Index = std::unordered_set<Entry, EntryHash, EntryEqual>;
  using Lru =
      boost::intrusive::list<Entry, boost::intrusive::member_hook<Entry, LruHook, &Entry::lru>,
                             boost::intrusive::constant_time_size<false>>;
  struct Pending {
    BlockId id;
    BlockDigest digest;
    std::shared_ptr<const ByteBuffer> data;
  };

  // What Load found: `data` (Get) or `fd` (OpenVerified) set when the block is intact.
  struct Loaded {
    std::shared_ptr<ByteBuffer> data;
    UniqueFd fd;
  };

  // Reads block `id` and verifies it. A corrupt block is dropped and counted. For
  // passthrough, only a file laid out as exactly the block's bytes qualifies: its
  // descriptor is returned (a block with its header in the file is left alone, uncounted:
  // the caller reads it with Get next), and a miss is not counted (Get's will be).
  Loaded Load(const BlockId& id, uint64_t expected_length, bool for_passthrough) {
    const BlockDigest digest = DigestOf(id);
    uint64_t generation = 0;
    {
      std::lock_guard lock(mu_);
      auto it = index_.find(Entry(digest));
      if (it == index_.end()) {
        if (!for_passthrough) ++stats_.misses;
        return {};
      }
      generation = it->generation;
      lru_.splice(lru_.end(), lru_, lru_.iterator_to(Mutable(*it)));
    }
    UniqueFd fd(
        ::openat(dir_fd_, BlockFilePath(digest).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) {
      int err = errno;
      std::lock_guard lock(mu_);
      if (!for_passthrough) ++stats_.misses;
      // Gone behind our back (someone cleaned the directory): forget it.
      if (err == ENOENT) ForgetLocked(digest, generation, /*unlink=*/false);
      return {};
    }
    struct stat st;
    BlockCheck check = BlockCheck::kTruncated;
    auto data = std::make_shared<ByteBuffer>();
    if (::fstat(fd.get(), &st) == 0) {
      const uint64_t file_size = static_cast<uint64_t>(st.st_size);
      // The header: in the attribute (version 3) or, without one, at the file's start.
      std::string header(BlockHeaderSize(id), '\0');
      BlockLayout layout = BlockLayout::kHeaderInXattr;
      uint64_t data_offset = 0;
      ssize_t hn = ::fgetxattr(fd.get(), kBlockXattrName, header.data(), header.size());
      if (hn < 0 && (errno == ENODATA || errno == ENOTSUP)) {
        if (for_passthrough) return {};
        layout = BlockLayout::kHeaderInFile;
        header.resize(std::min<uint64_t>(header.size(), file_size));
        hn = ReadFull(fd.get(), header.data(), header.size(), 0);
        data_offset = hn >= 0 ? static_cast<uint64_t>(hn) : 0;
      } else if (hn < 0 && errno == ERANGE) {
        check = BlockCheck::kWrongBlock;  // a longer header: another block's
      }
      if (hn >= 0) {
        header.resize(static_cast<size_t>(hn));
        // Never allocate more than the file can hold (a hostile expected_length).
        const uint64_t rest = file_size - std::min<uint64_t>(file_size, data_offset);
        data->resize(std::min(expected_length, rest));
        ssize_t dn =
            ReadFull(fd.get(), data->data(), data->size(), static_cast<off_t>(data_offset));
        if (dn >= 0) {
          data->resize(static_cast<size_t>(dn));
          check = CheckBlock(header, layout, file_size,
                             std::string_view(data->data(), data->size()), id, expected_length);
        }
      }
      // Recency survives a restart through the mtime (Scan orders by it). Refreshed only
      // when older than kMtimeRefreshAge: a journaled inode update on every cached read
      // showed in the profile of a cached epoch, and restart order needs no finer grain.
      if (check == BlockCheck::kOk && std::time(nullptr) - st.st_mtime > kMtimeRefreshAge) {
        ::futimens(fd.get(), nullptr);
      }
    }
    std::lock_guard lock(mu_);
    if (check != BlockCheck::kOk) {
      ++stats_.corrupt;
      ++stats_.misses;
      ForgetLocked(digest, generation, /*unlink=*/true);
      spdlog::warn("disk cache: dropped block {} of '{}' ({}); it will be refetched",
                   BlockFilePath(digest), id.key, BlockCheckName(check));
      return {};
    }
    ++stats_.hits;
    Loaded out;
    if (for_passthrough) {
      out.fd = std::move(fd);
    } else {
      out.data = std::move(data);
    }
    return out;
  }

  // A block file Scan found: its digest, size and mtime (nanoseconds since the epoch).
  struct FoundBlock {
    BlockDigest digest;
    uint64_t size;
    uint64_t mtime_ns;
  };

  // Appends the blocks in subdirectory `i` (of 256) to `found`. Files that are not blocks,
  // or blocks of another subdirectory (never looked for there), are left alone.
  Status ReadSubdirectory(int i, std::vector<FoundBlock>* found) const {
    const auto first_byte = static_cast<unsigned char>(i);
    const std::string sub = BlockSubdirectory(first_byte);
    UniqueFd sub_fd(
        ::openat(dir_fd_, sub.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub_fd) {
      return Status(ErrorCode::kInvalidArgument,
                    "cannot open '" + options_.dir + "/" + sub + "': " + ErrnoText(errno));
    }
    return ForEachName(sub_fd.get(), options_.dir + "/" + sub, [&](const char* name) {
      std::optional<BlockDigest> digest = ParseBlockFileName(name);
      if (!digest || digest->bytes[0] != first_byte) return;
      struct stat st;
      if (::fstatat(sub_fd.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
      if (!S_ISREG(st.st_mode)) return;
      const uint64_t mtime_ns = st.st_mtim.tv_sec < 0
                                    ? 0
                                    : static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000u +
                                          static_cast<uint64_t>(st.st_mtim.tv_nsec);
      found->push_back({*digest, static_cast<uint64_t>(st.st_size), mtime_ns});
    });
  }

  // REQUIRES: mu_ held (by Scan's thread, its readers then take turns). Indexes `found`,
  // outside the LRU list for now, each entry's generation holding its mtime; appends the
  // entries to `by_mtime`.
  void IndexFoundLocked(const std::vector<FoundBlock>& found, std::vector<const Entry*>* by_mtime) {
    for (const FoundBlock& f : found) {
      auto [it, inserted] = index_.emplace(f.digest);
      if (!inserted) continue;
      it->size = f.size;
      it->generation = f.mtime_ns;
      bytes_ += f.size;
      by_mtime->push_back(&*it);
    }
  }

  // The set hands out const entries; only their mutable fields and LRU links change, and
  // the LRU list needs the entry itself.
  static Entry& Mutable(const Entry& e) { return const_cast<Entry&>(e); }

  // REQUIRES: mu_ held, `digest` not indexed. Indexes it as the most recently used block.
  void InsertLocked(const BlockDigest& digest, uint64_t size) {
    auto [it, inserted] = index_.emplace(digest);
    it->size = size;
    it->generation = ++generation_;
    lru_.push_back(Mutable(*it));
    bytes_ += size;
  }

  // REQUIRES: mu_ held. Removes the block from the index (and its file, if `unlink`).
  void EraseLocked(Index::iterator it, bool unlink) {
    if (unlink) ::unlinkat(dir_fd_, BlockFilePath(it->digest).c_str(), 0);
    bytes_ -= it->size;
    lru_.erase(lru_.iterator_to(Mutable(*it)));
    index_.erase(it);
  }

  // REQUIRES: mu_ held. Removes `digest` if it is still the version `generation`.
  void ForgetLocked(const BlockDigest& digest, uint64_t generation, bool unlink) {
    auto it = index_.find(Entry(digest));
    if (it == index_.end() || it->generation != generation) return;
    EraseLocked(it, unlink);
  }

  // REQUIRES: mu_ held. Evicts least-recently-used blocks until `incoming` more bytes fit.
  void EvictLocked(uint64_t incoming) {
    const uint64_t wanted = bytes_ + incoming;
    EvictLeastRecentLocked(wanted > options_.max_size ? wanted - options_.max_size : 0);
  }

  // REQUIRES: mu_ held. Evicts least-recently-used blocks until at least `bytes` are freed
  // or none is left; returns the bytes freed. Counts the evictions.
  uint64_t EvictLeastRecentLocked(uint64_t bytes) {
    uint64_t freed = 0;
    while (freed < bytes && !lru_.empty()) {
      auto it = index_.find(lru_.front());
      freed += it->size;
      EraseLocked(it, /*unlink=*/true);
      ++stats_.evictions;
    }
    return freed;
  }

  void WriterLoop() {
    std::unique_lock lock(queue_mu_);
    for (;;) {
      queue_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, and everything queued is written
      Pending p = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= p.data->size();
      ++writing_;
      lock.unlock();
      if (options_.before_write_for_test) options_.before_write_for_test();
      Write(p.id, p.digest, *p.data);
      p.data.reset();  // may free the caller's buffer: never under our locks
      lock.lock();
      queued_.erase(p.digest);
      --writing_;
      if (queue_.empty() && writing_ == 0) idle_cv_.notify_all();
    }
    idle_cv_.notify_all();
  }

  // Every space_check_interval until the cache closes: gives way to other files.
  void SpaceWatcherLoop() {
    std::unique_lock lock(queue_mu_);
    while (!space_cv_.wait_for(lock, options_.space_check_interval, [this] { return stop_; })) {
      lock.unlock();
      KeepFloor(0);
      lock.lock();
    }
  }

  void Write(const BlockId& id, const BlockDigest& digest, const ByteBuffer& data) {
    const uint64_t estimate =
        data.size() + (layout_ == BlockLayout::kHeaderInFile ? BlockHeaderSize(id) : 0);
    if (!KeepFloor(estimate)) return;  // counted there
    WriteBlockFile(id, digest, data);
    writes_in_progress_bytes_ -= estimate;
  }

  void WriteBlockFile(const BlockId& id, const BlockDigest& digest, const ByteBuffer& data) {
    // At the top level, renamed into the block's subdirectory when complete.
    const std::string temp =
        std::string(kTempPrefix) + BlockFileName(digest) + "." + std::to_string(++temp_counter_);
    int fd =
        ::openat(dir_fd_, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool ok = fd >= 0;
    int err = ok ? 0 : errno;
    bool in_file = layout_ == BlockLayout::kHeaderInFile;
    std::string header;
    if (ok && !in_file) {
      header = EncodeBlockHeader(id, data.data(), data.size(), BlockLayout::kHeaderInXattr);
      if (!WriteAll(fd, {data.data(), data.size()})) {
        ok = false;
        err = errno;
      } else if (::fsetxattr(fd, kBlockXattrName, header.data(), header.size(), 0) != 0) {
        // Refused after the probe said yes (a full inode and xattr block, a file system
        // that changed under us): this block keeps its header in the file instead.
        in_file = ::ftruncate(fd, 0) == 0 && ::lseek(fd, 0, SEEK_SET) == 0;
        if (!in_file) {
          ok = false;
          err = errno;
        }
      }
    }
    if (ok && in_file) {
      header = EncodeBlockHeader(id, data.data(), data.size(), BlockLayout::kHeaderInFile);
      if (!(WriteAll(fd, header) && WriteAll(fd, {data.data(), data.size()}))) {
        ok = false;
        err = errno;
      }
    }
    if (fd >= 0 && ::close(fd) != 0 && ok) {
      ok = false;
      err = errno;
    }
    const uint64_t size = (in_file ? header.size() : 0) + data.size();
    std::lock_guard lock(mu_);
    if (ok && !index_.count(Entry(digest))) {
      EvictLocked(size);
      const std::string path = BlockFilePath(digest);
      int renamed = ::renameat(dir_fd_, temp.c_str(), dir_fd_, path.c_str());
      if (renamed != 0 && errno == ENOENT &&
          ::mkdirat(dir_fd_, BlockSubdirectory(digest.bytes[0]).c_str(), 0700) == 0) {
        // Its subdirectory was deleted under us (someone emptied DIR with rm -rf DIR/*
        // while mounted): made again, so the cache goes on filling instead of failing every
        // write until a restart.
        renamed = ::renameat(dir_fd_, temp.c_str(), dir_fd_, path.c_str());
      }
      if (renamed == 0) {
        InsertLocked(digest, size);
        ++stats_.writes;
        return;
      }
      err = errno;
      ok = false;
    }
    if (fd >= 0) ::unlinkat(dir_fd_, temp.c_str(), 0);
    if (!ok) {
      ++stats_.dropped;
      // A full or vanished disk fails every write: log the 1st, 2nd, 4th, 8th, ... failure.
      ++write_failures_;
      if ((write_failures_ & (write_failures_ - 1)) == 0) {
        spdlog::warn("disk cache: cannot write a block of '{}' into '{}': {} ({} failed so far)",
                     id.key, options_.dir, ErrnoText(err), write_failures_);
      }
    }
  }

  const DiskCacheOptions options_;
  const int dir_fd_;          // the cache directory; every file operation is relative to it
  const BlockLayout layout_;  // of the blocks this process writes (never kAuto)

  // guards index_, lru_, bytes_, generation_, stats_, write_failures_, last_gave_way_
  mutable std::mutex mu_;
  Index index_;
  Lru lru_;  // front = least recently used; declared after index_, so destroyed first
  uint64_t bytes_ = 0;
  uint64_t generation_ = 0;
  DiskCacheStats stats_;
  uint64_t write_failures_ = 0;
  // The last KeepFloor with a shortfall; the epoch until the first.
  std::chrono::steady_clock::time_point last_gave_way_;

  mutable std::mutex queue_mu_;       // guards queue_, queued_, queued_bytes_, writing_, stop_
  std::condition_variable queue_cv_;  // work for the writer, or stop
  std::condition_variable idle_cv_;   // queue empty and writer idle (Flush)
  std::deque<Pending> queue_;
  std::unordered_set<BlockDigest, DigestHash> queued_;
  uint64_t queued_bytes_ = 0;  // data bytes in queue_
  int writing_ = 0;            // blocks being written now
  bool stop_ = false;

  std::atomic<uint64_t> temp_counter_{0};
  std::mutex floor_mu_;  // one KeepFloor at a time; taken before mu_, never under it
  std::atomic<uint64_t> writes_in_progress_bytes_{0};  // blocks past KeepFloor, not yet in place
  std::atomic<uint64_t> capacity_{0};                  // see capacity()
  std::condition_variable space_cv_;                   // stop_, for the space watcher
  std::vector<std::thread> writers_;
  std::thread space_watcher_;
};

}  // namespace

Result<std::shared_ptr<DiskBlockCache>> DiskBlockCache::Open(const DiskCacheOptions& options) {
  if (options.dir.empty()) {
    return Status(ErrorCode::kInvalidArgument, "the disk cache needs a directory (--cache DIR)");
  }
  if (options.max_size == 0) {
    return Status(ErrorCode::kInvalidArgument, "--max-cache-size must be more than 0");
  }
  if (Status st = MakeDirs(options.dir); !st.ok()) return st;
  int fd = ::open(options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "cannot open cache directory '" + options.dir + "': " + ErrnoText(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status(ErrorCode::kInvalidArgument,
                  "cache directory '" + options.dir + "' is not a directory");
  }
  if (st.st_uid != ::geteuid()) {
    ::close(fd);
    return Status(ErrorCode::kAccessDenied,
                  "cache directory '" + options.dir + "' is owned by uid " +
                      std::to_string(st.st_uid) + ", not by this user (uid " +
                      std::to_string(::geteuid()) + "); use a directory of your own");
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    ::close(fd);
    return Status(ErrorCode::kAccessDenied,
                  "cache directory '" + options.dir + "' is writable by group or others (mode " +
                      mode + "), so others could plant blocks; run chmod 700 on it");
  }
  if (::faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
    ::close(fd);
    return Status(ErrorCode::kAccessDenied,
                  "cache directory '" + options.dir + "' is not writable by this user");
  }
  // Before anything is written or swept: a second process must not delete the first one's
  // temporary files.
  if (Status locked = LockDirectory(fd, options.dir, options.lock_wait, options.on_notice);
      !locked.ok()) {
    ::close(fd);
    return locked;
  }
  const bool xattrs = TakesBlockXattr(fd);
  BlockLayout layout = options.layout;
  if (layout == BlockLayout::kAuto) {
    layout = xattrs ? BlockLayout::kHeaderInXattr : BlockLayout::kHeaderInFile;
  } else if (layout == BlockLayout::kHeaderInXattr && !xattrs) {
    ::close(fd);
    return Status(ErrorCode::kInvalidArgument,
                  "cache directory '" + options.dir +
                      "' is on a file system without user extended attributes");
  }
  DiskCacheOptions kept = options;
  kept.on_notice = nullptr;  // for Open only: it may refer to the caller's stack
  auto cache = std::make_shared<DiskBlockCacheImpl>(std::move(kept), fd, layout);
  if (Status s = cache->Scan(options.on_notice); !s.ok()) return s;
  cache->KeepFloor(0);
  cache->Start();
  return std::shared_ptr<DiskBlockCache>(std::move(cache));
}

}  // namespace ossmount::data
