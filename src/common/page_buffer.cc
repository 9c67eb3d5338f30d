#include "common/page_buffer.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace ossmount {
namespace {

constexpr size_t kHugePage = 2u << 20;

// Buffers of at least one huge page filled at once are mapped 2 MiB aligned and marked
// MADV_HUGEPAGE: filling an 8 MiB part then takes 4 page faults instead of 2,048 (page
// faults, page zeroing and unmapping were the largest cost of a sequential read, measured
// with perf). Where transparent huge pages are off the advice is ignored and ordinary pages
// are used.
char* MapAligned(size_t size, bool huge, size_t* mapped_size) {
  if (size < kHugePage || !huge) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    *mapped_size = size;
    return static_cast<char*>(p);
  }
  const size_t rounded = (size + kHugePage - 1) / kHugePage * kHugePage;
  const size_t span = rounded + kHugePage;
  void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  // Give back the unaligned head and the unused tail.
  if (aligned > base) munmap(p, aligned - base);
  const uintptr_t tail = aligned + rounded;
  if (base + span > tail) munmap(reinterpret_cast<void*>(tail), base + span - tail);
  madvise(reinterpret_cast<void*>(aligned), rounded, MADV_HUGEPAGE);
  *mapped_size = rounded;
  return reinterpret_cast<char*>(aligned);
}

// Mappings of freed buffers kept for reuse: a recycled buffer costs neither page faults
// nor the kernel zeroing fresh pages (the other half of the cost above). Only huge-page
// sized buffers are kept, and at most Limit() bytes of them; their bytes are stale data of
// earlier objects, which is safe because a part is served only after its GET filled it.
class MappingPool {
 public:
  static MappingPool& Instance() {
    static MappingPool* pool = new MappingPool();  // never destroyed: buffers may be freed at exit
    return *pool;
  }
  char* Take(size_t mapped_size) {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].size == mapped_size) {
        char* p = free_[i].data;
        free_[i] = free_.back();
        free_.pop_back();
        bytes_ -= mapped_size;
        return p;
      }
    }
    return nullptr;
  }
  // True when the pool kept the mapping.
  bool Give(char* data, size_t mapped_size) {
    std::lock_guard lock(mu_);
    if (mapped_size < kHugePage || bytes_ + mapped_size > limit_.load()) return false;
    free_.push_back({data, mapped_size});
    bytes_ += mapped_size;
    return true;
  }
  void SetLimit(size_t bytes) {
    std::vector<Free> dropped;
    {
      std::lock_guard lock(mu_);
      limit_ = bytes;
      while (bytes_ > bytes && !free_.empty()) {
        bytes_ -= free_.back().size;
        dropped.push_back(free_.back());
        free_.pop_back();
      }
    }
    for (const Free& f : dropped) munmap(f.data, f.size);
  }
  size_t bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
  }

 private:
  struct Free {
    char* data;
    size_t size;
  };
  mutable std::mutex mu_;  // leaf lock
  std::vector<Free> free_;
  size_t bytes_ = 0;
  std::atomic<size_t> limit_{PageBuffer::kDefaultPoolLimit};
};

}  // namespace

std::unique_ptr<PageBuffer> PageBuffer::Allocate(size_t size, Fill fill) {
  if (size == 0) return nullptr;
  const bool at_once = fill == Fill::kAtOnce;
  size_t mapped = size;
  if (at_once && size >= kHugePage) {
    mapped = (size + kHugePage - 1) / kHugePage * kHugePage;
    if (char* p = MappingPool::Instance().Take(mapped)) {
      return std::unique_ptr<PageBuffer>(new PageBuffer(p, size, mapped, true));
    }
  }
  char* p = MapAligned(size, /*huge=*/at_once, &mapped);
  if (p == nullptr) return nullptr;
  return std::unique_ptr<PageBuffer>(new PageBuffer(p, size, mapped, at_once));
}

PageBuffer::~PageBuffer() {
  if (!pooled_ || !MappingPool::Instance().Give(data_, mapped_size_)) munmap(data_, mapped_size_);
}

void PageBuffer::SetPoolLimit(size_t bytes) { MappingPool::Instance().SetLimit(bytes); }

size_t PageBuffer::PooledBytes() { return MappingPool::Instance().bytes(); }

}  // namespace ossmount
