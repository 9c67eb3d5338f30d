// PageBuffer: memory for one part, mapped straight from the kernel (anonymous mmap) and
// unmapped when destroyed.
//
// Why not std::vector: glibc raises its mmap threshold to the size of the largest block
// freed (up to 32 MiB), after which multi-MiB part buffers come from the heap arenas of
// whichever thread allocated them and are not returned to the system when freed; with many
// readers the process then keeps far more resident memory than the MemoryBudget accounts
// (measured: 2-3x with 16 readers). Mapped buffers give their pages back on release, so RSS
// follows the budget.
//
// Thread-safety: none needed (one owner); the bytes are shared read-only once filled.
#pragma once

#include <cstddef>
#include <memory>

namespace ossmount::prefetch {

class PageBuffer {
 public:
  // nullptr if the kernel refuses the mapping (the caller falls back to the heap).
  static std::unique_ptr<PageBuffer> Allocate(size_t size);
  ~PageBuffer();
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  PageBuffer(char* data, size_t size) : data_(data), size_(size) {}
  char* data_;
  size_t size_;
};

}  // namespace ossmount::prefetch
