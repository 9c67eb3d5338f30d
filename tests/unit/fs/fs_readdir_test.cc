// Directory handles: stable offsets, snapshots, pagination, single-flight listings.
#include "fs_harness.h"

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
