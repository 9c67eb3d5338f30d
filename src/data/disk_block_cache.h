// DiskBlockCache: object data on local disk (--cache DIR), so a second epoch, and a remount,
// read without a GET.
//
// Blocks are keyed by (object key, etag, block index). A whole small object is one block
// (index kWholeObject); a large object is cached in blocks of the readahead part size,
// index = offset / part size. Because the etag is part of the key, a changed object never
// hits a stale block, and after a restart every block whose etag still matches the listing
// is served without a GET (the cache survives restarts, unlike Mountpoint's and gcsfuse's).
//
// On disk: DIR is created 0700, files are 0600. Each block carries a header (magic, key,
// etag, index, length; in an extended attribute of the file where the file system allows,
// else at the file's start) and a checksum of its bytes that is verified on EVERY read
// (and, for a file handed out with OpenVerified, when it is handed out); a
// corrupt or truncated block is deleted and reported as a miss (then refetched), never
// served. Blocks are written to a temporary file and renamed into place, so a crash never
// leaves a half-written block under a real name. The total size is kept within max_size by
// evicting least-recently-used blocks, and so is the free space of DIR's file system
// (min_free, free_space.h): before each block is written, and every space_check_interval
// while none is, blocks are evicted until the file system has min_free available again,
// so the cache gives way to other files that need the disk. Opening an existing DIR
// indexes the blocks there.
//
// Thread-safety: all methods may be called concurrently. Get() reads the disk on the
// calling thread (local NVMe or page cache: fast); Put() returns at once and writes on a
// background thread (a full write queue drops the block rather than blocking readers).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/byte_buffer.h"
#include "common/unique_fd.h"
#include "data/disk_cache_options.h"
#include "ossmount/status.h"

namespace ossmount::data {

constexpr uint64_t kWholeObject = ~0ull;

struct BlockId {
  std::string key;
  std::string etag;
  uint64_t index = 0;
};

struct DiskCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t corrupt = 0;  // blocks that failed verification and were dropped
  uint64_t writes = 0;
  uint64_t evictions = 0;
  uint64_t bytes = 0;            // on disk now
  uint64_t blocks = 0;           // on disk now
  uint64_t dropped = 0;          // Puts dropped: write queue full, too large, no room, write failed
  uint64_t space_evictions = 0;  // of `evictions`: to keep min_free available
  uint64_t no_space = 0;         // of `dropped`: even an empty cache left less than min_free
  uint64_t pending = 0;          // Puts queued, not yet written
};

class DiskBlockCache {
 public:
  virtual ~DiskBlockCache() = default;

  // Creates or reopens the cache directory (refusing one that others may write to, or that
  // another process has open as its cache: see lock_wait), indexes existing blocks and
  // evicts down to max_size. Errors say what to fix. The directory stays locked until the
  // cache is destroyed.
  static Result<std::shared_ptr<DiskBlockCache>> Open(const DiskCacheOptions& options);

  // The block's bytes if present, exactly expected_length long and intact; nullopt otherwise.
  virtual std::optional<std::shared_ptr<const ByteBuffer>> Get(const BlockId& id,
                                                               uint64_t expected_length) = 0;
  // A read-only descriptor of the block's file if it holds exactly the block's bytes from
  // offset 0 (BlockLayout::kHeaderInXattr) and they were verified against the checksum just
  // now, so the kernel may read the file directly (FUSE passthrough). nullopt when the
  // block is absent, corrupt (dropped, counted, as in Get) or laid out with the header in
  // the file. A hit counts like Get's.
  virtual std::optional<UniqueFd> OpenVerified(const BlockId& /*id*/,
                                               uint64_t /*expected_length*/) {
    return std::nullopt;
  }
  // The layout new blocks are written in (kAuto resolved at Open).
  virtual BlockLayout layout() const { return BlockLayout::kHeaderInFile; }
  // Stores a copy of the block (asynchronously; may be dropped under pressure).
  virtual void Put(const BlockId& id, std::shared_ptr<const ByteBuffer> data) = 0;
  // Whether the block is indexed (written to disk), without reading or
  // verifying it and without touching its recency: for prefetchers deciding what to skip.
  virtual bool Contains(const BlockId& /*id*/) const { return false; }
  // The size limit (max_size); 0 when unknown.
  virtual uint64_t max_size() const { return 0; }
  // What the cache can hold now: max_size, or less when its file system has less room than
  // that above min_free (bytes held plus the room above the floor, as of the last check of
  // the free space, at most space_check_interval old). max_size() when unknown.
  virtual uint64_t capacity() const { return max_size(); }
  // Waits until queued writes are on disk (tests, shutdown).
  virtual void Flush() = 0;
  virtual DiskCacheStats Stats() const = 0;
};

}  // namespace ossmount::data
