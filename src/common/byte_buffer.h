// ByteBuffer: a std::vector<char> whose new elements are left uninitialized.
//
// For buffers that are filled right after they are sized (a GET body, a disk-cache block
// read, a part assembled from others): std::vector<char>(n) would zero every byte first,
// which showed in the profile of cached epochs and of sequential reads (8 MiB parts).
// Its memory comes from BufferRecycler, so a buffer of a small file's size reuses one freed
// before instead of page-faulting fresh memory in.
// Everything else about it is std::vector: same interface, same ownership.
#pragma once

#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "common/buffer_recycler.h"

namespace ossmount {

template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() noexcept = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}

  T* allocate(size_t n) { return static_cast<T*>(BufferRecycler::Allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { BufferRecycler::Release(p, n * sizeof(T)); }

  // Value-initialization (what resize(n) asks for) becomes default-initialization.
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

using ByteBuffer = std::vector<char, UninitializedAllocator<char>>;

}  // namespace ossmount
