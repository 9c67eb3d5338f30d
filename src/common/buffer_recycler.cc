#include "common/buffer_recycler.h"

#include <array>
#include <mutex>
#include <new>

#include "common/sanitizers.h"

namespace ossmount {
namespace {

// Off under AddressSanitizer, so that a use after free is still caught.
constexpr bool kRecycle = !kAddressSanitizer;

constexpr size_t kClasses = BufferRecycler::kMaxBytes / BufferRecycler::kClassBytes + 1;

bool Recyclable(size_t bytes) {
  return kRecycle && bytes >= BufferRecycler::kMinBytes && bytes <= BufferRecycler::kMaxBytes;
}

// The size class's index, and the bytes every buffer of it has.
size_t ClassOf(size_t bytes) {
  return (bytes + BufferRecycler::kClassBytes - 1) / BufferRecycler::kClassBytes;
}
size_t ClassBytes(size_t cls) { return cls * BufferRecycler::kClassBytes; }

// A held buffer stores the link to the next one of its class in its own first bytes, so
// holding one never allocates.
struct FreeBuffer {
  FreeBuffer* next;
};

struct Pool {
  std::mutex mu;
  std::array<FreeBuffer*, kClasses> free{};
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
    if (FreeBuffer* top = pool.free[cls]) {
      pool.free[cls] = top->next;
      pool.held -= ClassBytes(cls);
      return top;
    }
  }
  return ::operator new(ClassBytes(cls));
}

void BufferRecycler::Release(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (Recyclable(bytes)) {
    const size_t cls = ClassOf(bytes);
    Pool& pool = ThePool();
    std::lock_guard lock(pool.mu);
    if (pool.held + ClassBytes(cls) <= kMaxHeldBytes) {
      pool.free[cls] = new (p) FreeBuffer{pool.free[cls]};
      pool.held += ClassBytes(cls);
      return;
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
