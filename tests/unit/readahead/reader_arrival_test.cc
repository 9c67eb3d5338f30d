// SequentialReader: reads answered from bytes that arrived while their GET still runs
// (GetTarget::on_arrival), and what happens when such a GET fails afterwards.
#include "reader_harness.h"

using namespace readaheadtest;

TEST_CASE("A read is answered once its own bytes have arrived, before its part's GET completes") {
  Harness h;
  const std::string data = Content(16 * MiB, 61);
  h.fake->PutObject("big", data);
  h.fake->set_early_bytes(256 * KiB);
  h.fake->Pause();  // no GET completes until Resume()
  ReaderOptions o;  // the daemon's defaults: 8 MiB parts
  auto reader = h.Open("big", o);

  auto first = StartRead(*reader, 0, 128 * KiB);
  REQUIRE(Answered(first, 60s));
  auto r = first.get();
  REQUIRE(r.ok());
  CHECK(std::string(r->data, r->size) == data.substr(0, 128 * KiB));
  CHECK(h.fake->in_flight() >= 1);  // the part's GET has not completed

  auto second = StartRead(*reader, 128 * KiB, 128 * KiB);
  REQUIRE(Answered(second, 60s));
  auto r2 = second.get();
  REQUIRE(r2.ok());
  CHECK(std::string(r2->data, r2->size) == data.substr(128 * KiB, 128 * KiB));
  CHECK(r2->owner == r->owner);  // both point into the part's buffer

  // Bytes past those that arrived wait for them: no reply before the GET goes on.
  auto third = StartRead(*reader, 256 * KiB, 128 * KiB);
  CHECK_FALSE(Answered(third, 200ms));
  CHECK(h.fake->count(Op::kGet) == 1);  // the read waits for the part, it asks for nothing
  h.fake->Resume();
  REQUIRE(Answered(third, 60s));
  auto r3 = third.get();
  REQUIRE(r3.ok());
  CHECK(std::string(r3->data, r3->size) == data.substr(256 * KiB, 128 * KiB));
  // The early bytes were not written again: what the first reply points at is unchanged.
  CHECK(std::string(r->data, r->size) == data.substr(0, 128 * KiB));
  reader->Close();
  CHECK(Eventually([&] { return h.fake->in_flight() == 0; }));
}

TEST_CASE("A short run's new piece answers its first read as soon as those bytes arrive") {
  Harness h;
  const std::string data = Content(64 * MiB, 62);
  h.fake->PutObject("big", data);
  auto reader = h.Open("big", ReaderOptions{});
  // A run from the middle of the file: its reads fetch pieces as long as the run so far.
  uint64_t at = 20 * MiB;
  for (int i = 0; i < 8; ++i, at += 128 * KiB) {
    auto r = Harness::Read(*reader, at, 128 * KiB);
    REQUIRE(r.ok());
  }
  h.fake->set_early_bytes(128 * KiB);
  h.fake->Pause();
  // Read on until a read goes past the run's last piece and starts a new one (no GET
  // completes now): that read is answered from the new piece's first bytes.
  bool new_piece = false;
  for (int i = 0; i < 16 && !new_piece; ++i, at += 128 * KiB) {
    const uint64_t gets = h.fake->count(Op::kGet);
    auto next = StartRead(*reader, at, 128 * KiB);
    REQUIRE(Answered(next, 60s));
    auto r = next.get();
    REQUIRE(r.ok());
    CHECK(std::string(r->data, r->size) == data.substr(at, 128 * KiB));
    if (h.fake->count(Op::kGet) == gets) continue;  // answered by a piece already here
    new_piece = true;
    // A piece, not just the read (from 2 MiB on, several GETs at once: the first from `at`).
    auto requests = h.fake->requests();
    REQUIRE(requests.size() > gets);
    CHECK(requests[gets].offset == at);
    uint64_t piece = 0;
    for (size_t i = gets; i < requests.size(); ++i) piece += requests[i].length.value_or(0);
    CHECK(piece > 128 * KiB);
  }
  CHECK(new_piece);
  h.fake->Resume();
  reader->Close();
  CHECK(Eventually([&] { return h.fake->in_flight() == 0; }));
}

TEST_CASE(
    "When a GET fails after some of its bytes arrived, reads of those bytes keep them and reads "
    "waiting for the rest get the error") {
  Harness h;
  const std::string data = Content(16 * MiB, 63);
  h.fake->PutObject("big", data);
  h.fake->set_early_bytes(256 * KiB, /*then_fail=*/true);
  h.fake->Pause();
  auto reader = h.Open("big", ReaderOptions{});

  auto early = StartRead(*reader, 0, 64 * KiB);
  REQUIRE(Answered(early, 60s));
  auto kept = early.get();  // holds its owner: the bytes must outlive the part
  REQUIRE(kept.ok());
  auto waiting = StartRead(*reader, 64 * KiB, 512 * KiB);  // needs bytes that never come
  CHECK_FALSE(Answered(waiting, 200ms));
  h.fake->Resume();
  REQUIRE(Answered(waiting, 60s));
  auto failed = waiting.get();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == ErrorCode::kNetwork);
  REQUIRE(Eventually([&] { return h.fake->in_flight() == 0; }));
  // The failed part let go of its buffer; the early reply still holds the right bytes.
  CHECK(std::string(kept->data, kept->size) == data.substr(0, 64 * KiB));

  // A failed part is not kept: the next read fetches again, and gets every byte.
  h.fake->set_early_bytes(0);
  auto again = Harness::Read(*reader, 64 * KiB, 512 * KiB);
  REQUIRE(again.ok());
  CHECK(*again == data.substr(64 * KiB, 512 * KiB));
  kept = Status(ErrorCode::kCancelled, "released");
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0 && h.fake->in_flight() == 0; }));
}
