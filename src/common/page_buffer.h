// PageBuffer: memory for one part, mapped straight from the kernel (anonymous mmap) and
// unmapped when destroyed.
//
// Why not std::vector: glibc raises its mmap threshold to the size of the largest block
// freed (up to 32 MiB), after which multi-MiB part buffers come from the heap arenas of
// whichever thread allocated them and are not returned to the system when freed; with many
// readers the process then keeps far more resident memory than the MemoryBudget accounts
// (measured: 2-3x with 16 readers). Mapped buffers give their pages back on release, so RSS
// follows the budget. Buffers of 2 MiB and more use transparent huge pages where the
// kernel offers them, and freed ones are recycled through a small pool (see page_buffer.cc)
// instead of being zeroed afresh by the kernel.
//
// Thread-safety: a buffer has one owner and its bytes are shared read-only once filled;
// Allocate, the destructor and the pool functions may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>

namespace ossmount {

class PageBuffer {
 public:
  // nullptr if the kernel refuses the mapping (the caller falls back to the heap).
  static std::unique_ptr<PageBuffer> Allocate(size_t size);
  ~PageBuffer();
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  // Freed buffers of 2 MiB and more are kept for reuse up to this many bytes in all, process
  // wide (they are resident memory outside the MemoryBudget: callers keep it small next to
  // the budget). 0 = unmap every buffer at once.
  static constexpr size_t kDefaultPoolLimit = 32u << 20;
  static void SetPoolLimit(size_t bytes);
  static size_t PooledBytes();

  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  PageBuffer(char* data, size_t size, size_t mapped_size)
      : data_(data), size_(size), mapped_size_(mapped_size) {}
  char* data_;
  size_t size_;
  size_t mapped_size_;  // size_ rounded up to whole huge pages when they are used
};

}  // namespace ossmount
