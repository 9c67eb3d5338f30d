// PageBuffer: mapped part buffers, recycled through a bounded pool.
#include "common/page_buffer.h"

#include <catch2/catch.hpp>
#include <cstring>

using ossmount::PageBuffer;

TEST_CASE("Freed part buffers are reused up to the pool limit and no further") {
  PageBuffer::SetPoolLimit(0);  // start empty
  PageBuffer::SetPoolLimit(8u << 20);
  auto a = PageBuffer::Allocate(4u << 20);
  REQUIRE(a);
  std::memset(a->data(), 'x', a->size());
  char* const first = a->data();
  a.reset();
  CHECK(PageBuffer::PooledBytes() == (4u << 20));

  auto b = PageBuffer::Allocate(4u << 20);  // the same mapping comes back
  REQUIRE(b);
  CHECK(b->data() == first);
  CHECK(b->size() == (4u << 20));
  CHECK(PageBuffer::PooledBytes() == 0);

  // A different size class is not served from the pool.
  auto c = PageBuffer::Allocate(6u << 20);
  REQUIRE(c);
  CHECK(c->data() != first);

  // Over the limit: 4 + 6 > 8 MiB, so only the first freed buffer is kept.
  b.reset();
  c.reset();
  CHECK(PageBuffer::PooledBytes() == (4u << 20));

  // Small buffers are never pooled.
  auto small = PageBuffer::Allocate(64u << 10);
  REQUIRE(small);
  small.reset();
  CHECK(PageBuffer::PooledBytes() == (4u << 20));

  // Nor buffers filled over time, and they never take a pooled one: its pages are resident.
  PageBuffer::SetPoolLimit(0);
  PageBuffer::SetPoolLimit(8u << 20);
  auto pooled = PageBuffer::Allocate(4u << 20);
  REQUIRE(pooled);
  char* const kept = pooled->data();
  pooled.reset();
  auto slow = PageBuffer::Allocate(4u << 20, PageBuffer::Fill::kOverTime);
  REQUIRE(slow);
  CHECK(slow->data() != kept);
  CHECK(slow->size() == (4u << 20));
  slow.reset();
  CHECK(PageBuffer::PooledBytes() == (4u << 20));

  PageBuffer::SetPoolLimit(0);  // lowering the limit unmaps what no longer fits
  CHECK(PageBuffer::PooledBytes() == 0);
  PageBuffer::SetPoolLimit(PageBuffer::kDefaultPoolLimit);
}

TEST_CASE("A part buffer has exactly the asked size and is writable to its end") {
  for (size_t size : {size_t{1}, size_t{4096}, size_t{(2u << 20) + 1}, size_t{(8u << 20) - 3}}) {
    auto p = PageBuffer::Allocate(size);
    REQUIRE(p);
    CHECK(p->size() == size);
    p->data()[0] = 'a';
    p->data()[size - 1] = 'z';
    CHECK(p->data()[size - 1] == 'z');
  }
  CHECK(PageBuffer::Allocate(0) == nullptr);
}
