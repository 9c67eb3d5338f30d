#include <catch2/catch.hpp>
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
  auto s = std::make_shared<DirSnapshot>();
  for (auto& f : files) s->children.push_back({f, File(10)});
  return s;
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

TEST_CASE("DirSnapshot::Find is exact") {
  auto s = Listing({"a", "ab", "b"});
  REQUIRE(s->Find("ab"));
  CHECK(s->Find("ab")->name == "ab");
  CHECK(!s->Find("a0"));
  CHECK(!s->Find(""));
  CHECK(!s->Find("c"));
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
  auto root = std::make_shared<DirSnapshot>();
  NodeAttr dir;
  dir.kind = NodeKind::kDir;
  root->children.push_back({"notes.txt", File(3)});  // sorted, as listings are
  root->children.push_back({"train", dir});
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
