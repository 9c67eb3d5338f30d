// BlockWriter: the disk cache's write queue and the threads that drain it, so that a Put
// returns at once.
//
// Enqueue keeps the caller's buffer (shared, never copied) until a writer thread has
// handed it to `write`. The queue is bounded by a count and a byte total of blocks (one
// block is always taken into an empty queue); a block beyond them is refused, never
// waited for, and a block already queued or being written is not queued twice. `write`
// runs on a writer thread with no lock of the writer held, and the buffer is released
// after it returns, also outside the lock (it may be a caller's last reference).
//
// Thread-safety: all methods may be called concurrently. Owns its threads; the destructor
// lets them write every block still queued, then joins them, so `write` must stay
// callable until it returns.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "common/byte_buffer.h"
#include "data/block_file.h"
#include "data/disk_block_cache.h"

namespace ossmount::data {

class BlockWriter {
 public:
  struct Limits {
    size_t max_blocks = 1024;
    uint64_t max_bytes = 256ull << 20;  // data bytes queued
    int threads = 4;                    // at least 1
  };
  using WriteFn =
      std::function<void(const BlockId& id, const BlockDigest& digest, const ByteBuffer& data)>;

  // Starts the threads.
  BlockWriter(const Limits& limits, WriteFn write);
  ~BlockWriter();
  BlockWriter(const BlockWriter&) = delete;
  BlockWriter& operator=(const BlockWriter&) = delete;

  enum class Enqueued {
    kQueued,
    kSkipped,  // queued or being written already, or the writer is stopping
    kFull,     // beyond the limits: not queued
  };
  Enqueued Enqueue(const BlockId& id, const BlockDigest& digest,
                   std::shared_ptr<const ByteBuffer> data);
  // Waits until every block queued so far is written.
  void Flush();
  // Blocks queued or being written.
  size_t pending() const;

 private:
  struct Pending {
    BlockId id;
    BlockDigest digest;
    std::shared_ptr<const ByteBuffer> data;
  };
  void Loop();

  const Limits limits_;
  const WriteFn write_;
  mutable std::mutex mu_;            // guards everything below but threads_
  std::condition_variable work_cv_;  // a block queued, or stop_
  std::condition_variable idle_cv_;  // queue empty and no block being written (Flush)
  std::deque<Pending> queue_;
  std::unordered_set<BlockDigest, BlockDigestHash> queued_;  // queued or being written
  uint64_t queued_bytes_ = 0;                                // data bytes in queue_
  int writing_ = 0;                                          // blocks being written now
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ossmount::data
