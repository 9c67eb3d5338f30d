// FetchSlots: a counter of readahead GETs in flight across all open files, so the sum of
// every file's window never exceeds global_concurrency requests (--prefetch-concurrency).
//
// Non-blocking: a reader that gets no slot simply prefetches less now and tops up on its
// next read or part completion. Reads a reader waits for never take a slot (on-demand reads
// always outrank prefetch).
//
// Thread-safety: lock-free, any thread. Shared by std::shared_ptr between readers.
#pragma once

#include <atomic>

namespace ossmount::readahead {

class FetchSlots {
 public:
  explicit FetchSlots(int limit) : limit_(limit < 1 ? 1 : limit) {}

  bool TryAcquire() {
    int cur = used_.load(std::memory_order_relaxed);
    while (cur < limit_) {
      if (used_.compare_exchange_weak(cur, cur + 1, std::memory_order_relaxed)) {
        int max = max_used_.load(std::memory_order_relaxed);
        while (cur + 1 > max && !max_used_.compare_exchange_weak(max, cur + 1)) {
        }
        return true;
      }
    }
    return false;
  }
  void Release() { used_.fetch_sub(1, std::memory_order_relaxed); }

  int in_use() const { return used_.load(std::memory_order_relaxed); }
  int max_in_use() const { return max_used_.load(std::memory_order_relaxed); }
  int limit() const { return limit_; }

 private:
  const int limit_;
  std::atomic<int> used_{0};
  std::atomic<int> max_used_{0};
};

}  // namespace ossmount::readahead
