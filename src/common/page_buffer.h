// PageBuffer: memory for one part (a readahead part, an upload part), mapped straight from
// the kernel (anonymous mmap) and unmapped when destroyed.
//
// Why not std::vector: glibc raises its mmap threshold to the size of the largest block
// freed (up to 32 MiB), after which multi-MiB part buffers come from the heap arenas of
// whichever thread allocated them and are not returned to the system when freed; with many
// readers or writers the process then keeps far more resident memory than the MemoryBudget
// accounts (measured: 2-3x with 16 readers). Mapped buffers give their pages back on
// release, so RSS follows the budget. Buffers of 2 MiB and more that are filled at once use
// transparent huge pages where the kernel offers them, and freed ones are recycled through a
// small pool (see page_buffer.cc) instead of being zeroed afresh by the kernel.
//
// Thread-safety: a buffer has one owner and its bytes are shared read-only once filled;
// Allocate, the destructor and the pool functions may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>

namespace ossmount {

class PageBuffer {
 public:
  // How a buffer is filled, which decides its pages.
  //   kAtOnce: straight after it is allocated (a readahead part, by its GET). Huge pages
  //     and the pool, as above: its bytes soon cover all of it anyway.
  //   kOverTime: bit by bit, many buffers at once (upload parts, by writers' write()
  //     calls). Ordinary pages, never pooled, so that its resident memory is what was
  //     written: a recycled buffer is resident whole from the start, and a huge page as soon
  //     as one byte of it is written. 64 writers under a 256 MiB budget (mount:writes) peaked
  //     at 451 MiB of RSS with pooled parts and 372 MiB with huge pages, against 315 MiB so.
  enum class Fill { kAtOnce, kOverTime };

  // nullptr if the kernel refuses the mapping (the caller falls back to the heap).
  static std::unique_ptr<PageBuffer> Allocate(size_t size, Fill fill = Fill::kAtOnce);
  ~PageBuffer();
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  // Freed kAtOnce buffers of 2 MiB and more are kept for reuse up to this many bytes in
  // all, process wide (they are resident memory outside the MemoryBudget: callers keep it
  // small next to the budget). 0 = unmap every buffer at once.
  static constexpr size_t kDefaultPoolLimit = 32u << 20;
  static void SetPoolLimit(size_t bytes);
  static size_t PooledBytes();

  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  PageBuffer(char* data, size_t size, size_t mapped_size, bool pooled)
      : data_(data), size_(size), mapped_size_(mapped_size), pooled_(pooled) {}
  char* data_;
  size_t size_;
  size_t mapped_size_;  // size_ rounded up to whole huge pages when they are used
  bool pooled_;         // Fill::kAtOnce: returned to the pool when freed, if it has room
};

}  // namespace ossmount
