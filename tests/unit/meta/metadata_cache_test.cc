#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>

#include "meta/metadata_cache.h"

using namespace ossmount::meta;
using namespace std::chrono_literals;

namespace {

struct FakeClock {
  std::shared_ptr<TimePoint> now = std::make_shared<TimePoint>(TimePoint() + 1000h);
  ClockFn fn() const {
    auto p = now;
    return [p]() { return *p; };
  }
  void Advance(std::chrono::milliseconds d) { *now += d; }
};

NodeAttr File(uint64_t size) {
  NodeAttr a;
  a.size = size;
  a.etag = "\"e\"";
  return a;
}

std::shared_ptr<const DirSnapshot> Listing(std::vector<std::string> files) {
  std::vector<DirChild> children;
  for (auto& f : files) children.push_back({f, File(10)});
  return std::make_shared<DirSnapshot>(children);
}

// One name more than a listing WorthRelisting() leaves to probes: 11 pages.
std::vector<std::string> NamesOverRelistMax() {
  std::vector<std::string> names;
  for (size_t i = 0; i <= MetadataCache::kRelistMaxEntries; ++i) {
    names.push_back("f" + std::to_string(100000 + i));
  }
  return names;
}

}  // namespace

TEST_CASE("MetadataCache: positive entries live for the TTL, negative for the negative TTL") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(10s, 2s, clock.fn()));
  cache.PutPresent("a", File(5));
  cache.PutAbsent("b");
  CHECK(cache.Find("a").state == MetadataCache::Answer::kPresent);
  CHECK(cache.Find("a").attr.size == 5);
  CHECK(cache.Find("b").state == MetadataCache::Answer::kAbsent);
  CHECK(cache.Find("c").state == MetadataCache::Answer::kUnknown);
  clock.Advance(1999ms);
  CHECK(cache.Find("b").state == MetadataCache::Answer::kAbsent);
  clock.Advance(1ms);
  CHECK(cache.Find("b").state == MetadataCache::Answer::kUnknown);
  CHECK(cache.Find("a").state == MetadataCache::Answer::kPresent);
  clock.Advance(8s);
  CHECK(cache.Find("a").state == MetadataCache::Answer::kUnknown);
}

TEST_CASE("MetadataCache: TTL 0 never answers, indefinite always does") {
  FakeClock clock;
  MetadataCache zero(TtlPolicy(0ms, 0ms, clock.fn()));
  zero.PutPresent("a", File(1));
  zero.PutListing("", Listing({"x"}));
  CHECK(zero.Find("a").state == MetadataCache::Answer::kUnknown);
  CHECK(zero.Find("x").state == MetadataCache::Answer::kUnknown);
  CHECK(zero.FreshListing("") == nullptr);
  CHECK(zero.ttl().KernelTimeout() == 0);

  MetadataCache forever(TtlPolicy(std::nullopt, 5s, clock.fn()));
  forever.PutPresent("a", File(1));
  clock.Advance(24h * 365 * 10);
  CHECK(forever.Find("a").state == MetadataCache::Answer::kPresent);
  CHECK(forever.ttl().indefinite());
  CHECK(forever.ttl().KernelTimeout() == kIndefiniteKernelTimeout);

  MetadataCache sixty(TtlPolicy(60s, 5s, clock.fn()));
  CHECK(sixty.ttl().KernelTimeout() == 60);
}

TEST_CASE("MetadataCache: a fresh listing answers every name of its directory") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(10s, 1s, clock.fn()));
  cache.PutListing("d", Listing({"a", "c"}));
  CHECK(cache.Find("d/a").state == MetadataCache::Answer::kPresent);
  CHECK(cache.Find("d/b").state == MetadataCache::Answer::kAbsent);
  CHECK(cache.Find("e/a").state == MetadataCache::Answer::kUnknown);
  CHECK(cache.Find("d/a/x").state == MetadataCache::Answer::kAbsent);  // "a" is a file
  CHECK(cache.FreshListing("d") != nullptr);
  clock.Advance(10s);
  CHECK(cache.Find("d/a").state == MetadataCache::Answer::kUnknown);
  CHECK(cache.FreshListing("d") == nullptr);
}

TEST_CASE("MetadataCache: the newest source wins between a listing and a lookup") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(10s, 10s, clock.fn()));
  cache.PutAbsent("d/new");
  cache.PutListing("d", Listing({"new"}));  // listed later: present
  CHECK(cache.Find("d/new").state == MetadataCache::Answer::kPresent);
  cache.PutAbsent("d/new");  // probed later still: absent
  CHECK(cache.Find("d/new").state == MetadataCache::Answer::kAbsent);
  cache.Erase("d/new");
  CHECK(cache.Find("d/new").state == MetadataCache::Answer::kPresent);
}

TEST_CASE("MetadataCache: Invalidate hides older knowledge until something newer arrives") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(std::nullopt, 1s, clock.fn()));
  cache.PutListing("d", Listing({"a"}));
  cache.Invalidate("d/a");
  CHECK(cache.Find("d/a").state == MetadataCache::Answer::kUnknown);
  clock.Advance(24h);
  CHECK(cache.Find("d/a").state == MetadataCache::Answer::kUnknown);
  CHECK(cache.Find("d/b").state == MetadataCache::Answer::kAbsent);  // others unaffected
  cache.PutPresent("d/a", File(99));
  CHECK(cache.Find("d/a").state == MetadataCache::Answer::kPresent);
  CHECK(cache.Find("d/a").attr.size == 99);
}

TEST_CASE("MetadataCache: below an ancestor known absent, or a file, nothing exists") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(10s, 5s, clock.fn()));
  NodeAttr dir;
  dir.kind = NodeKind::kDir;
  // Sorted, as listings are.
  auto root =
      std::make_shared<DirSnapshot>(std::vector<DirChild>{{"notes.txt", File(3)}, {"train", dir}});
  cache.PutListing("", root);
  // A name the root listing lacks: everything under it, however deep, with no request.
  CHECK(cache.Find("mnt/train/c/x.jpg").state == MetadataCache::Answer::kAbsent);
  CHECK(cache.Find("notes.txt/x").state == MetadataCache::Answer::kAbsent);
  // Under a listed directory whose own listing is not cached: unknown (needs a probe).
  CHECK(cache.Find("train/c/x.jpg").state == MetadataCache::Answer::kUnknown);
  // A lookup that found an ancestor absent counts the same way, until it expires.
  cache.PutAbsent("train/gone");
  CHECK(cache.Find("train/gone/a/b").state == MetadataCache::Answer::kAbsent);
  // Knowledge of the path itself that is newer than the ancestor's wins.
  cache.PutPresent("mnt/new.jpg", File(7));
  CHECK(cache.Find("mnt/new.jpg").state == MetadataCache::Answer::kPresent);
  cache.PutListing("", root);  // listed again after that lookup: absent once more
  CHECK(cache.Find("mnt/new.jpg").state == MetadataCache::Answer::kAbsent);
  clock.Advance(6s);  // the negative entry expired; the listing (10 s) has not
  CHECK(cache.Find("train/gone/a/b").state == MetadataCache::Answer::kUnknown);
  CHECK(cache.Find("mnt/x").state == MetadataCache::Answer::kAbsent);
  clock.Advance(5s);  // the listing expired too
  CHECK(cache.Find("mnt/x").state == MetadataCache::Answer::kUnknown);
}

TEST_CASE(
    "MetadataCache: an expired listing in demand is worth listing again, a quiet one is not") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(10s, 2s, clock.fn()));
  CHECK_FALSE(cache.WorthRelisting("d"));  // never listed
  cache.PutListing("d", Listing({"a", "b", "c"}));
  cache.PutListing("quiet", Listing({"a", "b", "c"}));
  CHECK(cache.Find("d/a").state == MetadataCache::Answer::kPresent);
  CHECK_FALSE(cache.WorthRelisting("d"));  // fresh: it answers by itself
  CHECK(cache.Find("d/b").state == MetadataCache::Answer::kPresent);
  CHECK(cache.Find("quiet/a").state == MetadataCache::Answer::kPresent);
  CHECK(cache.Find("d/c").state == MetadataCache::Answer::kPresent);
  clock.Advance(10s);
  // d had 3 lookups for its 1 page: listing it again costs less than the probes it saves.
  CHECK(cache.WorthRelisting("d"));
  CHECK_FALSE(cache.WorthRelisting("quiet"));  // 1 lookup: probe names one by one
  // Lookups after expiry count too (a directory that became busy again).
  CHECK(cache.Find("quiet/b").state == MetadataCache::Answer::kUnknown);
  CHECK_FALSE(cache.WorthRelisting("quiet"));
  CHECK(cache.Find("quiet/c").state == MetadataCache::Answer::kUnknown);
  CHECK(cache.WorthRelisting("quiet"));
  // A new listing starts counting afresh.
  cache.PutListing("d", Listing({"a", "b", "c"}));
  clock.Advance(10s);
  CHECK_FALSE(cache.WorthRelisting("d"));
  // Lookups deeper down are not lookups in d.
  CHECK(cache.Find("d/x/y").state == MetadataCache::Answer::kUnknown);
  CHECK(cache.Find("d/x/z").state == MetadataCache::Answer::kUnknown);
  CHECK_FALSE(cache.WorthRelisting("d"));
}

TEST_CASE(
    "MetadataCache: listing again is weighed by pages, capped, and off for TTL 0 and indefinite") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(10s, 2s, clock.fn()));
  std::vector<std::string> names;
  for (int i = 0; i < 2500; ++i) names.push_back("f" + std::to_string(10000 + i));
  cache.PutListing("three_pages", Listing(names));
  for (int i = 0; i < 6; ++i) cache.Find("three_pages/" + names[i]);
  clock.Advance(10s);
  CHECK_FALSE(cache.WorthRelisting("three_pages"));  // 6 lookups for 3 pages
  cache.Find("three_pages/" + names[6]);
  CHECK(cache.WorthRelisting("three_pages"));  // 7: more than 2 per page

  names.resize(MetadataCache::kRelistMaxEntries + 1, "x");
  for (size_t i = 2500; i < names.size(); ++i) names[i] = "g" + std::to_string(100000 + i);
  cache.PutListing("huge", Listing(names));
  for (int i = 0; i < 1000; ++i) cache.Find("huge/" + names[i]);
  clock.Advance(10s);
  CHECK_FALSE(cache.WorthRelisting("huge"));  // one lookup would wait for 11 pages

  for (auto ttl : {std::optional<std::chrono::milliseconds>(0ms),
                   std::optional<std::chrono::milliseconds>()}) {
    MetadataCache other(TtlPolicy(ttl, 2s, clock.fn()));
    other.PutListing("d", Listing({"a"}));
    for (int i = 0; i < 10; ++i) other.Find("d/a");
    clock.Advance(1000h);
    CHECK_FALSE(other.WorthRelisting("d"));
  }
}

TEST_CASE("MetadataCache: a listing in demand is claimed for refresh once, in its last quarter") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(20s, 2s, clock.fn()));
  cache.PutListing("d", Listing({"a", "b", "c"}));
  cache.PutListing("quiet", Listing({"a"}));
  for (const char* name : {"d/a", "d/b", "d/c", "quiet/a"}) cache.Find(name);
  clock.Advance(14s);
  CHECK_FALSE(cache.ClaimRefreshAhead("d"));  // 6 s left: more than a quarter
  clock.Advance(1s);
  CHECK(cache.ClaimRefreshAhead("d"));            // 5 s left
  CHECK_FALSE(cache.ClaimRefreshAhead("d"));      // once per listing
  CHECK_FALSE(cache.ClaimRefreshAhead("quiet"));  // not in demand
  CHECK_FALSE(cache.ClaimRefreshAhead("never_listed"));
  clock.Advance(5s);
  CHECK_FALSE(cache.ClaimRefreshAhead("d"));  // expired: WorthRelisting's case
  // The new listing can be claimed again, in its own last quarter.
  cache.PutListing("d", Listing({"a", "b", "c"}));
  for (const char* name : {"d/a", "d/b", "d/c"}) cache.Find(name);
  clock.Advance(15s);
  CHECK(cache.ClaimRefreshAhead("d"));

  for (auto ttl : {std::optional<std::chrono::milliseconds>(0ms),
                   std::optional<std::chrono::milliseconds>()}) {
    MetadataCache other(TtlPolicy(ttl, 2s, clock.fn()));
    other.PutListing("d", Listing({"a"}));
    for (int i = 0; i < 10; ++i) other.Find("d/a");
    CHECK_FALSE(other.ClaimRefreshAhead("d"));
  }
}

using LookupListing = MetadataCache::LookupListing;

TEST_CASE(
    "MetadataCache: the third name probed in a directory with no listing claims one listing") {
  FakeClock clock;
  for (auto ttl : {std::optional<std::chrono::milliseconds>(10s),
                   std::optional<std::chrono::milliseconds>()}) {
    MetadataCache cache(TtlPolicy(ttl, 2s, clock.fn()));
    CHECK(cache.ClaimListingForLookups("d") == LookupListing::kNone);
    CHECK(cache.ClaimListingForLookups("e") == LookupListing::kNone);  // counted per directory
    CHECK(cache.ClaimListingForLookups("d") == LookupListing::kNone);
    CHECK(cache.ClaimListingForLookups("d") == LookupListing::kFirst);
    CHECK(cache.ClaimListingForLookups("d") == LookupListing::kNone);  // claimed once
    // 4 probes: the listing is worth 2 pages, not 3.
    CHECK(cache.LookupsStillWaiting("d", 1));
    CHECK(cache.LookupsStillWaiting("d", 2));
    CHECK_FALSE(cache.LookupsStillWaiting("d", 3));
    CHECK_FALSE(cache.LookupsStillWaiting("never_probed", 1));

    // Given up after 3 pages: the next listing needs 6 probes.
    cache.BackgroundListingEnded("d", 3);
    for (int i = 0; i < 5; ++i) CHECK(cache.ClaimListingForLookups("d") == LookupListing::kNone);
    CHECK(cache.ClaimListingForLookups("d") == LookupListing::kFirst);
    // Failed: as many probes as before, counted afresh.
    cache.BackgroundListingEnded("d", 0);
    for (int i = 0; i < 5; ++i) CHECK(cache.ClaimListingForLookups("d") == LookupListing::kNone);
    CHECK(cache.ClaimListingForLookups("d") == LookupListing::kFirst);

    // Cached: the listing answers, and its demand starts from nothing if it is ever replaced.
    cache.PutListing("d", Listing({"a"}));
    CHECK(cache.Find("d/b").state == MetadataCache::Answer::kAbsent);
    for (int i = 0; i < 10; ++i) CHECK(cache.ClaimListingForLookups("d") == LookupListing::kNone);
    CHECK_FALSE(cache.LookupsStillWaiting("d", 1));
  }
  // Under a zero TTL a listing is stale when it lands: names are only ever probed.
  MetadataCache zero(TtlPolicy(0ms, 2s, clock.fn()));
  for (int i = 0; i < 10; ++i) CHECK(zero.ClaimListingForLookups("d") == LookupListing::kNone);
}

TEST_CASE(
    "MetadataCache: an expired listing over 10,000 names in demand is claimed for lookups, once") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(10s, 2s, clock.fn()));
  const std::vector<std::string> names = NamesOverRelistMax();
  cache.PutListing("huge", Listing(names));
  cache.PutListing("small", Listing({"a", "b", "c"}));
  cache.PutListing("quiet", Listing(names));
  // 11 pages: in demand above 22 lookups.
  for (int i = 0; i < 23; ++i) cache.Find("huge/" + names[i]);
  for (const char* name : {"small/a", "small/b", "small/c"}) cache.Find(name);
  for (int i = 0; i < 22; ++i) cache.Find("quiet/" + names[i]);
  CHECK(cache.ClaimListingForLookups("huge") == LookupListing::kNone);  // fresh: it answers
  clock.Advance(10s);
  CHECK(cache.ClaimListingForLookups("quiet") == LookupListing::kNone);  // 22: not in demand
  CHECK(cache.ClaimListingForLookups("small") == LookupListing::kNone);  // WorthRelisting's
  CHECK(cache.WorthRelisting("small"));
  CHECK_FALSE(cache.WorthRelisting("huge"));
  CHECK(cache.ClaimListingForLookups("huge") == LookupListing::kAgain);
  CHECK(cache.ClaimListingForLookups("huge") == LookupListing::kNone);
  // It failed: the demand must build again.
  cache.BackgroundListingEnded("huge", 0);
  for (int i = 0; i < 22; ++i) cache.Find("huge/" + names[i]);
  CHECK(cache.ClaimListingForLookups("huge") == LookupListing::kNone);
  cache.Find("huge/" + names[22]);
  CHECK(cache.ClaimListingForLookups("huge") == LookupListing::kAgain);
  // The new listing is fresh, and its own.
  cache.PutListing("huge", Listing(names));
  CHECK(cache.ClaimListingForLookups("huge") == LookupListing::kNone);
}

TEST_CASE("MetadataCache: a large listing in demand is refreshed ahead too") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(20s, 2s, clock.fn()));
  const std::vector<std::string> names = NamesOverRelistMax();
  cache.PutListing("huge", Listing(names));
  for (int i = 0; i < 23; ++i) cache.Find("huge/" + names[i]);
  clock.Advance(15s);
  // Nobody waits for a refresh ahead: any size is worth it.
  CHECK(cache.ClaimRefreshAhead("huge"));
  CHECK_FALSE(cache.ClaimRefreshAhead("huge"));
  // The refresh failed: claimed again once the demand is back.
  cache.BackgroundListingEnded("huge", 0);
  CHECK_FALSE(cache.ClaimRefreshAhead("huge"));
  for (int i = 0; i < 23; ++i) cache.Find("huge/" + names[i]);
  CHECK(cache.ClaimRefreshAhead("huge"));
  clock.Advance(5s);
  CHECK(cache.ClaimListingForLookups("huge") == LookupListing::kNone);  // the claim is shared
}

TEST_CASE("MetadataCache: counts the names and bytes of the listings it holds, replaced ones not") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(10s, 2s, clock.fn()));
  CHECK(cache.listed_names() == 0);
  CHECK(cache.listing_bytes() == 0);
  auto d = Listing({"a", "b", "c"});
  auto e = Listing({"x"});
  cache.PutListing("d", d);
  cache.PutListing("e", e);
  CHECK(cache.listed_names() == 4);
  CHECK(cache.listing_bytes() == d->MemoryBytes() + e->MemoryBytes());
  CHECK(d->MemoryBytes() >= 3 * 32 + 3 * (1 + 3));  // a record, a name and an etag each
  // Listed again: the new listing replaces the old one in the totals.
  auto d2 = Listing({"a", "b"});
  cache.PutListing("d", d2);
  CHECK(cache.listed_names() == 3);
  CHECK(cache.listing_bytes() == d2->MemoryBytes() + e->MemoryBytes());
  // An expired listing is still held until replaced, so it still counts.
  clock.Advance(1h);
  CHECK(cache.listed_names() == 3);
  CHECK(cache.listing_count() == 2);
}

TEST_CASE("MetadataCache: within its budget, the least recently used go first") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(std::nullopt, 2s, clock.fn()));
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) names.push_back("name-of-some-length-" + std::to_string(i));
  std::sort(names.begin(), names.end());  // a listing's order
  const size_t one_listing = Listing(names)->MemoryBytes();
  size_t inodes = 0;
  cache.SetBudget(one_listing * 8, [&inodes] { return inodes; });
  for (int d = 0; d < 6; ++d) cache.PutListing("d" + std::to_string(d), Listing(names));
  CHECK(cache.listing_count() == 6);
  CHECK(cache.evictions() == 0);
  // d0 is used; d1 is not. Four more listings: the oldest unused ones go, d0 stays.
  CHECK(cache.Find("d0/name-of-some-length-1").state == MetadataCache::Answer::kPresent);
  for (int d = 6; d < 10; ++d) cache.PutListing("d" + std::to_string(d), Listing(names));
  CHECK(cache.listing_bytes() + cache.entry_bytes() <= one_listing * 8);
  CHECK(cache.evictions() > 0);
  CHECK(cache.FreshListing("d0"));
  CHECK_FALSE(cache.FreshListing("d1"));
  CHECK(cache.FreshListing("d9"));
  // What went is unknown, never absent: it is asked of the server again.
  CHECK(cache.Find("d1/name-of-some-length-1").state == MetadataCache::Answer::kUnknown);
  // The inodes take their share first, but never more than three quarters.
  inodes = one_listing * 100;
  cache.PutListing("d10", Listing(names));
  CHECK(cache.listing_bytes() + cache.entry_bytes() <= one_listing * 2);
  CHECK(cache.FreshListing("d10"));
}

TEST_CASE("MetadataCache: an entry newer than its directory's listing goes with the listing") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(std::nullopt, 2s, clock.fn()));
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i) names.push_back("n" + std::to_string(i));
  std::sort(names.begin(), names.end());
  const size_t one_listing = Listing(names)->MemoryBytes();
  cache.SetBudget(one_listing * 4, nullptr);
  cache.PutListing("d", Listing(names));
  cache.Invalidate("d/n5");  // a read saw n5 change: the listing's n5 is out of date
  CHECK(cache.Find("d/n5").state == MetadataCache::Answer::kUnknown);
  // Fill the budget with other listings (used after the invalidation): the invalidation is
  // among the oldest and goes, and the listing it overrode goes with it.
  for (int d = 0; d < 8; ++d) {
    cache.PutListing("e" + std::to_string(d), Listing(names));
    cache.Find("e" + std::to_string(d) + "/n1");
  }
  CHECK(cache.Find("d/n5").state == MetadataCache::Answer::kUnknown);
}

TEST_CASE("MetadataCache: a directory too large to hold is remembered for the TTL") {
  FakeClock clock;
  MetadataCache cache(TtlPolicy(10s, 2s, clock.fn()));
  CHECK(cache.max_listing_bytes() == SIZE_MAX);
  cache.SetBudget(64 << 20, nullptr);
  CHECK(cache.max_listing_bytes() == 32u << 20);
  cache.MarkTooLarge("big");
  CHECK(cache.TooLarge("big"));
  CHECK_FALSE(cache.TooLarge("small"));
  clock.Advance(59s);  // at least a minute, whatever the TTL
  CHECK(cache.TooLarge("big"));
  clock.Advance(2s);
  CHECK_FALSE(cache.TooLarge("big"));
}
