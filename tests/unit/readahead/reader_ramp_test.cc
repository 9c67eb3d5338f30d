// SequentialReader: a read() the kernel sends in growing requests (its readahead ramp) gets
// one piece fetched by several GETs at once, sized by what the last such piece served.
#include "reader_harness.h"

using namespace readaheadtest;

namespace {

// The kernel's requests for a read() of `record` bytes at `at` after a 4 KiB header read:
// 16 KiB, then 64 KiB, doubling up to 1 MiB. Checks every byte.
void ReadRecord(Harness& h, SequentialReader& reader, const std::string& data, uint64_t at,
                uint64_t record) {
  (void)h;
  uint64_t off = at, size = 16 * KiB;
  while (off < at + record) {
    const uint64_t n = std::min(size, at + record - off);
    auto r = Harness::Read(reader, off, n);
    REQUIRE(r.ok());
    REQUIRE(*r == data.substr(off, n));
    off += n;
    size = size == 16 * KiB ? 64 * KiB : std::min<uint64_t>(size * 2, 1 * MiB);
  }
}

uint64_t Bytes(const std::vector<RequestRecord>& log, size_t from) {
  uint64_t bytes = 0;
  for (size_t i = from; i < log.size(); ++i) bytes += log[i].length.value_or(0);
  return bytes;
}

}  // namespace

TEST_CASE("A ramping read of a record fetches a whole part at once, as parallel GETs") {
  Harness h;
  const std::string data = Content(64 * MiB, 71);
  h.fake->PutObject("big", data);
  auto reader = h.Open("big", ReaderOptions{});  // the daemon's defaults: 8 MiB parts
  const uint64_t at = 20 * MiB + 3;
  ReadRecord(h, *reader, data, at, 4 * MiB);
  const auto log = h.fake->requests();
  // The first request exactly (a random read), then one piece of a part from the second,
  // as 8 GETs of 1 MiB: every later request of the record was in it.
  REQUIRE(log.size() == 9);
  CHECK(log[0].offset == at);
  CHECK(*log[0].length == 16 * KiB);
  for (size_t i = 1; i < 9; ++i) {
    INFO("GET " << i);
    CHECK(log[i].offset == at + 16 * KiB + (i - 1) * MiB);
    CHECK(*log[i].length == 1 * MiB);
    CHECK(log[i].priority == Priority::kForeground);
  }
  CHECK(reader->stats().window == 0);  // a record, not a reader of the file
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}

TEST_CASE("Later ramping records get a quarter more than the last record's piece served") {
  Harness h;
  const std::string data = Content(96 * MiB, 72);
  h.fake->PutObject("big", data);
  auto reader = h.Open("big", ReaderOptions{});
  ReadRecord(h, *reader, data, 10 * MiB + 1, 4 * MiB);

  // The last piece served 4 MiB - 16 KiB: the next is 5 MiB (in 64 KiB steps), 5 GETs.
  size_t before = h.fake->requests().size();
  ReadRecord(h, *reader, data, 40 * MiB + 5, 4 * MiB);
  auto log = h.fake->requests();
  REQUIRE(log.size() == before + 6);
  CHECK(*log[before].length == 16 * KiB);
  CHECK(Bytes(log, before + 1) == 5 * MiB);

  // A record of 100 KB then (a zip of images read at random) costs its piece of 5 MiB once;
  // the one after it gets a piece of a quarter more than the 84 KB it served.
  ReadRecord(h, *reader, data, 60 * MiB + 9, 100 * 1000);
  before = h.fake->requests().size();
  ReadRecord(h, *reader, data, 80 * MiB + 11, 100 * 1000);
  log = h.fake->requests();
  REQUIRE(log.size() == before + 2);
  CHECK(*log[before].length == 16 * KiB);
  CHECK(*log[before + 1].length == 128 * KiB);
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}

TEST_CASE("A read of a split piece waits only for its own GETs' bytes") {
  Harness h;
  const std::string data = Content(64 * MiB, 73);
  h.fake->PutObject("big", data);
  auto reader = h.Open("big", ReaderOptions{});
  const uint64_t at = 30 * MiB;
  REQUIRE(Harness::Read(*reader, at, 16 * KiB).ok());
  // Every GET sends its first 128 KiB and then waits: the piece's first bytes answer the
  // ramp's first read, and a read in the middle of the piece is not answered yet.
  h.fake->set_early_bytes(128 * KiB);
  h.fake->Pause();
  auto first = StartRead(*reader, at + 16 * KiB, 64 * KiB);
  ExpectBytes(first, data, at + 16 * KiB);
  auto middle = StartRead(*reader, at + 16 * KiB + 3 * MiB, 64 * KiB);
  CHECK_FALSE(Answered(middle, 200ms));
  h.fake->Resume();
  ExpectBytes(middle, data, at + 16 * KiB + 3 * MiB);
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}

TEST_CASE("A split piece whose GETs fail fails the reads waiting for it, and lets go of them") {
  Harness h;
  const std::string data = Content(64 * MiB, 74);
  h.fake->PutObject("big", data);
  auto reader = h.Open("big", ReaderOptions{});
  const uint64_t at = 30 * MiB;
  REQUIRE(Harness::Read(*reader, at, 16 * KiB).ok());
  h.fake->set_early_bytes(256 * KiB, /*then_fail=*/true);
  h.fake->Pause();
  auto early = StartRead(*reader, at + 16 * KiB, 64 * KiB);  // within the first bytes
  ExpectBytes(early, data, at + 16 * KiB);
  auto late = StartRead(*reader, at + 16 * KiB + 2 * MiB, 1 * MiB);
  CHECK_FALSE(Answered(late, 200ms));
  h.fake->Resume();
  REQUIRE(Answered(late, 60s));
  auto failed = late.get();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == ErrorCode::kNetwork);
  REQUIRE(Eventually([&] { return h.fake->in_flight() == 0; }));
  // Nothing of the failed piece is kept: reading again fetches again, and gets every byte.
  h.fake->set_early_bytes(0);
  auto again = Harness::Read(*reader, at + 16 * KiB + 2 * MiB, 1 * MiB);
  REQUIRE(again.ok());
  CHECK(*again == data.substr(at + 16 * KiB + 2 * MiB, 1 * MiB));
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}
