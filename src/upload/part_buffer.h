// PartBuffer: the bytes of one part of an upload, appended in order up to the part's size
// and then sent as they are: Share() hands them to UploadPart or PutObject as SharedBytes,
// with no copy, and the transfer keeps the buffer alive until it ends.
//
// Where the bytes live. A part of a file past its first part is a PageBuffer of the whole
// part size (an anonymous mapping, common/page_buffer.h, filled over time): its pages are
// touched only as bytes arrive and go back to the system when the part is freed. On the heap,
// glibc would keep freed multi-MiB parts resident once its mmap threshold has risen, and the
// daemon's RSS would outgrow what the MemoryBudget counts. A first part starts on the heap
// and grows with the file, so a small file holds about what it wrote; past kHeapLimit it moves
// into a mapping (one copy of at most kHeapLimit bytes). Where the kernel refuses a mapping,
// the heap is used.
//
// Thread-safety: none; the owner serialises Appends (ObjectUpload::mu_). Once shared, the
// bytes shared are not changed: Appends only add after them, and only once nothing sends
// them any more (a completed object continued).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/page_buffer.h"
#include "ossmount/transfer.h"

namespace ossmount::upload {

class PartBuffer {
 public:
  // The most bytes a growing (first) part keeps on the heap: enough for small files, whose
  // whole bytes a PutObject sends. With 1 MiB, 16 writers under a 256 MiB budget peaked 5 MiB
  // higher (303 against 298 MiB of RSS): the arenas keep the blocks a part grew out of.
  static constexpr size_t kHeapLimit = 256u << 10;

  // A buffer for a part of `capacity` bytes; `grows`: a first part, on the heap until it
  // passes kHeapLimit.
  PartBuffer(size_t capacity, bool grows);
  PartBuffer(const PartBuffer&) = delete;
  PartBuffer& operator=(const PartBuffer&) = delete;

  // Copies `n` bytes after the others. REQUIRES: size() + n <= capacity().
  void Append(const char* data, size_t n);

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return std::string_view(data(), size_); }
  // Whether the bytes are in a mapping (a PageBuffer), not on the heap.
  bool mapped() const { return pages_ != nullptr; }

  // The bytes, keeping `buffer` alive while any copy of the result is held.
  static SharedBytes Share(std::shared_ptr<const PartBuffer> buffer);

 private:
  const char* data() const { return pages_ ? pages_->data() : heap_.data(); }
  // Moves the bytes into a PageBuffer of capacity(); stays on the heap if none is mapped.
  void TryMap();

  const size_t capacity_;
  size_t size_ = 0;
  std::unique_ptr<PageBuffer> pages_;
  std::string heap_;  // the bytes while pages_ is null
};

}  // namespace ossmount::upload
