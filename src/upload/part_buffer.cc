#include "upload/part_buffer.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ossmount::upload {
namespace {

// The first heap block of a growing part; it doubles from there.
constexpr size_t kFirstHeapBytes = 64 << 10;

}  // namespace

PartBuffer::PartBuffer(size_t capacity, bool grows) : capacity_(capacity) {
  // A whole part is mapped at once: its pages are touched, and counted in the budget, only
  // as bytes arrive.
  if (!grows && capacity_ > 0) TryMap();
}

void PartBuffer::TryMap() {
  pages_ = PageBuffer::Allocate(capacity_, PageBuffer::Fill::kOverTime);
  if (pages_ == nullptr) return;
  std::memcpy(pages_->data(), heap_.data(), size_);
  std::string().swap(heap_);
}

void PartBuffer::Append(const char* data, size_t n) {
  if (n == 0) return;
  if (!pages_ && size_ + n > kHeapLimit && heap_.capacity() < size_ + n) TryMap();
  if (pages_) {
    std::memcpy(pages_->data() + size_, data, n);
    size_ += n;
    return;
  }
  if (size_ + n > heap_.capacity()) {
    heap_.reserve(
        std::min(capacity_, std::max({kFirstHeapBytes, heap_.capacity() * 2, size_ + n})));
  }
  heap_.append(data, n);
  size_ += n;
}

SharedBytes PartBuffer::Share(std::shared_ptr<const PartBuffer> buffer) {
  const char* data = buffer->data();
  const size_t size = buffer->size();
  return SharedBytes(std::move(buffer), data, size);
}

}  // namespace ossmount::upload
