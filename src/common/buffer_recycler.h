// BufferRecycler: keeps recently freed small-file-sized buffers for reuse.
//
// Every small file fetched or read from the disk cache gets a fresh buffer of about its size
// (~100 KB for an ImageNet JPEG). glibc gives such a buffer back to the kernel when it is
// freed (the heap top is trimmed above 128 KiB), so the next one page-faults on all of its
// pages: in the profile of a hinted epoch, page faults and malloc were about 15% of the
// daemon's CPU. Keeping freed buffers of 32 KiB..1 MiB (in 16 KiB size classes, at most
// kMaxHeldBytes in all) makes the next allocation of that class a list pop of memory that is
// already mapped.
//
// Promises: Allocate(n) returns memory for at least n bytes; Release(p, n) takes exactly what
// Allocate(n) returned. Sizes outside the range go straight to operator new/delete. At most
// kMaxHeldBytes are held while unused; that memory is outside --max-memory, which only counts
// buffers in use. Thread-safe. Under AddressSanitizer it holds nothing, so use-after-free
// of a buffer is still caught.
#pragma once

#include <cstddef>

namespace ossmount {

class BufferRecycler {
 public:
  static constexpr size_t kMinBytes = 32 << 10;
  static constexpr size_t kMaxBytes = 1 << 20;
  static constexpr size_t kClassBytes = 16 << 10;
  static constexpr size_t kMaxHeldBytes = 32 << 20;

  static void* Allocate(size_t bytes);
  static void Release(void* p, size_t bytes) noexcept;

  // Bytes held for reuse now (tests, metrics).
  static size_t HeldBytes() noexcept;
  // False under AddressSanitizer, where every buffer is freed at once.
  static bool Enabled() noexcept;
};

}  // namespace ossmount
