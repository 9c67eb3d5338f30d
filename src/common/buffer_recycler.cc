#include "common/buffer_recycler.h"

#include <array>
#include <mutex>
#include <new>
#include <vector>

namespace ossmount {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRecycle = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRecycle = false;
#else
constexpr bool kRecycle = true;
#endif
#else
constexpr bool kRecycle = true;
#endif

constexpr size_t kClasses = BufferRecycler::kMaxBytes / BufferRecycler::kClassBytes + 1;

bool Recyclable(size_t bytes) {
  return kRecycle && bytes >= BufferRecycler::kMinBytes && bytes <= BufferRecycler::kMaxBytes;
}

size_t ClassOf(size_t bytes) {
  return (bytes + BufferRecycler::kClassBytes - 1) / BufferRecycler::kClassBytes;
}

struct Pool {
  std::mutex mu;
  std::array<std::vector<void*>, kClasses> free;
  size_t held = 0;
};

// Never destroyed: buffers may be released by threads still running at exit.
Pool& ThePool() {
  static Pool* pool = new Pool;
  return *pool;
}

}  // namespace

void* BufferRecycler::Allocate(size_t bytes) {
  if (!Recyclable(bytes)) return ::operator new(bytes);
  const size_t cls = ClassOf(bytes);
  Pool& pool = ThePool();
  {
    std::lock_guard lock(pool.mu);
    auto& list = pool.free[cls];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      pool.held -= cls * kClassBytes;
      return p;
    }
  }
  return ::operator new(cls* kClassBytes);
}

void BufferRecycler::Release(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (!Recyclable(bytes)) return ::operator delete(p);
  const size_t cls = ClassOf(bytes);
  Pool& pool = ThePool();
  {
    std::lock_guard lock(pool.mu);
    if (pool.held + cls * kClassBytes <= kMaxHeldBytes) {
      try {
        pool.free[cls].push_back(p);
        pool.held += cls * kClassBytes;
        return;
      } catch (...) {
        // No memory for the list entry: free the buffer instead.
      }
    }
  }
  ::operator delete(p);
}

bool BufferRecycler::Enabled() noexcept { return kRecycle; }

size_t BufferRecycler::HeldBytes() noexcept {
  Pool& pool = ThePool();
  std::lock_guard lock(pool.mu);
  return pool.held;
}

}  // namespace ossmount
