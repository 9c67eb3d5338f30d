// PartBuffer: where a part's bytes live (heap while a first part is small, else a mapping),
// and that sending them shares them instead of copying.
#include "upload/part_buffer.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "upload_harness.h"

using namespace uploadtest;

TEST_CASE("A first part grows on the heap, then moves into a mapping with its bytes") {
  PartBuffer part(4 * MiB, /*grows=*/true);
  const std::string data = Bytes(3 * MiB, 7);
  size_t at = 0;
  for (; at + 64 * KiB <= PartBuffer::kHeapLimit; at += 64 * KiB) {
    part.Append(data.data() + at, 64 * KiB);
    CHECK_FALSE(part.mapped());
  }
  part.Append(data.data() + at, data.size() - at);
  CHECK(part.mapped());
  CHECK(part.size() == data.size());
  CHECK(part.view() == data);
}

TEST_CASE("A later part is mapped whole, and sending it shares its bytes and keeps it alive") {
  auto part = std::make_shared<PartBuffer>(2 * MiB, /*grows=*/false);
  CHECK(part->mapped());
  CHECK(part->empty());
  const std::string data = Bytes(MiB + 5, 8);
  part->Append(data.data(), data.size());
  const char* const where = part->view().data();

  SharedBytes body = PartBuffer::Share(part);
  std::weak_ptr<PartBuffer> alive = part;
  part.reset();
  REQUIRE_FALSE(alive.expired());  // the body holds it
  CHECK(body.data() == where);     // no copy
  CHECK(body.view() == data);
  SharedBytes tail = body.Slice(MiB, 100);
  CHECK(tail.view() == data.substr(MiB, 5));
  body = SharedBytes();
  CHECK_FALSE(alive.expired());  // the slice holds it too
  tail = SharedBytes();
  CHECK(alive.expired());
}
