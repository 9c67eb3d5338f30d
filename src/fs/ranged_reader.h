// RangedReader: reads of one open large file, as aligned ranged GETs pinned to one version.
//
// Each miss fetches the whole aligned chunk (chunk_size, 1 MiB by default) around it, with
// If-Match = the etag seen at open, and the last max_chunks chunks are kept so that 128 KiB
// kernel reads cost one GET per chunk, not one each. Concurrent reads that need the same
// chunk share its GET. A read spanning chunks waits for all of them and is copied into one
// buffer; a read inside one chunk points into it (no copy).
//
// Version pinning: a GET answered 412, or a body whose size/etag differs from the pinned
// ones, fails the read with kPreconditionFailed (ESTALE); bytes of two versions are never
// mixed. Failed chunks are not kept, so a later read retries.
//
// This is the simple placeholder for proper readahead (src/prefetch); it is its own class so
// that it can be replaced without touching the filesystem.
//
// Ownership: create with std::make_shared; in-flight GETs keep it alive.
// Thread-safety: Read may be called concurrently; mu_ is a leaf lock.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fs/filesystem.h"
#include "ossmount/object_client.h"

namespace ossmount::fs {

class RangedReader : public std::enable_shared_from_this<RangedReader> {
 public:
  struct Options {
    uint64_t chunk_size = 1ull << 20;
    size_t max_chunks = 4;
  };

  RangedReader(boost::asio::io_context& io, std::shared_ptr<ObjectClient> client, std::string key,
               uint64_t size, std::string etag, Options options);

  // Up to `size` bytes at `offset` (fewer only at the end of the object); `done` is always
  // called asynchronously.
  void Read(uint64_t offset, size_t size, Callback<ReadReply> done);

  size_t cached_chunks() const;

 private:
  struct Chunk {
    uint64_t index = 0;
    bool ready = false;
    Status status;
    std::shared_ptr<std::vector<char>> data;
    std::vector<std::function<void()>> waiters;
    uint64_t last_use = 0;
  };
  struct Gather;

  void StartFetch(std::shared_ptr<Chunk> chunk);
  void OnFetched(const std::shared_ptr<Chunk>& chunk, Status status);
  static void Assemble(const std::shared_ptr<Gather>& gather);

  boost::asio::io_context& io_;
  std::shared_ptr<ObjectClient> client_;
  const std::string key_;
  const uint64_t size_;
  const std::string etag_;
  const Options options_;
  // mu_ guards chunks_ and tick_, and the ready/status/waiters/last_use of every Chunk.
  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<Chunk>> chunks_;
  uint64_t tick_ = 0;
};

}  // namespace ossmount::fs
