// Lookup, GetAttr, TTLs, negative caching, hidden names, clashes, markers, inode lifetime.
#include "fs/name_prober.h"
#include "fs_harness.h"

using namespace fstest;

TEST_CASE("Lookup of unlisted names: file, directory, missing, negative cache and its TTL") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 60s;
  options.negative_ttl = 5s;
  // Probes alone: a third name probed would list the root (the listing-for-lookups cases).
  options.list_for_lookups = false;
  Harness h(options);
  h.fake->PutObject("f.bin", "hello");
  h.fake->PutObject("d/x", "x");

  auto f = h.Lookup(kRootInode, "f.bin");
  REQUIRE(f.ok());
  CHECK(!f->attr.is_dir);
  CHECK(f->attr.size == 5);
  CHECK((f->attr.mode & 0777) == 0444);
  CHECK(f->entry_timeout == 60);
  // One LIST answers a lookup: prefix 'name', delimiter '/', no HEAD.
  CHECK(h.fake->count(Op::kHead) == 0);
  CHECK(h.fake->count(Op::kList) == 1);
  for (const auto& r : h.fake->requests()) {
    if (r.op == Op::kList) {
      CHECK(r.key == "f.bin");
      CHECK(r.delimiter == "/");
      CHECK(r.max_keys == kProbePageSize);
    }
  }

  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  CHECK(d->attr.is_dir);
  CHECK((d->attr.mode & S_IFMT) == S_IFDIR);

  auto missing = h.Lookup(kRootInode, "missing");
  REQUIRE(!missing.ok());
  CHECK(missing.status().ToErrno() == ENOENT);
  CHECK(h.fake->count(Op::kHead) == 0);
  CHECK(h.fake->total_count() == 3);

  // Everything is cached now: no requests.
  CHECK(h.Lookup(kRootInode, "f.bin").ok());
  CHECK(h.Lookup(kRootInode, "d").ok());
  CHECK(h.Lookup(kRootInode, "missing").status().ToErrno() == ENOENT);
  CHECK(h.GetAttr(f->attr.ino)->attr.size == 5);
  CHECK(h.fake->total_count() == 3);

  // The missing name appears; the negative entry hides it until negative_ttl passes.
  h.fake->PutObject("missing", "now here");
  h.Advance(4999ms);
  CHECK(h.Lookup(kRootInode, "missing").status().ToErrno() == ENOENT);
  CHECK(h.fake->total_count() == 3);
  h.Advance(1ms);
  auto found = h.Lookup(kRootInode, "missing");
  REQUIRE(found.ok());
  CHECK(found->attr.size == 8);
  CHECK(h.fake->total_count() == 4);

  // Positive entries expire after metadata_ttl: GetAttr revalidates and sees the change.
  h.fake->PutObject("f.bin", "hello, world");
  CHECK(h.GetAttr(f->attr.ino)->attr.size == 5);
  h.Advance(60s);
  auto fresh = h.GetAttr(f->attr.ino);
  REQUIRE(fresh.ok());
  CHECK(fresh->attr.size == 12);
  CHECK(fresh->attr.ino == f->attr.ino);
  CHECK(h.fake->total_count() == 5);
  // And a deleted object's inode is ESTALE once revalidated: the kernel looks the name up
  // again (stat and open do), which says ENOENT.
  h.fake->DeleteObject("f.bin");
  h.Advance(60s);
  CHECK(h.GetAttr(f->attr.ino).status().ToErrno() == ESTALE);
  CHECK(h.Lookup(kRootInode, "f.bin").status().ToErrno() == ENOENT);
}

TEST_CASE("A fully listed directory answers missing names with no request") {
  Harness h;
  h.fake->PutObject("a", "1");
  REQUIRE(h.List(kRootInode).ok());
  h.fake->ResetCounters();
  CHECK(h.Lookup(kRootInode, "nothere").status().ToErrno() == ENOENT);
  // Added after the listing: invisible under the indefinite TTL (the dataset setting).
  h.fake->PutObject("late", "2");
  CHECK(h.Lookup(kRootInode, "late").status().ToErrno() == ENOENT);
  CHECK(h.fake->total_count() == 0);
}

TEST_CASE("Names that cannot be POSIX paths fail without a request") {
  Harness h;
  h.fake->PutObject("secret-outside", "x");
  struct Row {
    std::string name;
    int err;
  };
  const std::vector<Row> rows = {
      {".", ENOENT},
      {"..", ENOENT},
      {"", ENOENT},
      {"a/b", EINVAL},
      {"../secret-outside", EINVAL},
      {std::string("a\0b", 3), EINVAL},
      {std::string(256, 'n'), ENAMETOOLONG},
  };
  for (const auto& row : rows) {
    INFO("name of " << row.name.size() << " bytes: " << row.name);
    auto r = h.Lookup(kRootInode, row.name);
    REQUIRE(!r.ok());
    CHECK(r.status().ToErrno() == row.err);
  }
  CHECK(h.fake->total_count() == 0);
}

TEST_CASE("Hidden keys are invisible and not resolvable, the mount prefix is a jail") {
  FsOptions options = Harness::DefaultOptions();
  options.prefix = "mnt/";
  Harness h(options);
  h.fake->PutObject("mnt/dir/ok.jpg", "ok");
  h.fake->PutObject("mnt/dir//empty-component", "x");
  h.fake->PutObject("mnt/dir/./dot", "x");
  h.fake->PutObject("mnt/dir/../dotdot", "x");
  h.fake->PutObject("mnt/dir/" + std::string(256, 'L'), "x");
  h.fake->PutObject("mnt/dir/" + std::string(256, 'D') + "/x", "x");
  h.fake->PutObject("mnt//leading", "x");
  h.fake->PutObject("secret", "outside the prefix");

  auto root = h.List(kRootInode);
  REQUIRE(root.ok());
  CHECK(EntryNames(*root) == std::vector<std::string>{"dir/"});
  auto dir = h.Lookup(kRootInode, "dir");
  REQUIRE(dir.ok());
  auto entries = h.List(dir->attr.ino);
  REQUIRE(entries.ok());
  CHECK(EntryNames(*entries) == std::vector<std::string>{"ok.jpg"});

  CHECK(h.Lookup(dir->attr.ino, "..").status().ToErrno() == ENOENT);
  CHECK(h.Lookup(dir->attr.ino, ".").status().ToErrno() == ENOENT);
  CHECK(h.Lookup(dir->attr.ino, std::string(256, 'L')).status().ToErrno() == ENAMETOOLONG);
  CHECK(h.Lookup(kRootInode, "..").status().ToErrno() == ENOENT);
  CHECK(h.Lookup(kRootInode, "secret").status().ToErrno() == ENOENT);
  for (const auto& r : h.fake->requests()) {
    CHECK(r.key.rfind("mnt/", 0) == 0);  // nothing outside the prefix was ever asked for
  }
}

TEST_CASE("A file and a directory of the same name show as the directory") {
  Harness h;
  h.fake->PutObject("c", "a file named c");
  h.fake->PutObject("c/inner", "inside");
  SECTION("from a listing") {
    auto root = h.List(kRootInode);
    REQUIRE(root.ok());
    CHECK(EntryNames(*root) == std::vector<std::string>{"c/"});
    auto c = h.Lookup(kRootInode, "c");
    REQUIRE(c.ok());
    CHECK(c->attr.is_dir);
  }
  SECTION("from a probe") {
    auto c = h.Lookup(kRootInode, "c");
    REQUIRE(c.ok());
    CHECK(c->attr.is_dir);
    CHECK(h.fake->count(Op::kHead) == 0);
    CHECK(h.fake->count(Op::kList) == 1);
    auto inner = h.List(c->attr.ino);
    REQUIRE(inner.ok());
    CHECK(EntryNames(*inner) == std::vector<std::string>{"inner"});
  }
}

TEST_CASE("Marker-only directories appear and the marker is not a file") {
  Harness h;
  h.fake->PutObject("empty/", "");
  h.fake->PutObject("nonzero/", "marker with a body");
  h.fake->PutObject("nonzero/file", "f");
  h.fake->PutObject("deep/a/b/", "");
  SECTION("listed") {
    auto root = h.List(kRootInode);
    REQUIRE(root.ok());
    CHECK(EntryNames(*root) == std::vector<std::string>{"deep/", "empty/", "nonzero/"});
    auto empty = h.Lookup(kRootInode, "empty");
    REQUIRE(empty.ok());
    auto inside = h.List(empty->attr.ino);
    REQUIRE(inside.ok());
    CHECK(inside->empty());
    auto nonzero = h.Lookup(kRootInode, "nonzero");
    REQUIRE(nonzero.ok());
    CHECK(EntryNames(*h.List(nonzero->attr.ino)) == std::vector<std::string>{"file"});
  }
  SECTION("probed") {
    auto empty = h.Lookup(kRootInode, "empty");
    REQUIRE(empty.ok());
    CHECK(empty->attr.is_dir);
    auto deep = h.Lookup(kRootInode, "deep");
    REQUIRE(deep.ok());
    auto a = h.Lookup(deep->attr.ino, "a");
    REQUIRE(a.ok());
    auto b = h.Lookup(a->attr.ino, "b");
    REQUIRE(b.ok());
    CHECK(b->attr.is_dir);
  }
}

TEST_CASE("TTL 0 asks the server every time and tells the kernel not to cache") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 0ms;
  options.negative_ttl = 0ms;
  Harness h(options);
  h.fake->PutObject("f", "data");
  REQUIRE(h.List(kRootInode).ok());
  REQUIRE(h.List(kRootInode).ok());
  CHECK(h.fake->count(Op::kList) == 2);
  auto a = h.Lookup(kRootInode, "f");
  REQUIRE(a.ok());
  CHECK(a->entry_timeout == 0);
  CHECK(a->attr_timeout == 0);
  REQUIRE(h.Lookup(kRootInode, "f").ok());
  CHECK(h.fake->count(Op::kList) == 4);
  REQUIRE(h.GetAttr(a->attr.ino).ok());
  CHECK(h.fake->count(Op::kList) == 5);
  auto open = h.Open(a->attr.ino);
  REQUIRE(open.ok());
  CHECK(!open->keep_cache);
  CHECK(h.fake->count(Op::kList) == 6);
  CHECK(h.fake->count(Op::kHead) == 0);
  h.fs->Release(a->attr.ino, open->fh);
}

TEST_CASE("A listing older than metadata_ttl is fetched again on the next OpenDir") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 30s;
  Harness h(options);
  h.fake->PutObject("a", "1");
  REQUIRE(h.List(kRootInode)->size() == 1);
  h.fake->PutObject("b", "2");
  REQUIRE(h.List(kRootInode)->size() == 1);
  CHECK(h.fake->count(Op::kList) == 1);
  h.Advance(30s);
  REQUIRE(h.List(kRootInode)->size() == 2);
  CHECK(h.fake->count(Op::kList) == 2);
}

TEST_CASE("Forget drops inodes when the kernel's count reaches zero") {
  Harness h;
  h.fake->PutObject("d/a", "1");
  h.fake->PutObject("d/b", "2");
  const size_t base = h.fs->stats().inodes;
  auto a1 = h.Lookup(kRootInode, "d");
  REQUIRE(a1.ok());
  auto a2 = h.Lookup(kRootInode, "d");
  CHECK(a2->attr.ino == a1->attr.ino);
  CHECK(h.fs->stats().inodes == base + 1);
  h.fs->Forget(a1->attr.ino, 1);
  REQUIRE(h.GetAttr(a1->attr.ino).ok());
  h.fs->Forget(a1->attr.ino, 1);
  CHECK(h.fs->stats().inodes == base);
  CHECK(h.GetAttr(a1->attr.ino).status().ToErrno() == ENOENT);
  auto again = h.Lookup(kRootInode, "d");
  REQUIRE(again.ok());
  CHECK(again->attr.ino != a1->attr.ino);

  // readdirplus: the adapter adds a reference per entry handed out, before the handle is
  // released; forgetting them drops all.
  auto fh = h.OpenDir(again->attr.ino);
  REQUIRE(fh.ok());
  auto entries = h.ReadDirAll(again->attr.ino, *fh);
  REQUIRE(entries->size() == 2);
  CHECK(h.fs->stats().inodes == base + 3);
  for (const auto& e : *entries) h.fs->AddLookup(e.entry.attr.ino);
  h.fs->ReleaseDir(again->attr.ino, *fh);
  CHECK(h.fs->stats().inodes == base + 3);
  for (const auto& e : *entries) h.fs->Forget(e.entry.attr.ino, 1);
  h.fs->Forget(again->attr.ino, 1);
  CHECK(h.fs->stats().inodes == base);
  CHECK(h.fs->InodeOf("") == kRootInode);
}

TEST_CASE("Listed entries the kernel took no reference to are dropped at ReleaseDir") {
  Harness h;
  for (int i = 0; i < 300; ++i) h.fake->PutObject("d/f" + std::to_string(1000 + i), "x");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  const size_t base = h.fs->stats().inodes;  // root and d

  // Plain readdir (no AddLookup): the 300 inodes live while the handle is open...
  auto fh = h.OpenDir(d->attr.ino);
  REQUIRE(fh.ok());
  auto entries = h.ReadDirAll(d->attr.ino, *fh);
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 300);
  CHECK(h.fs->stats().inodes == base + 300);
  // ... a lookup meanwhile sees the same number as the listing (d_ino == st_ino) ...
  auto looked = h.Lookup(d->attr.ino, "f1007");
  REQUIRE(looked.ok());
  CHECK(looked->attr.ino == (*entries)[7].entry.attr.ino);
  // ... and a readdirplus-style reference keeps one more entry past the release.
  h.fs->AddLookup((*entries)[8].entry.attr.ino);
  h.fs->ReleaseDir(d->attr.ino, *fh);
  CHECK(h.fs->stats().inodes == base + 2);
  CHECK(h.GetAttr((*entries)[7].entry.attr.ino).ok());
  CHECK(h.GetAttr((*entries)[8].entry.attr.ino).ok());
  CHECK(h.GetAttr((*entries)[9].entry.attr.ino).status().ToErrno() == ENOENT);

  // Listing again and again does not grow the table (the memory bug this guards against).
  for (int round = 0; round < 3; ++round) {
    auto again = h.List(d->attr.ino);
    REQUIRE(again.ok());
    CHECK(again->size() == 300);
  }
  CHECK(h.fs->stats().inodes == base + 2);
  h.fs->Forget((*entries)[7].entry.attr.ino, 1);
  h.fs->Forget((*entries)[8].entry.attr.ino, 1);
  CHECK(h.fs->stats().inodes == base);
}

TEST_CASE("Concurrent lookups of one unknown name share one probe") {
  Harness h;
  h.fake->PutObject("x", "1");
  h.fake->Pause();
  std::vector<std::future<Result<Entry>>> futures;
  for (int i = 0; i < 8; ++i) {
    auto p = std::make_shared<std::promise<Result<Entry>>>();
    futures.push_back(p->get_future());
    h.fs->Lookup(kRootInode, "x", [p](Result<Entry> r) { p->set_value(std::move(r)); });
  }
  h.fake->Resume();
  InodeId ino = 0;
  for (auto& f : futures) {
    REQUIRE(f.wait_for(60s) == std::future_status::ready);
    auto r = f.get();
    REQUIRE(r.ok());
    if (ino == 0) ino = r->attr.ino;
    CHECK(r->attr.ino == ino);
  }
  CHECK(h.fake->count(Op::kHead) == 0);
  CHECK(h.fake->count(Op::kList) == 1);
}

TEST_CASE("Answers at hand come on the calling thread, answers that need a request do not") {
  boost::asio::io_context io;  // not running: nothing queued on it can run
  auto fake = std::make_shared<FakeObjectClient>(io);
  fake->PutObject("x", "bytes");
  auto fs = MakeObjectFilesystem(io, fake, Harness::DefaultOptions());
  int inline_answers = 0;
  fs->Lookup(kRootInode, "..", [&](Result<Entry> r) { inline_answers += !r.ok(); });
  fs->GetAttr(kRootInode, [&](Result<AttrReply> r) { inline_answers += r.ok(); });
  fs->OpenDir(kRootInode, [&](Result<uint64_t> r) { inline_answers += r.ok(); });
  fs->Open(kRootInode, O_WRONLY, [&](Result<OpenReply> r) { inline_answers += !r.ok(); });
  CHECK(inline_answers == 4);
  // "x" is not cached: the lookup waits for the client, whose answers come through `io`.
  bool looked_up = false;
  fs->Lookup(kRootInode, "x", [&](Result<Entry> r) { looked_up = r.ok(); });
  CHECK(!looked_up);
  io.run();
  CHECK(looked_up);
  CHECK(fake->total_count() > 0);
}

TEST_CASE("StatFs is synthetic and sensible") {
  Harness h;
  StatFs s = h.fs->GetStatFs();
  CHECK(s.name_max == 255);
  CHECK(s.block_size > 0);
  CHECK(s.blocks >= (1ull << 30));
  CHECK(h.fake->total_count() == 0);
}

TEST_CASE("A probe steps over siblings that sort between the name and its directory") {
  Harness h;
  // "a-..." and "a.txt" sort between "a" and "a/": more of them than one probe page holds.
  for (int i = 0; i < kProbePageSize + 20; ++i) h.fake->PutObject("a-" + std::to_string(i), "s");
  h.fake->PutObject("a.txt", "t");
  SECTION("a directory after a full page of siblings is still found") {
    h.fake->PutObject("a/inside", "x");
    auto a = h.Lookup(kRootInode, "a");
    REQUIRE(a.ok());
    CHECK(a->attr.is_dir);
    CHECK(h.fake->count(Op::kList) == 2);
  }
  SECTION("a file with a full page of siblings and no directory") {
    h.fake->PutObject("a", "file");
    auto a = h.Lookup(kRootInode, "a");
    REQUIRE(a.ok());
    CHECK(!a->attr.is_dir);
    CHECK(a->attr.size == 4);
    CHECK(h.fake->count(Op::kList) == 2);
  }
  SECTION("nothing") { CHECK(h.Lookup(kRootInode, "a").status().ToErrno() == ENOENT); }
  CHECK(h.fake->count(Op::kHead) == 0);
}

TEST_CASE(
    "Under a finite TTL an expired directory in demand is listed again instead of probed name by "
    "name") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 30s;
  Harness h(options);
  for (int i = 0; i < 50; ++i) h.fake->PutObject("d/f" + std::to_string(1000 + i), "data");
  h.fake->PutObject("quiet/a", "1");
  h.fake->PutObject("quiet/b", "2");
  auto d = h.Lookup(kRootInode, "d");
  auto quiet = h.Lookup(kRootInode, "quiet");
  REQUIRE(d.ok());
  REQUIRE(quiet.ok());
  REQUIRE(h.List(d->attr.ino)->size() == 50);  // as ImageFolder's scan does
  REQUIRE(h.List(quiet->attr.ino)->size() == 2);
  // An epoch within the TTL: every open is answered by the listing.
  for (int i = 0; i < 50; ++i) {
    auto f = h.Lookup(d->attr.ino, "f" + std::to_string(1000 + i));
    REQUIRE(f.ok());
    auto open = h.Open(f->attr.ino);
    REQUIRE(open.ok());
    h.fs->Release(f->attr.ino, open->fh);
  }
  REQUIRE(h.Lookup(quiet->attr.ino, "a").ok());
  CHECK(ListingsAndProbes(h, "d/") == std::pair(1, 0));

  // The next epoch outlasts the TTL. The server changed meanwhile.
  h.fake->PutObject("d/f9999", "new");
  h.fake->DeleteObject("d/f1000");
  h.fake->PutObject("d/f1001", "grown data");
  h.Advance(30s);
  for (int i = 1; i < 50; ++i) {
    auto f = h.Lookup(d->attr.ino, "f" + std::to_string(1000 + i));
    REQUIRE(f.ok());
    CHECK(f->attr.size == (i == 1 ? 10u : 4u));
    auto open = h.Open(f->attr.ino);
    REQUIRE(open.ok());
    h.fs->Release(f->attr.ino, open->fh);
  }
  REQUIRE(h.Lookup(d->attr.ino, "f9999").ok());
  CHECK(h.Lookup(d->attr.ino, "f1000").status().ToErrno() == ENOENT);
  // One listing answered all of it (a name missing from it is absent without a probe).
  CHECK(ListingsAndProbes(h, "d/") == std::pair(2, 0));
  CHECK(h.fake->count(Op::kHead) == 0);

  // A directory with one lookup in its last listing's life is probed name by name.
  REQUIRE(h.Lookup(quiet->attr.ino, "b").ok());
  CHECK(ListingsAndProbes(h, "quiet/") == std::pair(1, 1));
}

TEST_CASE("A busy directory's listing is refreshed ahead of its expiry: no lookup waits for it") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 20s;
  Harness h(options);
  for (int i = 0; i < 10; ++i) h.fake->PutObject("d/f" + std::to_string(i), "data");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  REQUIRE(h.List(d->attr.ino)->size() == 10);
  for (int i = 0; i < 5; ++i) REQUIRE(h.Lookup(d->attr.ino, "f" + std::to_string(i)).ok());
  CHECK(ListingsAndProbes(h, "d/") == std::pair(1, 0));
  h.fake->PutObject("d/new", "x");
  h.Advance(16s);  // the last quarter of the listing's life
  // Answered at once from the listing still fresh; a new listing starts behind it.
  h.fake->Pause();
  auto f5 = h.Lookup(d->attr.ino, "f5");
  REQUIRE(f5.ok());
  REQUIRE(h.Lookup(d->attr.ino, "f6").ok());  // the refresh is started only once
  CHECK(h.Lookup(d->attr.ino, "new").status().ToErrno() == ENOENT);
  h.fake->Resume();
  CHECK(Eventually([&] { return ListingsAndProbes(h, "d/") == std::pair(2, 0); }));
  CHECK(Eventually([&] { return h.Lookup(d->attr.ino, "new").ok(); }));
  // Past the first listing's expiry the refreshed one answers everything, with no request.
  h.Advance(8s);
  for (int i = 0; i < 10; ++i) REQUIRE(h.Lookup(d->attr.ino, "f" + std::to_string(i)).ok());
  CHECK(ListingsAndProbes(h, "d/") == std::pair(2, 0));
}

TEST_CASE("A refresh ahead that failed is tried again once the lookups have come back") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 20s;
  Harness h(options, /*failing=*/true);
  for (int i = 0; i < 10; ++i) h.fake->PutObject("d/f" + std::to_string(i), "data");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  REQUIRE(h.List(d->attr.ino)->size() == 10);
  for (int i = 0; i < 3; ++i) REQUIRE(h.Lookup(d->attr.ino, "f" + std::to_string(i)).ok());
  h.Advance(16s);
  h.fail->FailKey("d/");
  REQUIRE(h.Lookup(d->attr.ino, "f3").ok());  // claims the refresh, which fails
  CHECK(Eventually([&] { return h.fail->failures() == 1; }));
  h.fail->ClearFailures();
  // Its demand counts again from nothing (from when the failure's completion released the
  // claim): more than 2 lookups for the page, then one more refresh.
  int lookups = 0;
  CHECK(Eventually([&] {
    REQUIRE(h.Lookup(d->attr.ino, "f" + std::to_string(4 + lookups % 6)).ok());
    ++lookups;
    return ListingsAndProbes(h, "d/").first == 2;
  }));
  CHECK(lookups >= 3);
  CHECK(ListingsAndProbes(h, "d/") == std::pair(2, 0));
}

TEST_CASE("A failed listing again falls back to probing the name") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 30s;
  Harness h(options, /*failing=*/true);
  h.fake->PutObject("d/a", "1");
  h.fake->PutObject("d/b", "2");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  REQUIRE(h.List(d->attr.ino)->size() == 2);
  REQUIRE(h.Lookup(d->attr.ino, "a").ok());
  REQUIRE(h.Lookup(d->attr.ino, "b").ok());
  h.Advance(30s);
  // The listing of "d/" fails (before it reaches the server); the probe of "d/a" does not.
  h.fail->FailKey("d/");
  auto a = h.Lookup(d->attr.ino, "a");
  REQUIRE(a.ok());
  CHECK(h.fail->failures() == 1);
  CHECK(ListingsAndProbes(h, "d/") == std::pair(1, 1));
}

TEST_CASE("DirectoryPath names a directory inode from the root, and nothing else") {
  Harness h;
  h.fake->PutObject("d/e/f.bin", "x");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  auto e = h.Lookup(d->attr.ino, "e");
  REQUIRE(e.ok());
  auto f = h.Lookup(e->attr.ino, "f.bin");
  REQUIRE(f.ok());
  CHECK(h.fs->DirectoryPath(kRootInode) == std::optional<std::string>(""));
  CHECK(h.fs->DirectoryPath(d->attr.ino) == std::optional<std::string>("d"));
  CHECK(h.fs->DirectoryPath(e->attr.ino) == std::optional<std::string>("d/e"));
  CHECK_FALSE(h.fs->DirectoryPath(f->attr.ino).has_value());         // a file
  CHECK_FALSE(h.fs->DirectoryPath(f->attr.ino + 1000).has_value());  // no such inode
}

TEST_CASE("GetAttr of a file open here that another client removed answers with its version") {
  FsOptions options = Harness::DefaultOptions();
  options.metadata_ttl = 60s;
  Harness h(options);
  h.fake->PutObject("f", "12345");
  auto f = h.Lookup(kRootInode, "f");
  REQUIRE(f.ok());
  auto open = h.Open(f->attr.ino);
  REQUIRE(open.ok());
  h.fake->DeleteObject("f");
  h.Advance(61s);
  auto attr = h.GetAttr(f->attr.ino);
  REQUIRE(attr.ok());
  CHECK(attr->attr.size == 5);  // fstat of the open file: what it opened
  h.fs->Release(f->attr.ino, open->fh);
  CHECK(h.GetAttr(f->attr.ino).status().ToErrno() == ESTALE);  // stat: the kernel looks again
}
