// PartSizeFor: the part-size schedule of a multipart upload.
#include <catch2/catch.hpp>

#include <cstdint>

#include "support/byte_units.h"
#include "upload/upload_options.h"

using ossmount::testing::MiB;
using ossmount::upload::PartSizeFor;

TEST_CASE("PartSizeFor: the base for parts 1..1000, doubling every 1,000 parts after") {
  struct Row {
    int part;
    uint64_t base;
    uint64_t expected;
  };
  const Row rows[] = {
      {1, 8 * MiB, 8 * MiB},       {2, 8 * MiB, 8 * MiB},          {1000, 8 * MiB, 8 * MiB},
      {1001, 8 * MiB, 16 * MiB},   {2000, 8 * MiB, 16 * MiB},      {2001, 8 * MiB, 32 * MiB},
      {3001, 8 * MiB, 64 * MiB},   {9001, 8 * MiB, 4096 * MiB},    {10000, 8 * MiB, 4096 * MiB},
      {1, 100 * 1024, 100 * 1024}, {1001, 100 * 1024, 200 * 1024}, {5001, 100 * 1024, 3200 * 1024},
  };
  for (const Row& r : rows) {
    INFO("part " << r.part << " of base " << r.base);
    CHECK(PartSizeFor(r.part, r.base) == r.expected);
  }
}

TEST_CASE("PartSizeFor: never more than the service's 5 GiB part limit, never 0") {
  const uint64_t kFiveGiB = 5ull << 30;
  CHECK(PartSizeFor(1, 5ull << 30) == kFiveGiB);
  CHECK(PartSizeFor(1, 6ull << 30) == kFiveGiB);
  CHECK(PartSizeFor(1001, 3ull << 30) == kFiveGiB);    // 6 GiB capped
  CHECK(PartSizeFor(10000, 64 * MiB) == kFiveGiB);     // 32 GiB capped
  CHECK(PartSizeFor(2001, 1ull << 30) == 4ull << 30);  // below the cap: kept
  CHECK(PartSizeFor(1, 0) == 1);
  CHECK(PartSizeFor(1001, 0) == 2);
}

TEST_CASE("PartSizeFor: 10,000 parts of the default 8 MiB schedule hold about 8 TiB") {
  uint64_t total = 0;
  uint64_t previous = 0;
  for (int part = 1; part <= 10000; ++part) {
    const uint64_t size = PartSizeFor(part, 8 * MiB);
    CHECK(size >= previous);  // sizes never shrink
    previous = size;
    total += size;
  }
  CHECK(total == 1000ull * 8 * MiB * 1023);  // 1000 x (1 + 2 + ... + 512) x 8 MiB
  CHECK(total > (7ull << 40));
}
