// Directory handles: stable offsets, snapshots, pagination, single-flight listings.
#include <algorithm>
#include <future>
#include <set>

#include "fs/dir_stream.h"
#include "fs_harness.h"
#include "support/eventually.h"

using namespace fstest;

namespace {

void MakeFiles(Harness& h, const std::string& dir, int n) {
  for (int i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "f%04d", i);
    h.fake->PutObject(dir + name, std::string(i % 17, 'x'));
  }
}

}  // namespace

TEST_CASE("Offsets are stable: read from the middle, repeat an offset, rewind") {
  Harness h;
  h.fake->set_page_limit(100);  // 3 pages for 250 entries
  MakeFiles(h, "d/", 240);
  for (int i = 0; i < 10; ++i) h.fake->PutObject("d/sub" + std::to_string(i) + "/x", "y");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  h.fake->ResetCounters();

  auto fh = h.OpenDir(d->attr.ino);
  REQUIRE(fh.ok());
  auto all = h.ReadDirAll(d->attr.ino, *fh);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 250);
  CHECK(h.fake->count(Op::kList) == 3);
  for (size_t i = 0; i < all->size(); ++i) {
    CHECK((*all)[i].next_offset == static_cast<off_t>(i + 1));
    if (i > 0) CHECK((*all)[i - 1].name < (*all)[i].name);
  }

  // Changes in the bucket do not move this handle's offsets.
  h.fake->PutObject("d/a-new-first-entry", "z");
  h.fake->DeleteObject("d/f0100");

  auto middle = h.ReadDirAll(d->attr.ino, *fh, 137);
  REQUIRE(middle.ok());
  REQUIRE(middle->size() == 250 - 137);
  for (size_t i = 0; i < middle->size(); ++i) {
    CHECK((*middle)[i].name == (*all)[137 + i].name);
    CHECK((*middle)[i].entry.attr.ino == (*all)[137 + i].entry.attr.ino);
  }
  auto once = h.ReadDir(d->attr.ino, *fh, 42);
  auto twice = h.ReadDir(d->attr.ino, *fh, 42);
  REQUIRE(once.ok());
  REQUIRE(twice.ok());
  REQUIRE(!once->empty());
  CHECK(EntryNames(*once) == EntryNames(*twice));
  CHECK(once->front().name == (*all)[42].name);
  auto rewound = h.ReadDirAll(d->attr.ino, *fh, 0);
  CHECK(EntryNames(*rewound) == EntryNames(*all));
  CHECK(h.ReadDir(d->attr.ino, *fh, 250)->empty());
  CHECK(h.ReadDir(d->attr.ino, *fh, 100000)->empty());
  CHECK(h.fake->count(Op::kList) == 3);  // all answered from the handle's snapshot
  h.fs->ReleaseDir(d->attr.ino, *fh);
  CHECK(h.fs->stats().dir_handles == 0);
}

TEST_CASE("Listing pages follow continuation tokens and send delimiter and max-keys") {
  Harness h;
  h.fake->set_page_limit(7);
  MakeFiles(h, "", 20);
  h.fake->PutObject("zdir/a", "1");
  auto root = h.ListPlus(kRootInode);
  REQUIRE(root.ok());
  CHECK(root->size() == 21);
  CHECK(h.fake->count(Op::kList) == 3);
  const DirEntry* f5 = FindEntry(*root, "f0005");
  REQUIRE(f5);
  CHECK(f5->entry.attr.size == 5);
  CHECK(FindEntry(*root, "zdir")->entry.attr.is_dir);
  CHECK(FindEntry(*root, "zdir")->entry.attr.nlink == 2);
  // The listing fed the cache: lookups, getattr and open cost nothing.
  h.fake->ResetCounters();
  auto e = h.Lookup(kRootInode, "f0005");
  REQUIRE(e.ok());
  CHECK(e->attr.ino == f5->entry.attr.ino);
  REQUIRE(h.GetAttr(e->attr.ino).ok());
  auto open = h.Open(e->attr.ino);
  REQUIRE(open.ok());
  h.fs->Release(e->attr.ino, open->fh);
  CHECK(h.fake->total_count() == 0);
}

TEST_CASE("Concurrent listings of one directory share one fetch") {
  Harness h;
  h.fake->set_page_limit(10);
  MakeFiles(h, "", 25);
  std::vector<uint64_t> handles;
  for (int i = 0; i < 4; ++i) handles.push_back(*h.OpenDir(kRootInode));
  h.fake->Pause();
  std::vector<std::future<Result<std::vector<DirEntry>>>> futures;
  for (uint64_t fh : handles) {
    auto p = std::make_shared<std::promise<Result<std::vector<DirEntry>>>>();
    futures.push_back(p->get_future());
    h.fs->ReadDir(kRootInode, fh, 0,
                  [p](Result<std::vector<DirEntry>> r) { p->set_value(std::move(r)); });
  }
  // Pages come one after another; keep resuming until every reader is answered.
  for (auto& f : futures) {
    while (f.wait_for(10ms) != std::future_status::ready) h.fake->Resume(), h.fake->Pause();
  }
  h.fake->Resume();
  for (auto& f : futures) {
    auto r = f.get();
    REQUIRE(r.ok());
    CHECK(r->size() == 25);
  }
  CHECK(h.fake->count(Op::kList) == 3);
  for (uint64_t fh : handles) h.fs->ReleaseDir(kRootInode, fh);
}

TEST_CASE("ReadDir of an unknown handle and OpenDir of a file fail cleanly") {
  Harness h;
  h.fake->PutObject("f", "1");
  auto f = h.Lookup(kRootInode, "f");
  REQUIRE(f.ok());
  CHECK(!h.OpenDir(f->attr.ino).ok());
  CHECK(h.ReadDir(kRootInode, 999, 0).status().ToErrno() == EINVAL);
  CHECK(h.OpenDir(424242).status().ToErrno() == ENOENT);
}

// --- Directories within the metadata budget (docs/SEMANTICS.md, "Limits") -----------------

TEST_CASE("DirStream: pages as asked, a clash across pages shows the directory once, rewind") {
  Harness h;
  h.fake->set_page_limit(500);
  MakeFiles(h, "d/", 4500);
  // "g" is a file and a directory; "g!" sorts between them, and the page limit puts "g"
  // and "g/" on different pages: the directory wins, the file is hidden.
  h.fake->PutObject("d/g", "file");
  for (int i = 0; i < 150; ++i) h.fake->PutObject("d/g!" + std::to_string(1000 + i), "x");
  h.fake->PutObject("d/g/inside", "x");
  h.fake->PutObject("d/..", "hidden");  // not a valid name
  auto stream = std::make_shared<DirStream>(h.fake, "d/", 1000);
  auto read = [&](uint64_t offset) {
    return h.Wait<std::vector<meta::DirChild>>(
        [&](auto cb) { stream->Read(offset, 128, std::move(cb)); });
  };
  std::vector<std::string> names;
  uint64_t offset = 0;
  for (;;) {
    auto r = read(offset);
    REQUIRE(r.ok());
    if (r->empty()) break;
    for (const auto& c : *r) names.push_back(c.name + (c.attr.is_dir() ? "/" : ""));
    offset += r->size();
  }
  CHECK(names.size() == 4500 + 150 + 1);
  CHECK(std::count(names.begin(), names.end(), "g/") == 1);
  CHECK(std::count(names.begin(), names.end(), "g") == 0);
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  const uint64_t lists = h.fake->count(Op::kList);
  CHECK(lists == 10);  // 4,653 keys and prefixes, 500 a page
  // Past the end: nothing, without a request. An offset still kept: no request either.
  CHECK(read(offset)->empty());
  CHECK(read(offset - 10)->size() == 10);
  CHECK(h.fake->count(Op::kList) == lists);
  // Back to the start, which is no longer kept: the listing again, from its first page.
  auto first = read(0);
  REQUIRE(first.ok());
  CHECK((*first)[0].name == "f0000");
  CHECK(h.fake->count(Op::kList) == lists + 1);
}

TEST_CASE("A directory too large to hold whole is read page by page, names only") {
  FsOptions o = Harness::DefaultOptions();
  o.max_metadata_memory = 1 << 20;  // a listing of over 512 KiB is not held
  Harness h(o);
  MakeFiles(h, "big/", 6000);
  auto big = h.Lookup(kRootInode, "big");
  REQUIRE(big.ok());
  auto fh = h.OpenDir(big->attr.ino);
  REQUIRE(fh.ok());
  const size_t inodes = h.fs->stats().inodes;
  auto all = h.ReadDirAll(big->attr.ino, *fh);
  REQUIRE(all.ok());
  CHECK(all->size() == 6000);
  for (const DirEntry& e : *all) {
    CHECK(e.entry.name_only);
    CHECK(e.entry.attr.ino != 0);  // readdir(3) skips d_ino 0
  }
  CHECK(h.fs->stats().inodes == inodes);  // no inode per name
  CHECK(h.fs->listings()->cache().TooLarge("big"));
  CHECK(h.fs->stats().cached_listings == 0);
  h.fs->ReleaseDir(big->attr.ino, *fh);
  // A name in it is probed, as a lookup in a directory no listing answers.
  auto f = h.Lookup(big->attr.ino, "f1234");
  REQUIRE(f.ok());
  CHECK(f->attr.size == 1234 % 17);
}

TEST_CASE("A listing whose reader went stops after the page in flight") {
  Harness h;
  h.fake->set_page_limit(10);
  MakeFiles(h, "d/", 2000);  // 200 pages
  h.fake->set_latency(std::chrono::milliseconds(5));
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  auto fh = h.OpenDir(d->attr.ino);
  REQUIRE(fh.ok());
  h.fake->ResetCounters();
  auto answered = std::make_shared<std::promise<Result<std::vector<DirEntry>>>>();
  auto answer = answered->get_future();
  h.fs->ReadDir(d->attr.ino, *fh, 0,
                [answered](Result<std::vector<DirEntry>> r) { answered->set_value(std::move(r)); });
  CHECK(Eventually([&] { return h.fake->count(Op::kList) >= 5; }));
  h.fs->ReleaseDir(d->attr.ino, *fh);  // the reader was killed
  REQUIRE(answer.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(answer.get().status().code() == ErrorCode::kCancelled);
  const uint64_t stopped_at = h.fake->count(Op::kList);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(h.fake->count(Op::kList) <= stopped_at + 1);
  CHECK(h.fs->stats().cached_listings == 0);  // nothing half-listed is cached
  // A second reader that joined keeps the listing going to its end.
  auto fh1 = h.OpenDir(d->attr.ino);
  auto fh2 = h.OpenDir(d->attr.ino);
  REQUIRE(fh1.ok());
  REQUIRE(fh2.ok());
  auto first = std::make_shared<std::promise<Result<std::vector<DirEntry>>>>();
  h.fs->ReadDir(d->attr.ino, *fh1, 0,
                [first](Result<std::vector<DirEntry>> r) { first->set_value(std::move(r)); });
  auto second = std::async(std::launch::async, [&] { return h.ReadDirAll(d->attr.ino, *fh2); });
  h.fs->ReleaseDir(d->attr.ino, *fh1);
  auto all = second.get();
  REQUIRE(all.ok());
  CHECK(all->size() == 2000);
  h.fs->ReleaseDir(d->attr.ino, *fh2);
}
