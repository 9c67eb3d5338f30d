// MemoryBudget: one limit on all the data buffers the daemon holds (whole small objects,
// readahead parts, chunks being filled), so the process does not grow under load
// (--max-memory, the connector's prefetchMB).
//
// Two kinds of callers:
//   - on-demand reads (a reader is waiting) Reserve() and always get their bytes, even past
//     the limit, so a read never fails or waits because of prefetch;
//   - readahead and dataset prefetch TryReserve() and take "no" for an answer: under
//     pressure their windows shrink instead of the process growing.
// The overshoot from on-demand reads is bounded by what readers ask for at once.
//
// Thread-safety: all methods are lock-free and may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace ossmount::data {

class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}

  // For on-demand reads: always succeeds.
  void Reserve(uint64_t bytes) { used_.fetch_add(bytes, std::memory_order_relaxed); }
  // For prefetch: reserves only if the total stays within the limit.
  bool TryReserve(uint64_t bytes) {
    uint64_t cur = used_.load(std::memory_order_relaxed);
    while (cur + bytes <= limit_) {
      if (used_.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed)) return true;
    }
    return false;
  }
  void Release(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }
  uint64_t available() const {
    uint64_t u = used();
    return u >= limit_ ? 0 : limit_ - u;
  }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

// Move-only holder of reserved bytes; releases them when destroyed. Attach one to each
// buffer (e.g. capture it in the buffer's deleter) so the accounting follows the memory.
class Reservation {
 public:
  Reservation() = default;
  Reservation(std::shared_ptr<MemoryBudget> budget, uint64_t bytes)
      : budget_(std::move(budget)), bytes_(bytes) {}
  Reservation(Reservation&& o) noexcept : budget_(std::move(o.budget_)), bytes_(o.bytes_) {
    o.bytes_ = 0;
  }
  Reservation& operator=(Reservation&& o) noexcept {
    if (this != &o) {
      reset();
      budget_ = std::move(o.budget_);
      bytes_ = o.bytes_;
      o.bytes_ = 0;
    }
    return *this;
  }
  ~Reservation() { reset(); }
  void reset() {
    if (budget_ && bytes_) budget_->Release(bytes_);
    bytes_ = 0;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<MemoryBudget> budget_;
  uint64_t bytes_ = 0;
};

}  // namespace ossmount::data
