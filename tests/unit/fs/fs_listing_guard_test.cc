// Listings end whatever the server answers: repeating continuation tokens (any period) and
// listings past --max-list-pages fail with EIO, for directory listings, list-ahead and
// warm-up's recursive listings alike (ListingGuard).
#include "fs/listing_guard.h"
#include "fs_harness.h"

namespace fstest {
namespace {

ListPage Page(bool truncated, std::string token) {
  ListPage p;
  p.truncated = truncated;
  p.next_continuation_token = std::move(token);
  return p;
}

}  // namespace

TEST_CASE("ListingGuard: a token seen before ends the listing, whatever the period") {
  for (int period : {1, 2, 3, 7}) {
    ListingGuard guard("data/", 1000);
    // Pages 1..period hand out new tokens t0..t(period-1); the next one repeats t0.
    for (int i = 0; i < period; ++i) {
      REQUIRE(guard.Follow(Page(true, "t" + std::to_string(i))).ok());
    }
    Status s = guard.Follow(Page(true, "t0"));
    CHECK(s.code() == ErrorCode::kProtocol);
    CHECK(s.ToErrno() == EIO);
    CHECK(s.message().find("listing 'data/'") != std::string::npos);
    CHECK(s.message().find("repeats a continuation token") != std::string::npos);
    CHECK(guard.pages() == period + 1);
  }
}

TEST_CASE("ListingGuard: a truncated page without a token, and the page cap, end the listing") {
  ListingGuard no_token("a/", 10);
  Status s = no_token.Follow(Page(true, ""));
  CHECK(s.code() == ErrorCode::kProtocol);
  CHECK(s.message().find("no continuation token") != std::string::npos);

  ListingGuard capped("b/", 3);
  CHECK(capped.Follow(Page(true, "x1")).ok());
  CHECK(capped.Follow(Page(true, "x2")).ok());
  s = capped.Follow(Page(true, "x3"));
  CHECK(s.code() == ErrorCode::kProtocol);
  CHECK(s.message().find("goes past 3 pages (--max-list-pages)") != std::string::npos);

  // The last page of a listing is never refused, even at the cap.
  ListingGuard exact("c/", 3);
  CHECK(exact.Follow(Page(true, "y1")).ok());
  CHECK(exact.Follow(Page(true, "y2")).ok());
  CHECK(exact.Follow(Page(false, "")).ok());
}

TEST_CASE("A directory whose listing loops fails with EIO after a bounded number of LISTs") {
  Harness h;
  for (int i = 0; i < 10; ++i) h.fake->PutObject("loop/f" + std::to_string(i), "x");
  h.fake->PutObject("fine/a", "x");
  h.fake->set_page_limit(2);
  h.fake->set_token_cycle(2);  // tokens A, B, A, B, ...
  auto dir = h.Lookup(kRootInode, "loop");
  // The lookup itself may be answered by the root's listing, which loops as well.
  if (dir.ok()) {
    auto listed = h.List(dir->attr.ino);
    REQUIRE_FALSE(listed.ok());
    CHECK(listed.status().ToErrno() == EIO);
    CHECK(listed.status().message().find("repeats a continuation token") != std::string::npos);
  } else {
    CHECK(dir.status().ToErrno() == EIO);
  }
  // Each looping listing stops at its third page; a few listings at most were started.
  CHECK(h.fake->count(Op::kList) <= 12);

  // The same server without the loop: everything lists again (nothing failed was cached).
  h.fake->set_token_cycle(0);
  auto again = h.Lookup(kRootInode, "loop");
  REQUIRE(again.ok());
  auto listed = h.List(again->attr.ino);
  REQUIRE(listed.ok());
  CHECK(listed->size() == 10);
}

TEST_CASE("A directory listing past --max-list-pages fails with EIO, one at the cap lists") {
  FsOptions o = Harness::DefaultOptions();
  o.max_list_pages = 4;
  Harness h(o);
  for (int i = 0; i < 10; ++i) h.fake->PutObject("five/f" + std::to_string(i), "x");
  for (int i = 0; i < 8; ++i) h.fake->PutObject("four/f" + std::to_string(i), "x");
  h.fake->set_page_limit(2);
  auto four = h.Lookup(kRootInode, "four");
  REQUIRE(four.ok());
  auto ok = h.List(four->attr.ino);  // 8 keys, 2 a page: 4 pages
  REQUIRE(ok.ok());
  CHECK(ok->size() == 8);
  auto five = h.Lookup(kRootInode, "five");
  REQUIRE(five.ok());
  auto capped = h.List(five->attr.ino);  // 10 keys: a 5th page would be needed
  REQUIRE_FALSE(capped.ok());
  CHECK(capped.status().ToErrno() == EIO);
  CHECK(capped.status().message().find("goes past 4 pages") != std::string::npos);
}

TEST_CASE("Warm-up's recursive listing stops on a repeating token and fails its job") {
  Harness h;
  for (int i = 0; i < 10; ++i) h.fake->PutObject("w/f" + std::to_string(i), "x");
  h.fake->set_page_limit(2);
  auto prefetcher = h.prefetcher;
  h.fake->set_token_cycle(3);
  const uint64_t lists_before = h.fake->count(Op::kList);
  uint64_t id = prefetcher->StartWarmup({""});
  auto job = [&] {
    for (const auto& j : prefetcher->Status().jobs) {
      if (j.id == id) return j;
    }
    return prefetch::WarmupJobStatus{};
  };
  REQUIRE(Eventually([&] { return job().state == prefetch::JobState::kFailed; }));
  CHECK(job().message.find("repeats a continuation token") != std::string::npos);
  CHECK(h.fake->count(Op::kList) - lists_before == 4);  // pages 1-3 new, page 4 repeats
}

}  // namespace fstest
