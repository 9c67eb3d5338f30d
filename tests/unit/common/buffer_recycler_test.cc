// BufferRecycler: freed buffers of small-file size are reused, within the held-bytes cap;
// other sizes are never held. ByteBuffer draws on it.
#include <catch2/catch.hpp>
#include <vector>

#include "common/buffer_recycler.h"
#include "common/byte_buffer.h"

using ossmount::BufferRecycler;
using ossmount::ByteBuffer;

TEST_CASE("A freed buffer of a small file's size is reused by the next of its size class") {
  const size_t before = BufferRecycler::HeldBytes();
  void* first = BufferRecycler::Allocate(110'000);
  BufferRecycler::Release(first, 110'000);
  if (!BufferRecycler::Enabled()) {
    // Under AddressSanitizer every buffer is freed at once, so use-after-free is caught.
    CHECK(BufferRecycler::HeldBytes() == 0);
    return;
  }
  CHECK(BufferRecycler::HeldBytes() == before + 112 * 1024);  // rounded up to 16 KiB
  void* again = BufferRecycler::Allocate(112 * 1024 - 5);     // same class
  CHECK(again == first);
  CHECK(BufferRecycler::HeldBytes() == before);
  BufferRecycler::Release(again, 112 * 1024 - 5);
}

TEST_CASE("Buffers outside 32 KiB..1 MiB are never held") {
  const size_t before = BufferRecycler::HeldBytes();
  for (size_t bytes : {size_t{100}, size_t{32 << 10} - 1, size_t{1 << 20} + 1, size_t{8 << 20}}) {
    void* p = BufferRecycler::Allocate(bytes);
    BufferRecycler::Release(p, bytes);
    CHECK(BufferRecycler::HeldBytes() == before);
  }
}

TEST_CASE("At most kMaxHeldBytes are held, the rest is freed") {
  std::vector<void*> buffers;
  const size_t n = BufferRecycler::kMaxHeldBytes / BufferRecycler::kMaxBytes + 8;
  for (size_t i = 0; i < n; ++i) buffers.push_back(BufferRecycler::Allocate(1 << 20));
  for (void* p : buffers) BufferRecycler::Release(p, 1 << 20);
  CHECK(BufferRecycler::HeldBytes() <= BufferRecycler::kMaxHeldBytes);
  if (BufferRecycler::Enabled()) CHECK(BufferRecycler::HeldBytes() > 0);
}

TEST_CASE("ByteBuffer memory comes from the recycler and keeps its bytes") {
  const char* data = nullptr;
  {
    ByteBuffer b(200'000);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>(i * 7);
    CHECK(b[199'999] == static_cast<char>(199'999 * 7));
    data = b.data();
  }
  ByteBuffer next(200'000 - 100);  // same 16 KiB class: the buffer just freed
  if (BufferRecycler::Enabled()) CHECK(next.data() == data);
  CHECK(BufferRecycler::HeldBytes() <= BufferRecycler::kMaxHeldBytes);
}
