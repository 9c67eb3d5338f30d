// The mount's own changes in its metadata: MetadataCache::RecordChange (a name written, made,
// removed or renamed shows at once, in lookups and in the cached listing of its directory)
// and ForgetTree (a directory rename), and InodeTable::Move (a rename keeps inode numbers).
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "meta/inode_table.h"
#include "meta/metadata_cache.h"

using namespace std::chrono_literals;

namespace rctest {

using namespace ossmount::meta;

struct TestClock {
  std::shared_ptr<TimePoint> now = std::make_shared<TimePoint>(TimePoint() + 1000h);
  ClockFn fn() const {
    auto p = now;
    return [p]() { return *p; };
  }
  void Advance(std::chrono::milliseconds d) { *now += d; }
};

NodeAttr FileOf(uint64_t size, const std::string& etag = "\"e\"") {
  NodeAttr a;
  a.size = size;
  a.etag = etag;
  return a;
}

std::shared_ptr<const DirSnapshot> SnapshotOf(const std::vector<std::string>& files,
                                              HiddenCounts hidden = {}) {
  std::vector<DirChild> children;
  for (const auto& f : files) children.push_back({f, FileOf(10)});
  return std::make_shared<DirSnapshot>(children, hidden);
}

std::shared_ptr<const DirSnapshot> DirsOf(const std::vector<std::string>& dirs) {
  std::vector<DirChild> children;
  for (const auto& d : dirs) children.push_back({d, DirAttr()});
  return std::make_shared<DirSnapshot>(children);
}

std::vector<std::string> NamesOf(const std::shared_ptr<const DirSnapshot>& s) {
  std::vector<std::string> names;
  if (!s) return names;
  for (size_t i = 0; i < s->size(); ++i) names.emplace_back(s->child(i).name);
  return names;
}

using State = MetadataCache::Answer::State;

}  // namespace rctest

using namespace rctest;

TEST_CASE("RecordChange: a new name joins its directory's cached listing, in order") {
  struct Row {
    const char* name;
    std::vector<std::string> expected;
  };
  const Row rows[] = {
      {"a", {"a", "b", "d", "f"}}, {"c", {"b", "c", "d", "f"}}, {"e", {"b", "d", "e", "f"}},
      {"g", {"b", "d", "f", "g"}}, {"B", {"B", "b", "d", "f"}},  // bytewise: upper case first
  };
  for (const Row& row : rows) {
    INFO(row.name);
    TestClock clock;
    MetadataCache cache(TtlPolicy(std::nullopt, 5s, clock.fn()));
    cache.PutListing("dir", SnapshotOf({"b", "d", "f"}));
    const size_t names_before = cache.listed_names();
    cache.RecordChange(std::string("dir/") + row.name, FileOf(77, "\"new\""));
    auto listing = cache.FreshListing("dir");
    CHECK(NamesOf(listing) == row.expected);
    auto at = listing->Find(row.name);
    REQUIRE(at.has_value());
    CHECK(listing->child(*at).size == 77);
    CHECK(listing->child(*at).etag == "\"new\"");
    CHECK(cache.listed_names() == names_before + 1);
    auto found = cache.Find(std::string("dir/") + row.name);
    CHECK(found.state == State::kPresent);
    CHECK(found.attr.size == 77);
  }
}

TEST_CASE("RecordChange: a changed name is replaced in the listing, a removed one leaves it") {
  TestClock clock;
  MetadataCache cache(TtlPolicy(std::nullopt, 5s, clock.fn()));
  HiddenCounts hidden;
  hidden.invalid = 2;
  cache.PutListing("", SnapshotOf({"a", "b", "c"}, hidden));

  cache.RecordChange("b", FileOf(500, "\"b2\""));
  auto listing = cache.FreshListing("");
  CHECK(NamesOf(listing) == std::vector<std::string>{"a", "b", "c"});
  CHECK(listing->child(1).size == 500);
  CHECK(listing->child(1).etag == "\"b2\"");
  CHECK(listing->hidden().invalid == 2);  // what the listing hid stays counted

  cache.RecordChange("a", std::nullopt);
  CHECK(NamesOf(cache.FreshListing("")) == std::vector<std::string>{"b", "c"});
  CHECK(cache.Find("a").state == State::kAbsent);
  CHECK(cache.listed_names() == 2);
  cache.RecordChange("not-there", std::nullopt);  // removing an unlisted name: no change
  CHECK(NamesOf(cache.FreshListing("")) == std::vector<std::string>{"b", "c"});

  // A file replaced by a directory of the same name.
  cache.RecordChange("c", DirAttr());
  listing = cache.FreshListing("");
  CHECK(listing->child(1).is_dir());
  CHECK(cache.Find("c").attr.is_dir());
  // Below a name recorded absent, nothing exists.
  CHECK(cache.Find("a/deeper").state == State::kAbsent);
}

TEST_CASE("RecordChange: a snapshot handed out before the change keeps its contents") {
  MetadataCache cache(TtlPolicy(std::nullopt, 5s));
  cache.PutListing("d", SnapshotOf({"x", "y"}));
  auto before = cache.FreshListing("d");
  cache.RecordChange("d/z", FileOf(1));
  cache.RecordChange("d/x", std::nullopt);
  CHECK(NamesOf(before) == std::vector<std::string>{"x", "y"});  // a directory handle's offsets
  CHECK(NamesOf(cache.FreshListing("d")) == std::vector<std::string>{"y", "z"});
}

TEST_CASE("RecordChange: without a cached listing the entry answers, under any TTL") {
  struct Row {
    const char* what;
    std::optional<std::chrono::milliseconds> ttl;
  };
  const Row rows[] = {{"indefinite", std::nullopt}, {"60 s", 60s}};
  for (const Row& row : rows) {
    INFO(row.what);
    TestClock clock;
    MetadataCache cache(TtlPolicy(row.ttl, 5s, clock.fn()));
    cache.RecordChange("dir/new", FileOf(9));
    cache.RecordChange("dir/gone", std::nullopt);
    CHECK(cache.Find("dir/new").state == State::kPresent);
    CHECK(cache.Find("dir/new").attr.size == 9);
    CHECK(cache.Find("dir/gone").state == State::kAbsent);
    CHECK(cache.listing_count() == 0);
    // An absent name recorded by this mount lasts as long as a positive entry, not the
    // negative TTL: the mount removed it, it knows.
    clock.Advance(30s);
    CHECK(cache.Find("dir/gone").state == State::kAbsent);
    clock.Advance(31s);
    CHECK(cache.Find("dir/new").state == (row.ttl ? State::kUnknown : State::kPresent));
  }
}

TEST_CASE("RecordChange: the patched listing keeps the expiry of the listing it patched") {
  TestClock clock;
  MetadataCache cache(TtlPolicy(60s, 5s, clock.fn()));
  cache.PutListing("d", SnapshotOf({"a"}));
  clock.Advance(50s);
  cache.RecordChange("d/b", FileOf(1));
  CHECK(NamesOf(cache.FreshListing("d")) == std::vector<std::string>{"a", "b"});
  clock.Advance(11s);  // 61 s after the listing was taken
  CHECK(cache.FreshListing("d") == nullptr);
  // The entry recorded at 50 s is still fresh.
  CHECK(cache.Find("d/b").state == State::kPresent);
}

TEST_CASE("RecordChange: a newer listing from the server replaces the patched one") {
  MetadataCache cache(TtlPolicy(std::nullopt, 5s));
  cache.PutListing("d", SnapshotOf({"a"}));
  cache.RecordChange("d/b", FileOf(1));
  cache.PutListing("d", SnapshotOf({"a", "b", "c"}));
  CHECK(NamesOf(cache.FreshListing("d")) == std::vector<std::string>{"a", "b", "c"});
  CHECK(cache.Find("d/c").state == State::kPresent);
  CHECK(cache.listed_names() == 3);
}

TEST_CASE("ForgetTree: forgets a directory's subtree and nothing beside it") {
  MetadataCache cache(TtlPolicy(std::nullopt, 5s));
  cache.PutListing("", DirsOf({"a", "a-b", "ab"}));
  cache.PutListing("a", SnapshotOf({"s", "x"}));
  cache.PutListing("a/s", SnapshotOf({"y"}));
  cache.PutListing("ab", SnapshotOf({"z"}));
  cache.PutListing("a-b", SnapshotOf({"w"}));
  cache.PutPresent("a/x", FileOf(1));
  cache.PutPresent("a/s/y", FileOf(2));
  cache.PutPresent("ab/z", FileOf(3));
  CHECK(cache.listing_count() == 5);
  CHECK(cache.listed_names() == 3 + 2 + 1 + 1 + 1);

  cache.ForgetTree("a");
  CHECK(cache.listing_count() == 3);
  CHECK(cache.listed_names() == 3 + 1 + 1);
  CHECK(cache.FreshListing("a") == nullptr);
  CHECK(cache.FreshListing("a/s") == nullptr);
  CHECK(cache.Find("a/x").state == State::kUnknown);
  CHECK(cache.Find("a/s/y").state == State::kUnknown);
  // The directory itself is unknown, although its parent's listing still names it.
  CHECK(cache.Find("a").state == State::kUnknown);
  // Siblings that share its prefix are kept.
  CHECK(NamesOf(cache.FreshListing("ab")) == std::vector<std::string>{"z"});
  CHECK(NamesOf(cache.FreshListing("a-b")) == std::vector<std::string>{"w"});
  CHECK(cache.Find("ab/z").state == State::kPresent);
  CHECK(NamesOf(cache.FreshListing("")) == std::vector<std::string>{"a", "a-b", "ab"});

  // A later RecordChange makes it known again.
  cache.RecordChange("a", DirAttr());
  CHECK(cache.Find("a").state == State::kPresent);
  CHECK(cache.Find("a").attr.is_dir());
}

TEST_CASE("InodeTable::Move: a file keeps its inode under the new path") {
  InodeTable t;
  const InodeId a = t.Ensure("dir/a", false, 1);
  t.Move("dir/a", "other/b");
  CHECK(t.Find("other/b") == a);
  CHECK_FALSE(t.Find("dir/a").has_value());
  REQUIRE(t.Get(a).has_value());
  CHECK(t.Get(a)->path == "other/b");
  CHECK(t.Get(a)->nlookup == 1);
  CHECK(t.Ensure("other/b", false, 1) == a);
  const InodeId fresh = t.Ensure("dir/a", false, 1);
  CHECK(fresh != a);
  CHECK(t.size() == 3);  // root, a (now other/b), the new dir/a
}

TEST_CASE("InodeTable::Move: a directory's whole subtree moves, siblings with its prefix stay") {
  InodeTable t;
  const InodeId d = t.Ensure("d", true, 1);
  const InodeId x = t.Ensure("d/x", false, 1);
  const InodeId s = t.Ensure("d/s", true, 1);
  const InodeId y = t.Ensure("d/s/y", false, 1);
  const InodeId dx = t.Ensure("dx", false, 1);
  const InodeId dash = t.Ensure("d-x/z", false, 1);
  t.Move("d", "e/f");
  CHECK(t.Find("e/f") == d);
  CHECK(t.Find("e/f/x") == x);
  CHECK(t.Find("e/f/s") == s);
  CHECK(t.Find("e/f/s/y") == y);
  CHECK(t.Get(y)->path == "e/f/s/y");
  for (const char* gone : {"d", "d/x", "d/s", "d/s/y"}) {
    INFO(gone);
    CHECK_FALSE(t.Find(gone).has_value());
  }
  CHECK(t.Find("dx") == dx);
  CHECK(t.Find("d-x/z") == dash);
  CHECK(t.Get(dx)->path == "dx");
  CHECK(t.Find("") == kRootInodeId);
}

TEST_CASE("InodeTable::Move: an inode the new path had is detached and lives until forgotten") {
  InodeTable t;
  const InodeId a = t.Ensure("a", false, 1);
  const InodeId b = t.Ensure("b", false, 2);  // the kernel still references it
  t.Move("a", "b");
  CHECK(t.Find("b") == a);
  REQUIRE(t.Get(b).has_value());  // detached, not dropped
  CHECK(t.Get(b)->path == "b");

  // Forgetting the detached inode drops it without touching the moved one's path.
  CHECK(t.Forget(b, 2));
  CHECK_FALSE(t.Get(b).has_value());
  CHECK(t.Find("b") == a);
  CHECK(t.Get(a)->path == "b");

  // A replaced inode with no reference goes at once.
  const InodeId c = t.Ensure("c", false, 0);
  const size_t before = t.size();
  t.Move("b", "c");
  CHECK_FALSE(t.Get(c).has_value());
  CHECK(t.size() == before - 1);
  CHECK(t.Find("c") == a);
}

TEST_CASE("InodeTable::Move: a directory moved onto a path with a subtree replaces it") {
  InodeTable t;
  const InodeId from = t.Ensure("from", true, 1);
  const InodeId from_x = t.Ensure("from/x", false, 1);
  const InodeId to = t.Ensure("to", true, 1);
  const InodeId to_old = t.Ensure("to/old", false, 1);
  const InodeId to_x = t.Ensure("to/x", false, 1);
  t.Move("from", "to");
  CHECK(t.Find("to") == from);
  CHECK(t.Find("to/x") == from_x);
  CHECK_FALSE(t.Find("to/old").has_value());  // detached: nothing under the new tree has it
  CHECK(t.Get(to).has_value());
  CHECK(t.Get(to_old).has_value());
  CHECK(t.Get(to_x).has_value());
  CHECK(t.Forget(to_x, 1));
  CHECK(t.Find("to/x") == from_x);
}

TEST_CASE("Answers asked before a change and put after it do not undo the change") {
  TestClock clock;
  MetadataCache cache(TtlPolicy(std::nullopt, 5s, clock.fn()));
  SECTION("a listing gets the changes made in its directory while it was in flight") {
    const MetadataCache::Asked asked = cache.StartListing();
    cache.RecordChange("dir/new", FileOf(7));
    cache.RecordChange("dir/sub", DirAttr());
    cache.RecordChange("dir/b", std::nullopt);
    cache.RecordChange("other/x", FileOf(1));  // another directory: not in this listing
    auto answered = cache.PutListing("dir", SnapshotOf({"b", "d"}), asked);
    CHECK(NamesOf(answered) == std::vector<std::string>{"d", "new", "sub"});
    CHECK(NamesOf(cache.FreshListing("dir")) == std::vector<std::string>{"d", "new", "sub"});
    CHECK(cache.Find("dir/new").state == State::kPresent);
    CHECK(cache.Find("dir/new").attr.size == 7);
    CHECK(cache.Find("dir/sub").attr.is_dir());
    CHECK(cache.Find("dir/b").state == State::kAbsent);
    // Below the new directory nothing is known yet: a lookup asks.
    CHECK(cache.Find("dir/sub/er").state == State::kUnknown);
  }
  SECTION("changes made before the listing was asked are the listing's to show") {
    cache.RecordChange("dir/gone", FileOf(1));
    const MetadataCache::Asked asked = cache.StartListing();
    cache.PutListing("dir", SnapshotOf({"d"}), asked);
    CHECK(NamesOf(cache.FreshListing("dir")) == std::vector<std::string>{"d"});
    CHECK(cache.Find("dir/gone").state == State::kAbsent);
  }
  SECTION("a probe's answer loses to a change made while it was in flight") {
    const MetadataCache::Asked absent_asked = cache.Asking();
    const MetadataCache::Asked present_asked = cache.Asking();
    cache.RecordChange("dir/made", FileOf(3));
    cache.RecordChange("dir/removed", std::nullopt);
    cache.PutAbsent("dir/made", absent_asked);
    cache.PutPresent("dir/removed", FileOf(9), present_asked);
    CHECK(cache.Find("dir/made").state == State::kPresent);
    CHECK(cache.Find("dir/removed").state == State::kAbsent);
    // A probe asked after the change answers as usual.
    cache.PutAbsent("dir/made", cache.Asking());
    CHECK(cache.Find("dir/made").state == State::kAbsent);
  }
  SECTION("of two listings in flight, the one asked later stays cached") {
    const MetadataCache::Asked first = cache.StartListing();
    const MetadataCache::Asked second = cache.StartListing();
    cache.PutListing("dir", SnapshotOf({"later"}), second);
    auto answered = cache.PutListing("dir", SnapshotOf({"earlier"}), first);
    CHECK(NamesOf(answered) == std::vector<std::string>{"later"});
    CHECK(NamesOf(cache.FreshListing("dir")) == std::vector<std::string>{"later"});
  }
  SECTION("a listing of a directory renamed away while it was in flight is not cached") {
    cache.PutListing("dir", DirsOf({"sub"}));
    const MetadataCache::Asked asked = cache.StartListing();
    cache.ForgetTree("dir/sub");
    cache.RecordChange("dir/sub", std::nullopt);
    auto answered = cache.PutListing("dir/sub", SnapshotOf({"f"}), asked);
    CHECK(NamesOf(answered) == std::vector<std::string>{"f"});
    CHECK(cache.FreshListing("dir/sub") == nullptr);
    CHECK(cache.Find("dir/sub/f").state == State::kAbsent);
  }
  SECTION("past the changes kept for listings in flight, those listings are not cached") {
    const MetadataCache::Asked asked = cache.StartListing();
    for (size_t i = 0; i <= MetadataCache::kMaxChangesKeptForListings; ++i) {
      cache.RecordChange("dir/f" + std::to_string(i), FileOf(1));
    }
    cache.PutListing("dir", SnapshotOf({"old"}), asked);
    CHECK(cache.FreshListing("dir") == nullptr);
    CHECK(cache.Find("dir/f0").state == State::kPresent);
    // A listing asked afterwards is cached as usual.
    cache.PutListing("dir", SnapshotOf({"f0", "f1"}), cache.StartListing());
    CHECK(NamesOf(cache.FreshListing("dir")) == std::vector<std::string>{"f0", "f1"});
  }
  SECTION("changes are kept only while a listing asked before them is in flight") {
    cache.RecordChange("dir/before", FileOf(1));
    CHECK(cache.changes_kept_for_listings() == 0);
    const MetadataCache::Asked failing = cache.StartListing();
    cache.RecordChange("dir/a", FileOf(1));
    const MetadataCache::Asked succeeding = cache.StartListing();
    cache.RecordChange("dir/b", FileOf(1));
    CHECK(cache.changes_kept_for_listings() == 2);
    cache.ListingEnded(failing);
    CHECK(cache.changes_kept_for_listings() == 1);  // "dir/a" is in what the other lists
    cache.PutListing("dir", SnapshotOf({"a", "before"}), succeeding);
    CHECK(cache.changes_kept_for_listings() == 0);
    CHECK(NamesOf(cache.FreshListing("dir")) == std::vector<std::string>{"a", "b", "before"});
  }
}
