#include "prefetch/page_buffer.h"

#include <sys/mman.h>

namespace ossmount::prefetch {

std::unique_ptr<PageBuffer> PageBuffer::Allocate(size_t size) {
  if (size == 0) return nullptr;
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  return std::unique_ptr<PageBuffer>(new PageBuffer(static_cast<char*>(p), size));
}

PageBuffer::~PageBuffer() { munmap(data_, size_); }

}  // namespace ossmount::prefetch
