// Listings started by lookups (MetadataCache::ClaimListingForLookups): names opened by path
// in a directory no listing answers are probed only until the directory is listed behind
// them.
#include <future>

#include "fs_harness.h"

using namespace fstest;

namespace {

struct LookupListingCounts : ListingOutcomeCounts {
  LookupListingCounts() : ListingOutcomeCounts("ossmount_lookup_listings_total") {}
};

std::string Name(int i) { return "f" + std::to_string(100000 + i); }

// Directory "d" of `names` files f100000, f100001, ... (1,000 per listing page); its inode.
InodeId DirectoryOfNames(Harness& h, int names) {
  for (int i = 0; i < names; ++i) h.fake->PutObject("d/" + Name(i), "data");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  return d->attr.ino;
}

// A Lookup + Open + Release by path, as a program reading a file list does.
void OpenByName(Harness& h, InodeId dir, const std::string& name) {
  auto f = h.Lookup(dir, name);
  REQUIRE(f.ok());
  auto open = h.Open(f->attr.ino);
  REQUIRE(open.ok());
  h.fs->Release(f->attr.ino, open->fh);
}

}  // namespace

TEST_CASE("Files opened by path: the third name probed lists the directory, later ones need none") {
  FsOptions options = Harness::DefaultOptions();
  SECTION("finite TTL") { options.metadata_ttl = 60s; }
  SECTION("indefinite TTL") { options.metadata_ttl = std::nullopt; }
  Harness h(options);
  const InodeId d = DirectoryOfNames(h, 50);
  h.fake->PutObject("two/a", "1");
  h.fake->PutObject("two/b", "2");
  auto two = h.Lookup(kRootInode, "two");
  REQUIRE(two.ok());
  LookupListingCounts counts;

  for (int i = 0; i < 3; ++i) OpenByName(h, d, Name(i));
  CHECK(Eventually([&] { return counts.ListedSince() == 1; }));
  // One page listed, three names probed (the third beside the listing).
  CHECK(ListingsAndProbes(h, "d/") == std::pair(1, 3));
  h.fake->PutObject("d/late", "x");  // after the listing: it answers "absent" for its life
  for (int i = 3; i < 50; ++i) OpenByName(h, d, Name(i));
  CHECK(h.Lookup(d, "late").status().ToErrno() == ENOENT);
  CHECK(ListingsAndProbes(h, "d/") == std::pair(1, 3));
  CHECK(h.fake->count(Op::kHead) == 0);

  // Two names in a directory: probed, not listed.
  OpenByName(h, two->attr.ino, "a");
  OpenByName(h, two->attr.ino, "b");
  CHECK(ListingsAndProbes(h, "two/") == std::pair(0, 2));
  CHECK(counts.ListedSince() == 1);
  CHECK(counts.AbandonedSince() == 0);
  CHECK(counts.FailedSince() == 0);
}

TEST_CASE("Under a zero TTL names opened by path are probed and nothing is listed") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 0ms;
  Harness h(options);
  const InodeId d = DirectoryOfNames(h, 10);
  for (int i = 0; i < 10; ++i) OpenByName(h, d, Name(i));
  // Each name twice: its lookup and its open revalidate.
  CHECK(ListingsAndProbes(h, "d/") == std::pair(0, 20));
}

TEST_CASE("A lookup listing stops when the lookups stop, and starts again after twice its pages") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 60s;
  Harness h(options);
  const InodeId d = DirectoryOfNames(h, 5000);  // 5 pages
  LookupListingCounts counts;

  // 3 probes pay for the first page and a half: given up after page 2.
  for (int i = 0; i < 3; ++i) REQUIRE(h.Lookup(d, Name(i)).ok());
  CHECK(Eventually([&] { return counts.AbandonedSince() == 1; }));
  CHECK(ListingsAndProbes(h, "d/") == std::pair(2, 3));
  // Nothing of it was kept: a name it listed is still probed.
  REQUIRE(h.Lookup(d, Name(3)).ok());
  CHECK(ListingsAndProbes(h, "d/") == std::pair(2, 4));
  // The next listing waits for 4 probes since (twice the 2 pages spent)...
  for (int i = 4; i < 6; ++i) REQUIRE(h.Lookup(d, Name(i)).ok());
  CHECK(ListingsAndProbes(h, "d/") == std::pair(2, 6));
  REQUIRE(h.Lookup(d, Name(6)).ok());
  // ... and those 4 pay for 2 pages: given up after page 3.
  CHECK(Eventually([&] { return counts.AbandonedSince() == 2; }));
  CHECK(ListingsAndProbes(h, "d/") == std::pair(5, 7));
  CHECK(counts.ListedSince() == 0);
}

TEST_CASE("Lookups that keep coming carry a large directory's listing to its end") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 60s;
  Harness h(options);
  const InodeId d = DirectoryOfNames(h, 5000);  // 5 pages
  LookupListingCounts counts;
  // 12 names asked while the server holds every reply: 12 probes, more than 2 per page.
  h.fake->Pause();
  std::vector<std::future<Result<Entry>>> lookups;
  for (int i = 0; i < 12; ++i) {
    auto p = std::make_shared<std::promise<Result<Entry>>>();
    lookups.push_back(p->get_future());
    h.fs->Lookup(d, Name(i), [p](Result<Entry> r) { p->set_value(std::move(r)); });
  }
  h.fake->Resume();
  for (auto& f : lookups) {
    REQUIRE(f.wait_for(60s) == std::future_status::ready);
    REQUIRE(f.get().ok());
  }
  CHECK(Eventually([&] { return counts.ListedSince() == 1; }));
  CHECK(ListingsAndProbes(h, "d/") == std::pair(5, 12));
  for (int i = 12; i < 5000; i += 7) REQUIRE(h.Lookup(d, Name(i)).ok());
  CHECK(h.Lookup(d, "missing").status().ToErrno() == ENOENT);
  CHECK(ListingsAndProbes(h, "d/") == std::pair(5, 12));
  CHECK(counts.AbandonedSince() == 0);
}

TEST_CASE(
    "An expired listing over 10,000 names in demand is listed again behind the lookups, not "
    "probed name by name") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 30s;
  Harness h(options);
  const int names = static_cast<int>(meta::MetadataCache::kRelistMaxEntries) + 1;  // 11 pages
  const InodeId d = DirectoryOfNames(h, names);
  REQUIRE(h.List(d)->size() == static_cast<size_t>(names));  // a scan
  for (int i = 0; i < 30; ++i) OpenByName(h, d, Name(i));
  CHECK(ListingsAndProbes(h, "d/") == std::pair(11, 0));
  LookupListingCounts counts;

  h.fake->PutObject("d/new", "x");
  h.Advance(30s);
  // The first lookup after expiry is probed (waiting for 11 pages would be slower); the
  // listing goes on behind it.
  OpenByName(h, d, Name(30));
  CHECK(Eventually([&] { return counts.ListedSince() == 1; }));
  CHECK(ListingsAndProbes(h, "d/") == std::pair(22, 1));
  REQUIRE(h.Lookup(d, "new").ok());
  for (int i = 31; i < 60; ++i) OpenByName(h, d, Name(i));
  CHECK(ListingsAndProbes(h, "d/") == std::pair(22, 1));
}

TEST_CASE("A failed lookup listing leaves the names probed, and is tried again after as many") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 60s;
  Harness h(options, /*failing=*/true);
  const InodeId d = DirectoryOfNames(h, 20);
  LookupListingCounts counts;
  h.fail->FailKey("d/");  // the listing fails before the server; the probes do not
  for (int i = 0; i < 3; ++i) OpenByName(h, d, Name(i));
  CHECK(Eventually([&] { return counts.FailedSince() == 1; }));
  h.fail->ClearFailures();
  for (int i = 3; i < 5; ++i) OpenByName(h, d, Name(i));
  CHECK(ListingsAndProbes(h, "d/") == std::pair(0, 5));
  OpenByName(h, d, Name(5));
  CHECK(Eventually([&] { return counts.ListedSince() == 1; }));
  for (int i = 6; i < 20; ++i) OpenByName(h, d, Name(i));
  CHECK(ListingsAndProbes(h, "d/") == std::pair(1, 6));
}
