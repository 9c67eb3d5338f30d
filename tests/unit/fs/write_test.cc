// The filesystem's file writes (object_writes.cc): create, write, flush, fsync, release and
// setattr, the write handle's rules (sequential writes, one writer per path, whole objects
// only), the write policies, and what lookups and listings show of files being written.
#include <linux/falloc.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <future>

#include "fs/busy_retry.h"
#include "write_harness.h"

using namespace fswrite;

TEST_CASE("Writes: create, write and flush put the file in the bucket byte for byte") {
  struct Row {
    size_t size;
    size_t piece;
  };
  const Row rows[] = {
      {1, 1},
      {1000, 100},
      {64 * KiB - 1, 4096},
      {3 * 64 * KiB + 17, 4096},
      {5 * 64 * KiB, 128 * KiB},
  };
  for (const Row& row : rows) {
    INFO("size " << row.size << " in writes of " << row.piece);
    WriteRig h;
    const std::string data = Content(row.size, static_cast<uint32_t>(row.size));
    auto c = h.Create(kRootInode, "file.bin");
    REQUIRE(c.ok());
    const InodeId ino = c->entry.attr.ino;
    CHECK(ino != kRootInode);
    CHECK(c->fh != 0);
    CHECK(c->entry.attr.size == 0);
    CHECK(S_ISREG(c->entry.attr.mode));
    CHECK(h.fs->stats().write_handles == 1);
    REQUIRE(h.WriteAll(ino, c->fh, data, row.piece).ok());
    REQUIRE(h.Flush(ino, c->fh).ok());
    REQUIRE(h.fake->Data("file.bin").has_value());
    CHECK(*h.fake->Data("file.bin") == data);
    if (row.size < 64 * KiB) {
      CHECK(h.fake->count(Op::kPut) == 1);
      CHECK(h.fake->count(Op::kInitiate) == 0);
    } else {
      CHECK(h.fake->count(Op::kPut) == 0);
      CHECK(h.fake->count(Op::kComplete) == 1);
      CHECK(h.fake->count(Op::kUploadPart) == (row.size + 64 * KiB - 1) / (64 * KiB));
    }
    h.fs->Release(ino, c->fh);
    CHECK(Eventually([&] { return h.WritesSettled(); }));
    CHECK(h.fs->stats().write_handles == 0);

    // The mount shows what it wrote: its size, and its bytes read back.
    auto e = h.Lookup(kRootInode, "file.bin");
    REQUIRE(e.ok());
    CHECK(e->attr.ino == ino);
    CHECK(e->attr.size == row.size);
    CHECK(h.ReadFile(ino) == data);
  }
}

TEST_CASE("Writes: a read-only mount refuses every change with kReadOnly and sends nothing") {
  WriteRig h(Harness::DefaultOptions());
  h.fake->PutObject("f", "data");
  h.fake->PutObject("d/x", "1");
  auto f = h.Lookup(kRootInode, "f");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(f.ok());
  REQUIRE(d.ok());
  h.fake->ResetCounters();

  CHECK(h.Create(kRootInode, "new").status().code() == ErrorCode::kReadOnly);
  CHECK(h.MakeDir(kRootInode, "newdir").status().code() == ErrorCode::kReadOnly);
  CHECK(h.RemoveDir(kRootInode, "d").code() == ErrorCode::kReadOnly);
  CHECK(h.Unlink(kRootInode, "f").code() == ErrorCode::kReadOnly);
  CHECK(h.Rename(kRootInode, "f", kRootInode, "g").code() == ErrorCode::kReadOnly);
  SetAttrRequest truncate;
  truncate.size = 0;
  CHECK(h.SetAttr(f->attr.ino, 0, truncate).status().code() == ErrorCode::kReadOnly);
  for (int flags :
       {O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC, O_WRONLY | O_TRUNC, O_WRONLY | O_APPEND}) {
    INFO("open flags " << flags);
    CHECK(h.OpenAs(f->attr.ino, flags).status().code() == ErrorCode::kReadOnly);
  }
  CHECK(h.fake->total_count() == 0);
  CHECK(h.fs->GetStatFs().blocks_free == 0);
  // Reading still works.
  CHECK(h.ReadFile(f->attr.ino) == "data");
}

TEST_CASE("Writes: a writable mount reports free space") {
  WriteRig h;
  const StatFs s = h.fs->GetStatFs();
  CHECK(s.blocks_free > 0);
  CHECK(s.files_free > 0);
}

TEST_CASE("Writes: Lookup and GetAttr of a file being written give its size so far") {
  WriteRig h;
  const std::string data = Content(100000, 1);
  auto c = h.Create(kRootInode, "growing");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  auto e = h.Lookup(kRootInode, "growing");
  REQUIRE(e.ok());
  CHECK(e->attr.ino == ino);
  CHECK(e->attr.size == 0);

  REQUIRE(h.WriteAll(ino, c->fh, data.substr(0, 10000)).ok());
  CHECK(h.Lookup(kRootInode, "growing")->attr.size == 10000);
  CHECK(h.GetAttr(ino)->attr.size == 10000);
  REQUIRE(h.WriteAll(ino, c->fh, data.substr(10000), 4096, 10000).ok());  // past a part
  CHECK(h.Lookup(kRootInode, "growing")->attr.size == 100000);
  auto a = h.GetAttr(ino);
  REQUIRE(a.ok());
  CHECK(a->attr.size == 100000);
  CHECK(a->attr_timeout == 0);  // it changes with every write
  CHECK_FALSE(h.fake->HasObject("growing"));

  REQUIRE(h.Flush(ino, c->fh).ok());
  h.fs->Release(ino, c->fh);
  CHECK(h.GetAttr(ino)->attr.size == 100000);
  CHECK(h.Lookup(kRootInode, "growing")->attr.size == 100000);
}

TEST_CASE("Writes: a cached listing shows a created file at once and drops an unlinked one") {
  FsOptions o = WritableOptions();
  o.list_ahead = 0;  // no background listing: every LIST below is the test's own
  WriteRig h(o);
  h.fake->PutObject("a", "aaaa");
  h.fake->PutObject("b", "bb");
  h.fake->PutObject("d/x", "x");
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"a", "b", "d/"});
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  CHECK(Names(h.List(d->attr.ino)) == std::vector<std::string>{"x"});
  const uint64_t lists = h.fake->count(Op::kList);
  const uint64_t heads = h.fake->count(Op::kHead);

  auto c = h.Create(kRootInode, "c");
  REQUIRE(c.ok());
  REQUIRE(h.WriteAll(c->entry.attr.ino, c->fh, std::string(500, 'c')).ok());
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"a", "b", "c", "d/"});
  auto y = h.Create(d->attr.ino, "y");
  REQUIRE(y.ok());
  CHECK(Names(h.List(d->attr.ino)) == std::vector<std::string>{"x", "y"});

  REQUIRE(h.Flush(c->entry.attr.ino, c->fh).ok());
  h.fs->Release(c->entry.attr.ino, c->fh);
  auto root = h.List(kRootInode);
  REQUIRE(root.ok());
  const DirEntry* ce = FindEntry(*root, "c");
  REQUIRE(ce);
  CHECK(ce->entry.attr.size == 500);

  REQUIRE(h.Unlink(kRootInode, "a").ok());
  CHECK_FALSE(h.fake->HasObject("a"));
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"b", "c", "d/"});
  CHECK(h.Lookup(kRootInode, "a").status().code() == ErrorCode::kNotFound);
  // All answered from the cached listings (indefinite TTL): no request asked about names.
  CHECK(h.fake->count(Op::kList) == lists);
  CHECK(h.fake->count(Op::kHead) == heads);
  h.fs->Release(y->entry.attr.ino, y->fh);
}

TEST_CASE("Writes: a directory first listed while a file is written in it shows the file") {
  WriteRig h;
  h.fake->PutObject("old", "1");
  auto c = h.Create(kRootInode, "new");  // the root was never listed
  REQUIRE(c.ok());
  REQUIRE(h.WriteAll(c->entry.attr.ino, c->fh, std::string(100, 'n')).ok());
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"new", "old"});
  REQUIRE(h.Flush(c->entry.attr.ino, c->fh).ok());
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"new", "old"});
  h.fs->Release(c->entry.attr.ino, c->fh);
}

TEST_CASE("Writes: a write at another offset than the next fails and nothing is saved") {
  struct Row {
    const char* what;
    size_t first;     // bytes written in order first
    uint64_t offset;  // where the bad write goes
  };
  const Row rows[] = {
      {"a gap in a small file", 1000, 2000},
      {"a rewrite of a small file", 1000, 500},
      {"a gap after parts went up", 3 * 64 * KiB, 3 * 64 * KiB + 1},
      {"a rewrite of a part that went up", 3 * 64 * KiB, 0},
      {"a first write not at 0", 0, 4096},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    WriteRig h;
    auto c = h.Create(kRootInode, "f");
    REQUIRE(c.ok());
    const InodeId ino = c->entry.attr.ino;
    REQUIRE(h.WriteAll(ino, c->fh, Content(row.first, 2)).ok());
    auto bad = h.Write(ino, c->fh, row.offset, "oops");
    CHECK(bad.status().code() == ErrorCode::kNotSupported);
    // The handle failed: later writes in order fail too, and so do close and fsync.
    CHECK(h.Write(ino, c->fh, row.first, "more").status().code() == ErrorCode::kNotSupported);
    CHECK(h.Flush(ino, c->fh).code() == ErrorCode::kNotSupported);
    CHECK(h.Fsync(ino, c->fh).code() == ErrorCode::kNotSupported);
    h.fs->Release(ino, c->fh);
    CHECK_FALSE(h.fake->HasObject("f"));
    CHECK(h.fake->count(Op::kPut) == 0);
    CHECK(h.fake->count(Op::kComplete) == 0);
    CHECK(Eventually([&] { return h.WritesSettled(); }));
    // A new name that failed does not exist.
    CHECK(h.Lookup(kRootInode, "f").status().code() == ErrorCode::kNotFound);
  }
}

TEST_CASE("Writes: an existing object opened without O_TRUNC is not written and stays") {
  for (int flags : {O_WRONLY, O_RDWR, O_WRONLY | O_APPEND}) {
    INFO("flags " << flags);
    WriteRig h;
    const std::string etag = h.fake->PutObject("f", "original");
    auto e = h.Lookup(kRootInode, "f");
    REQUIRE(e.ok());
    auto o = h.OpenAs(e->attr.ino, flags);
    REQUIRE(o.ok());
    CHECK(h.Write(e->attr.ino, o->fh, 0, "new").status().code() == ErrorCode::kNotSupported);
    CHECK(h.Write(e->attr.ino, o->fh, 8, "tail").status().code() == ErrorCode::kNotSupported);
    CHECK(h.Flush(e->attr.ino, o->fh).ok());
    h.fs->Release(e->attr.ino, o->fh);
    CHECK(*h.fake->Data("f") == "original");
    CHECK(h.fake->Info("f")->etag == etag);
    CHECK(h.fake->count(Op::kPut) == 0);
    CHECK(h.fake->count(Op::kInitiate) == 0);
    CHECK(h.ReadFile(e->attr.ino) == "original");
  }
}

TEST_CASE("Writes: an existing empty object opened without O_TRUNC can be written") {
  WriteRig h;
  h.fake->PutObject("empty", "");
  auto e = h.Lookup(kRootInode, "empty");
  REQUIRE(e.ok());
  SECTION("written: replaced at close") {
    auto o = h.OpenAs(e->attr.ino, O_WRONLY);
    REQUIRE(o.ok());
    REQUIRE(h.WriteAll(e->attr.ino, o->fh, "filled").ok());
    REQUIRE(h.Flush(e->attr.ino, o->fh).ok());
    h.fs->Release(e->attr.ino, o->fh);
    CHECK(*h.fake->Data("empty") == "filled");
  }
  SECTION("not written: left alone") {
    auto o = h.OpenAs(e->attr.ino, O_WRONLY);
    REQUIRE(o.ok());
    REQUIRE(h.Flush(e->attr.ino, o->fh).ok());
    h.fs->Release(e->attr.ino, o->fh);
    CHECK(Eventually([&] { return h.fs->stats().write_handles == 0; }));
    CHECK(h.fake->count(Op::kPut) == 0);
    CHECK(*h.fake->Data("empty") == "");
  }
}

TEST_CASE("Writes: O_TRUNC replaces an existing object at close") {
  WriteRig h;
  const std::string old_etag = h.fake->PutObject("f", "the old contents, longer");
  auto e = h.Lookup(kRootInode, "f");
  REQUIRE(e.ok());
  CHECK(h.ReadFile(e->attr.ino) == "the old contents, longer");
  const std::string data = Content(2 * 64 * KiB + 5, 3);
  auto o = h.OpenAs(e->attr.ino, O_WRONLY | O_TRUNC);
  REQUIRE(o.ok());
  REQUIRE(h.WriteAll(e->attr.ino, o->fh, data, 4096).ok());
  CHECK(*h.fake->Data("f") == "the old contents, longer");  // until the close
  REQUIRE(h.Flush(e->attr.ino, o->fh).ok());
  h.fs->Release(e->attr.ino, o->fh);
  CHECK(*h.fake->Data("f") == data);
  CHECK(h.fake->Info("f")->etag != old_etag);
  CHECK(h.Lookup(kRootInode, "f")->attr.size == data.size());
  CHECK(h.GetAttr(e->attr.ino)->attr.size == data.size());
  CHECK(h.ReadFile(e->attr.ino) == data);
}

TEST_CASE("Writes: O_TRUNC without a write makes the object empty at release") {
  WriteRig h;
  h.fake->PutObject("f", "old");
  auto e = h.Lookup(kRootInode, "f");
  REQUIRE(e.ok());
  auto o = h.OpenAs(e->attr.ino, O_WRONLY | O_TRUNC);
  REQUIRE(o.ok());
  SetAttrRequest to_zero;  // what the kernel sends for O_TRUNC with atomic_o_trunc off
  to_zero.size = 0;
  CHECK(h.SetAttr(e->attr.ino, o->fh, to_zero).ok());
  REQUIRE(h.Flush(e->attr.ino, o->fh).ok());
  CHECK(*h.fake->Data("f") == "old");  // a close before the first write does not complete
  h.fs->Release(e->attr.ino, o->fh);
  CHECK(Eventually([&] { return h.fake->Data("f") == std::optional<std::string>(""); }));
  CHECK(h.fake->count(Op::kPut) == 1);
}

TEST_CASE("Writes: a close from another process does not complete the file, fsync does") {
  WriteRig h;
  const Caller parent{100, 0, 0};
  const Caller child{200, 0, 0};
  auto c = h.Create(kRootInode, "f", O_WRONLY | O_CREAT, parent);
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.WriteAll(ino, c->fh, "first half, ").ok());
  REQUIRE(h.Flush(ino, c->fh, child).ok());
  CHECK_FALSE(h.fake->HasObject("f"));
  CHECK(h.fake->count(Op::kPut) == 0);
  // The parent goes on writing after its child closed the inherited descriptor.
  REQUIRE(h.WriteAll(ino, c->fh, "second half", 128 * KiB, 12).ok());
  REQUIRE(h.Fsync(ino, c->fh).ok());
  CHECK(*h.fake->Data("f") == "first half, second half");
  REQUIRE(h.Flush(ino, c->fh, parent).ok());
  h.fs->Release(ino, c->fh);
  CHECK(Eventually([&] { return h.fs->stats().write_handles == 0; }));
  CHECK(h.fake->count(Op::kPut) == 1);
}

TEST_CASE("Writes: bytes written after an fsync continue the file, completed at close") {
  // PyTorch's distributed checkpoint fsyncs its metadata file while Python still buffers the
  // file's tail, which the close then writes.
  WriteRig h;
  auto c = h.Create(kRootInode, "f");
  REQUIRE(c.ok());
  REQUIRE(h.WriteAll(c->entry.attr.ino, c->fh, "saved").ok());
  REQUIRE(h.Fsync(c->entry.attr.ino, c->fh).ok());
  CHECK(*h.fake->Data("f") == "saved");
  REQUIRE(h.WriteAll(c->entry.attr.ino, c->fh, " and more", 128 * KiB, 5).ok());
  CHECK(h.Lookup(kRootInode, "f")->attr.size == 14);  // being written again
  REQUIRE(h.Flush(c->entry.attr.ino, c->fh).ok());
  CHECK(*h.fake->Data("f") == "saved and more");
  h.fs->Release(c->entry.attr.ino, c->fh);
  CHECK(Eventually([&] { return h.WritesSettled(); }));
  CHECK(h.fake->count(Op::kPut) == 2);
  CHECK(h.Lookup(kRootInode, "f")->attr.size == 14);
}

TEST_CASE("Writes: a close before the first write completes a new file, empty") {
  SECTION("never written: an empty object at that close") {
    WriteRig h;
    auto c = h.Create(kRootInode, "f");
    REQUIRE(c.ok());
    REQUIRE(h.Flush(c->entry.attr.ino, c->fh).ok());
    CHECK(*h.fake->Data("f") == "");
    CHECK(h.Lookup(kRootInode, "f")->attr.size == 0);
    h.fs->Release(c->entry.attr.ino, c->fh);
    CHECK(Eventually([&] { return h.fs->stats().write_handles == 0; }));
    CHECK(h.fake->count(Op::kPut) == 1);
  }
  SECTION("written after that close (a shell's redirection): saved by the next close") {
    WriteRig h;
    auto c = h.Create(kRootInode, "f");
    REQUIRE(c.ok());
    REQUIRE(h.Flush(c->entry.attr.ino, c->fh).ok());
    REQUIRE(h.WriteAll(c->entry.attr.ino, c->fh, "echo output\n").ok());
    REQUIRE(h.Flush(c->entry.attr.ino, c->fh).ok());
    CHECK(*h.fake->Data("f") == "echo output\n");
    h.fs->Release(c->entry.attr.ino, c->fh);
    CHECK(Eventually([&] { return h.fs->stats().write_handles == 0; }));
    CHECK(h.fake->count(Op::kPut) == 2);
  }
  SECTION("an O_TRUNC rewrite closed before its first write keeps the old object until then") {
    WriteRig h;
    h.fake->PutObject("f", "old bytes");
    auto e = h.Lookup(kRootInode, "f");
    REQUIRE(e.ok());
    auto o = h.Open(e->attr.ino, O_WRONLY | O_TRUNC);
    REQUIRE(o.ok());
    REQUIRE(h.Flush(e->attr.ino, o->fh).ok());
    CHECK(*h.fake->Data("f") == "old bytes");
    REQUIRE(h.WriteAll(e->attr.ino, o->fh, "new").ok());
    REQUIRE(h.Flush(e->attr.ino, o->fh).ok());
    CHECK(*h.fake->Data("f") == "new");
    h.fs->Release(e->attr.ino, o->fh);
  }
}

TEST_CASE("Writes: a file being written cannot be opened for reading until it is released") {
  WriteRig h;
  auto c = h.Create(kRootInode, "f");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.WriteAll(ino, c->fh, "contents").ok());
  CHECK(h.OpenAs(ino, O_RDONLY).status().code() == ErrorCode::kBusy);
  REQUIRE(h.Flush(ino, c->fh).ok());
  // Complete, but not released: still its writer's, even after an fsync.
  REQUIRE(h.Fsync(ino, c->fh).ok());
  CHECK(*h.fake->Data("f") == "contents");
  // Its opener closed it (the flush): an open waits for the release the kernel sends next,
  // instead of failing.
  auto opened = std::make_shared<std::promise<Result<OpenReply>>>();
  auto answer = opened->get_future();
  h.fs->Open(ino, O_RDONLY, [opened](Result<OpenReply> r) { opened->set_value(std::move(r)); });
  CHECK(answer.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);
  h.fs->Release(ino, c->fh);
  REQUIRE(answer.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto r = answer.get();
  REQUIRE(r.ok());
  auto read = h.ReadAll(ino, r->fh);
  REQUIRE(read.ok());
  CHECK(*read == "contents");
  h.fs->Release(ino, r->fh);
}

TEST_CASE("Writes: a writer still open is kBusy at once, a closed one's release is waited for") {
  WriteRig h;
  auto c = h.Create(kRootInode, "f");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.WriteAll(ino, c->fh, "x").ok());
  REQUIRE(h.Fsync(ino, c->fh).ok());
  const auto start = std::chrono::steady_clock::now();
  // Without a staging directory, an open file that has streamed cannot follow a rename.
  CHECK(h.Rename(kRootInode, "f", kRootInode, "g").code() == ErrorCode::kBusy);
  CHECK(h.Create(kRootInode, "f").status().code() == ErrorCode::kBusy);
  // No grace for a writer that was not closed: far below kBusyGrace for the two.
  CHECK(std::chrono::steady_clock::now() - start < kBusyGrace);
  REQUIRE(h.Flush(ino, c->fh).ok());
  auto renamed = std::make_shared<std::promise<Status>>();
  auto answer = renamed->get_future();
  h.fs->Rename(kRootInode, "f", kRootInode, "g", 0,
               [renamed](Status s) { renamed->set_value(std::move(s)); });
  h.fs->Release(ino, c->fh);
  REQUIRE(answer.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(answer.get().ok());
  CHECK(*h.fake->Data("g") == "x");
  CHECK_FALSE(h.fake->HasObject("f"));
}

TEST_CASE("Writes: one writer per path: a second Create or open for writing is kBusy") {
  WriteRig h;
  auto c = h.Create(kRootInode, "f");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.WriteAll(ino, c->fh, "one").ok());
  CHECK(h.Create(kRootInode, "f").status().code() == ErrorCode::kBusy);
  CHECK(h.OpenAs(ino, O_WRONLY | O_TRUNC).status().code() == ErrorCode::kBusy);
  CHECK(h.Rename(kRootInode, "f", kRootInode, "g").code() == ErrorCode::kBusy);
  CHECK(h.fs->stats().write_handles == 1);

  REQUIRE(h.Flush(ino, c->fh).ok());
  h.fs->Release(ino, c->fh);
  CHECK(*h.fake->Data("f") == "one");
  // Closed: a new writer replaces it.
  auto again = h.Create(kRootInode, "f");
  REQUIRE(again.ok());
  CHECK(again->entry.attr.ino == ino);
  REQUIRE(h.WriteAll(ino, again->fh, "two").ok());
  REQUIRE(h.Flush(ino, again->fh).ok());
  h.fs->Release(ino, again->fh);
  CHECK(*h.fake->Data("f") == "two");
}

TEST_CASE("Writes: Create refuses directories, O_EXCL on existing names and bad names") {
  WriteRig h;
  h.fake->PutObject("d/x", "1");
  h.fake->PutObject("f", "1");
  auto f = h.Lookup(kRootInode, "f");
  REQUIRE(f.ok());
  CHECK(h.Create(kRootInode, "d").status().code() == ErrorCode::kIsDirectory);
  CHECK(h.Create(kRootInode, "f", O_WRONLY | O_CREAT | O_EXCL).status().code() ==
        ErrorCode::kAlreadyExists);
  CHECK(h.Create(f->attr.ino, "child").status().code() == ErrorCode::kNotDirectory);
  CHECK(h.Create(kRootInode, std::string(256, 'n')).status().code() == ErrorCode::kNameTooLong);
  CHECK(h.Create(kRootInode, "..").status().code() == ErrorCode::kInvalidArgument);
  CHECK(h.fake->count(Op::kPut) == 0);
  CHECK(h.fs->stats().write_handles == 0);
  CHECK(*h.fake->Data("f") == "1");
}

TEST_CASE("Writes: --no-overwrite refuses to replace, and guards the completion too") {
  FsOptions o = WritableOptions();
  o.writes.allow_overwrite = false;
  WriteRig h(o);
  h.fake->PutObject("f", "keep me");
  auto f = h.Lookup(kRootInode, "f");
  REQUIRE(f.ok());
  CHECK(h.Create(kRootInode, "f").status().code() == ErrorCode::kAccessDenied);
  CHECK(h.OpenAs(f->attr.ino, O_WRONLY | O_TRUNC).status().code() == ErrorCode::kAccessDenied);

  // A new name is written with the service's no-overwrite guard.
  h.WriteFile(kRootInode, "g", "new file");
  CHECK(*h.fake->Data("g") == "new file");
  bool guarded = false;
  for (const auto& r : h.fake->requests()) {
    if (r.op == Op::kPut && r.key == "g") guarded = r.forbid_overwrite;
  }
  CHECK(guarded);
  CHECK(h.Rename(kRootInode, "g", kRootInode, "f").code() == ErrorCode::kAccessDenied);

  // Another mount takes the name while this one writes it: the close says EEXIST.
  auto c = h.Create(kRootInode, "h");
  REQUIRE(c.ok());
  REQUIRE(h.WriteAll(c->entry.attr.ino, c->fh, "mine").ok());
  h.fake->PutObject("h", "theirs");
  CHECK(h.Flush(c->entry.attr.ino, c->fh).code() == ErrorCode::kAlreadyExists);
  h.fs->Release(c->entry.attr.ino, c->fh);
  CHECK(*h.fake->Data("h") == "theirs");
  CHECK(*h.fake->Data("f") == "keep me");
  CHECK(*h.fake->Data("g") == "new file");
}

TEST_CASE("Writes: --no-delete refuses unlink, rmdir and rename") {
  FsOptions o = WritableOptions();
  o.writes.allow_delete = false;
  WriteRig h(o);
  h.fake->PutObject("f", "1");
  h.fake->PutObject("d/", "");
  REQUIRE(h.Lookup(kRootInode, "f").ok());
  h.fake->ResetCounters();
  CHECK(h.Unlink(kRootInode, "f").code() == ErrorCode::kAccessDenied);
  CHECK(h.RemoveDir(kRootInode, "d").code() == ErrorCode::kAccessDenied);
  CHECK(h.Rename(kRootInode, "f", kRootInode, "g").code() == ErrorCode::kAccessDenied);
  CHECK(h.fake->count(Op::kDelete) == 0);
  CHECK(h.fake->count(Op::kCopy) == 0);
  CHECK(h.fake->HasObject("f"));
  CHECK(h.fake->HasObject("d/"));
  // Writing new files is still allowed.
  h.WriteFile(kRootInode, "new", "n");
  CHECK(*h.fake->Data("new") == "n");
}

TEST_CASE("Writes: a failed upload is returned by close, fsync and every later call") {
  struct Row {
    const char* what;
    size_t size;
    Op op;
    std::optional<int> part;
  };
  const Row rows[] = {
      {"the single PUT refused", 1000, Op::kPut, std::nullopt},
      {"a part refused", 3 * 64 * KiB + 1, Op::kUploadPart, 2},
      {"Complete refused", 3 * 64 * KiB + 1, Op::kComplete, std::nullopt},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    WriteRig h(WritableOptions(), /*failing=*/true);
    h.fail->RefuseNext(row.op, 1, std::nullopt, row.part);
    auto c = h.Create(kRootInode, "f");
    REQUIRE(c.ok());
    const InodeId ino = c->entry.attr.ino;
    Status written = h.WriteAll(ino, c->fh, Content(row.size, 4), 4096);
    // A part refused while the file is written may already fail a write.
    if (!written.ok()) CHECK(written.code() == ErrorCode::kServerError);
    CHECK(h.Flush(ino, c->fh).code() == ErrorCode::kServerError);
    CHECK(h.Fsync(ino, c->fh).code() == ErrorCode::kServerError);
    CHECK(h.Flush(ino, c->fh).code() == ErrorCode::kServerError);
    CHECK(h.Write(ino, c->fh, row.size, "x").status().code() != ErrorCode::kOk);
    h.fs->Release(ino, c->fh);
    CHECK_FALSE(h.fake->HasObject("f"));
    CHECK(Eventually([&] { return h.WritesSettled(); }));
    CHECK(h.Lookup(kRootInode, "f").status().code() == ErrorCode::kNotFound);
  }
}

TEST_CASE("Writes: a failed replacement leaves the old object, which the mount still shows") {
  WriteRig h(WritableOptions(), /*failing=*/true);
  h.fake->PutObject("f", "old contents");
  auto e = h.Lookup(kRootInode, "f");
  REQUIRE(e.ok());
  h.fail->RefuseNext(Op::kPut, 1);
  auto o = h.OpenAs(e->attr.ino, O_WRONLY | O_TRUNC);
  REQUIRE(o.ok());
  REQUIRE(h.WriteAll(e->attr.ino, o->fh, "new").ok());
  CHECK(h.Flush(e->attr.ino, o->fh).code() == ErrorCode::kServerError);
  h.fs->Release(e->attr.ino, o->fh);
  CHECK(*h.fake->Data("f") == "old contents");
  auto after = h.Lookup(kRootInode, "f");
  REQUIRE(after.ok());
  CHECK(after->attr.size == 12);
  CHECK(h.ReadFile(e->attr.ino) == "old contents");
}

TEST_CASE("Writes: SetAttr truncates only to the size written so far") {
  WriteRig h;
  h.fake->PutObject("other", "abc");
  auto other = h.Lookup(kRootInode, "other");
  REQUIRE(other.ok());
  auto c = h.Create(kRootInode, "f");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.WriteAll(ino, c->fh, std::string(100, 'a')).ok());

  SetAttrRequest same;
  same.size = 100;
  auto r = h.SetAttr(ino, c->fh, same);
  REQUIRE(r.ok());
  CHECK(r->attr.size == 100);
  for (uint64_t size : {0, 50, 101}) {
    SetAttrRequest req;
    req.size = size;
    CHECK(h.SetAttr(ino, c->fh, req).status().code() == ErrorCode::kNotSupported);
  }
  SetAttrRequest mode;  // accepted (cp -p), not stored
  mode.mode = 0600;
  mode.times = true;
  CHECK(h.SetAttr(ino, c->fh, mode).ok());
  CHECK(h.SetAttr(ino, 0, mode).ok());  // by path, no handle
  SetAttrRequest shrink;
  shrink.size = 1;
  CHECK(h.SetAttr(other->attr.ino, 0, shrink).status().code() == ErrorCode::kNotSupported);
  CHECK(*h.fake->Data("other") == "abc");

  REQUIRE(h.Flush(ino, c->fh).ok());
  h.fs->Release(ino, c->fh);
  CHECK(*h.fake->Data("f") == std::string(100, 'a'));
}

TEST_CASE("Writes: a write waits while the budget is full and parts are in flight") {
  FsOptions o = WritableOptions();
  o.max_memory = 128 * KiB;
  WriteRig h(o);
  auto c = h.Create(kRootInode, "big");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  const std::string data = Content(6 * 64 * KiB, 5);
  REQUIRE(h.WriteAll(ino, c->fh, data.substr(0, 64 * KiB)).ok());  // initiated, part 1 sent
  CHECK(Eventually([&] {
    return h.fake->count(Op::kUploadPart) == 1 && h.fake->in_flight() == 0 && h.BudgetUsed() == 0;
  }));

  h.fake->Pause();
  std::atomic<int> answered{0};
  uint64_t at = 64 * KiB;
  for (int i = 0; i < 3; ++i, at += 64 * KiB) {
    h.fs->Write(ino, c->fh, static_cast<off_t>(at), data.data() + at, 64 * KiB,
                [&answered](Result<size_t> r) {
                  CHECK(r.ok());
                  ++answered;
                });
  }
  // Three parts in flight, 192 KiB buffered over a 128 KiB budget: the last write is held.
  CHECK(answered.load() == 2);
  h.fake->Resume();
  CHECK(Eventually([&] { return answered.load() == 3; }));
  REQUIRE(h.WriteAll(ino, c->fh, data.substr(at), 64 * KiB, at).ok());
  REQUIRE(h.Flush(ino, c->fh).ok());
  h.fs->Release(ino, c->fh);
  CHECK(*h.fake->Data("big") == data);
  CHECK(Eventually([&] { return h.WritesSettled(); }));
}

TEST_CASE("Writes: a file still open when the session ends is not saved, an fsynced one stays") {
  WriteRig h;
  // A save cut short: nothing under its key, its multipart upload aborted.
  auto c = h.Create(kRootInode, "f");
  REQUIRE(c.ok());
  const std::string big(200 * KiB, 'x');  // three 64 KiB parts sent, the rest buffered
  REQUIRE(h.WriteAll(c->entry.attr.ino, c->fh, big).ok());
  // What an fsync completed stays; the bytes written after it are not added.
  auto g = h.Create(kRootInode, "g");
  REQUIRE(g.ok());
  REQUIRE(h.WriteAll(g->entry.attr.ino, g->fh, "synced").ok());
  REQUIRE(h.Fsync(g->entry.attr.ino, g->fh).ok());
  REQUIRE(h.WriteAll(g->entry.attr.ino, g->fh, " and more", 128 * KiB, 6).ok());
  h.fs->EndSession();
  CHECK(Eventually([&] { return h.WritesSettled() && h.fake->OpenUploadCount() == 0; }));
  CHECK_FALSE(h.fake->HasObject("f"));
  CHECK(*h.fake->Data("g") == "synced");
  CHECK(h.fs->stats().write_handles == 0);
}

TEST_CASE("Writes: a name another mount took during the write stays visible after EEXIST") {
  FsOptions o = WritableOptions();
  o.writes.allow_overwrite = false;
  WriteRig h(o);
  auto c = h.Create(kRootInode, "h");
  REQUIRE(c.ok());
  REQUIRE(h.WriteAll(c->entry.attr.ino, c->fh, "mine").ok());
  h.fake->PutObject("h", "theirs");
  CHECK(h.Flush(c->entry.attr.ino, c->fh).code() == ErrorCode::kAlreadyExists);
  h.fs->Release(c->entry.attr.ino, c->fh);
  // The object under the name is the other mount's; this mount must not say there is none
  // (under the indefinite TTL it would say so forever).
  auto e = h.Lookup(kRootInode, "h");
  REQUIRE(e.ok());
  CHECK(e->attr.size == 6);
  CHECK(h.ReadFile(e->attr.ino) == "theirs");
}

TEST_CASE("Writes: an fsync before the first write does not hide the writes after it") {
  // An existing empty object opened without O_TRUNC, fsynced before it is written (a log or
  // lock file), then written and closed: the mount must show what was saved.
  WriteRig h;
  h.fake->PutObject("log", "");
  auto e = h.Lookup(kRootInode, "log");
  REQUIRE(e.ok());
  const InodeId ino = e->attr.ino;
  auto o = h.OpenAs(ino, O_WRONLY | O_APPEND);
  REQUIRE(o.ok());
  REQUIRE(h.Fsync(ino, o->fh).ok());
  CHECK(h.fake->count(Op::kPut) == 0);  // nothing written: left alone
  // Still this handle's file: nobody else may write or read it meanwhile.
  auto second = h.OpenAs(ino, O_WRONLY | O_TRUNC);
  CHECK(second.status().code() == ErrorCode::kBusy);
  REQUIRE(h.WriteAll(ino, o->fh, "first line\n").ok());
  REQUIRE(h.Flush(ino, o->fh).ok());
  h.fs->Release(ino, o->fh);
  CHECK(*h.fake->Data("log") == "first line\n");
  CHECK(h.Lookup(kRootInode, "log")->attr.size == 11);
  CHECK(h.GetAttr(ino)->attr.size == 11);
  if (second.ok()) h.fs->Release(ino, second->fh);
}

TEST_CASE("Writes: after a failure every later write returns the first error") {
  WriteRig h(WritableOptions(), /*failing=*/true);
  h.fail->RefuseNext(Op::kPut, 1, Status(ErrorCode::kAccessDenied, "denied by policy"));
  auto c = h.Create(kRootInode, "f");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.WriteAll(ino, c->fh, "abc").ok());
  CHECK(h.Fsync(ino, c->fh).code() == ErrorCode::kAccessDenied);
  CHECK(h.Write(ino, c->fh, 3, "next").status().code() == ErrorCode::kAccessDenied);
  // A write elsewhere than the next offset gets the first error too, not a new one.
  CHECK(h.Write(ino, c->fh, 100, "elsewhere").status().code() == ErrorCode::kAccessDenied);
  CHECK(h.Flush(ino, c->fh).code() == ErrorCode::kAccessDenied);
  h.fs->Release(ino, c->fh);
}

// --- What a write may replace is asked of the server (docs/SEMANTICS.md, "Writing") --------

TEST_CASE("Writes: O_EXCL and creates without O_TRUNC ask the server, not the cache") {
  WriteRig h;  // indefinite TTL
  h.fake->PutObject("empty", "");
  CHECK(Names(h.List(kRootInode)) == std::vector<std::string>{"empty"});
  // Another client PUTs after this mount listed the root: the cache says "absent".
  const std::string theirs = Content(100 * KiB, 40);
  h.fake->PutObject("leader", theirs);
  CHECK(h.Create(kRootInode, "leader", O_WRONLY | O_CREAT | O_EXCL).status().code() ==
        ErrorCode::kAlreadyExists);
  // touch: opened as it is, with its size, refusing writes; closing it changes nothing.
  auto t = h.Create(kRootInode, "leader", O_WRONLY | O_CREAT);
  REQUIRE(t.ok());
  CHECK(t->entry.attr.size == theirs.size());
  CHECK(h.Write(t->entry.attr.ino, t->fh, 0, "x").status().code() == ErrorCode::kNotSupported);
  REQUIRE(h.Flush(t->entry.attr.ino, t->fh).ok());
  h.fs->Release(t->entry.attr.ino, t->fh);
  CHECK(*h.fake->Data("leader") == theirs);
  CHECK(h.fake->count(Op::kPut) == 0);
  // An open for writing without O_TRUNC of an object that grew on the server: as it is too.
  auto empty = h.Lookup(kRootInode, "empty");
  REQUIRE(empty.ok());
  h.fake->PutObject("empty", "now 7 bytes");
  auto o = h.OpenAs(empty->attr.ino, O_WRONLY);
  REQUIRE(o.ok());
  CHECK(h.Write(empty->attr.ino, o->fh, 0, "x").status().code() == ErrorCode::kNotSupported);
  h.fs->Release(empty->attr.ino, o->fh);
  CHECK(*h.fake->Data("empty") == "now 7 bytes");
}

TEST_CASE("Writes: a create the server said was new completes with forbid-overwrite, once") {
  WriteRig h;
  auto c = h.Create(kRootInode, "f", O_WRONLY | O_CREAT | O_EXCL);
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.WriteAll(ino, c->fh, "first").ok());
  REQUIRE(h.Fsync(ino, c->fh).ok());
  // Bytes after the fsync continue the file: its own object, replaced without the guard.
  REQUIRE(h.Write(ino, c->fh, 5, " second").ok());
  REQUIRE(h.Flush(ino, c->fh).ok());
  h.fs->Release(ino, c->fh);
  CHECK(*h.fake->Data("f") == "first second");
  std::vector<bool> guarded;
  for (const auto& r : h.fake->requests()) {
    if (r.op == Op::kPut && r.key == "f") guarded.push_back(r.forbid_overwrite);
  }
  CHECK(guarded == std::vector<bool>{true, false});

  // Raced: another client takes the name before the close, which fails with EEXIST.
  auto raced = h.Create(kRootInode, "g", O_WRONLY | O_CREAT | O_EXCL);
  REQUIRE(raced.ok());
  REQUIRE(h.WriteAll(raced->entry.attr.ino, raced->fh, Content(3 * 64 * KiB, 41)).ok());
  h.fake->PutObject("g", "theirs");
  CHECK(h.Flush(raced->entry.attr.ino, raced->fh).code() == ErrorCode::kAlreadyExists);
  h.fs->Release(raced->entry.attr.ino, raced->fh);
  CHECK(*h.fake->Data("g") == "theirs");
  CHECK(Eventually([&] { return h.WritesSettled(); }));
  // O_CREAT|O_TRUNC replaces whatever is there, as POSIX truncation does: no guard.
  h.WriteFile(kRootInode, "g", "mine after all");
  CHECK(*h.fake->Data("g") == "mine after all");
}

TEST_CASE("Writes: a rewrite while readers have the file open gets an inode of its own") {
  WriteRig h;
  const std::string old = Content(300 * KiB, 42);
  h.fake->PutObject("f", old);
  auto e = h.Lookup(kRootInode, "f");
  REQUIRE(e.ok());
  const InodeId old_ino = e->attr.ino;
  auto reader = h.Open(old_ino);
  REQUIRE(reader.ok());
  CHECK(h.Read(old_ino, reader->fh, 0, 10).value() == old.substr(0, 10));
  // The kernel sends the O_TRUNC open to the inode its dentry names: ESTALE makes it look
  // the path up again, which finds a new inode.
  CHECK(h.OpenAs(old_ino, O_WRONLY | O_TRUNC).status().code() == ErrorCode::kPreconditionFailed);
  auto again = h.Lookup(kRootInode, "f");
  REQUIRE(again.ok());
  const InodeId new_ino = again->attr.ino;
  CHECK(new_ino != old_ino);
  auto w = h.OpenAs(new_ino, O_WRONLY | O_TRUNC);
  REQUIRE(w.ok());
  REQUIRE(h.WriteAll(new_ino, w->fh, "new").ok());
  // The reader keeps the old file: its size, its bytes.
  CHECK(h.GetAttr(old_ino)->attr.size == old.size());
  CHECK(h.ReadAll(old_ino, reader->fh).value() == old);
  // A new reader waits for the writer: the path is its until released.
  CHECK(h.OpenAs(new_ino, O_RDONLY).status().code() == ErrorCode::kBusy);
  REQUIRE(h.Flush(new_ino, w->fh).ok());
  h.fs->Release(new_ino, w->fh);
  h.fs->Release(old_ino, reader->fh);
  CHECK(h.ReadFile(new_ino) == "new");
  CHECK(*h.fake->Data("f") == "new");
}

TEST_CASE("Writes: a version opened while another is open here gets an inode of its own") {
  FsOptions o = WritableOptions();
  o.metadata_ttl = std::chrono::milliseconds(0);
  WriteRig h(o);
  h.fake->PutObject("f", "version one");
  auto e = h.Lookup(kRootInode, "f");
  REQUIRE(e.ok());
  auto first = h.Open(e->attr.ino);
  REQUIRE(first.ok());
  h.fake->PutObject("f", "version two!");
  CHECK(h.Open(e->attr.ino).status().code() == ErrorCode::kPreconditionFailed);
  auto again = h.Lookup(kRootInode, "f");
  REQUIRE(again.ok());
  CHECK(again->attr.ino != e->attr.ino);
  CHECK(h.ReadFile(again->attr.ino) == "version two!");
  CHECK(h.GetAttr(e->attr.ino)->attr.size == std::string("version one").size());
  h.fs->Release(e->attr.ino, first->fh);
}

TEST_CASE("Writes: reading through a descriptor open for writing is kNotSupported") {
  WriteRig h;
  auto c = h.Create(kRootInode, "f", O_RDWR | O_CREAT | O_TRUNC);
  REQUIRE(c.ok());
  REQUIRE(h.WriteAll(c->entry.attr.ino, c->fh, "abc").ok());
  CHECK(h.Read(c->entry.attr.ino, c->fh, 0, 3).status().code() == ErrorCode::kNotSupported);
  REQUIRE(h.Flush(c->entry.attr.ino, c->fh).ok());
  h.fs->Release(c->entry.attr.ino, c->fh);
  CHECK(*h.fake->Data("f") == "abc");
}

TEST_CASE("Writes: posix_fallocate gives a file being written its size, the rest zeros") {
  WriteRig h;
  auto c = h.Create(kRootInode, "f");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  auto fallocate = [&](int mode, off_t offset, off_t length) {
    return h.WaitStatus([&](StatusCallback cb) {
      h.fs->Fallocate(ino, c->fh, mode, offset, length, std::move(cb));
    });
  };
  CHECK(fallocate(FALLOC_FL_KEEP_SIZE, 0, 1 * MiB).ok());  // preallocation only
  CHECK(h.GetAttr(ino)->attr.size == 0);
  CHECK(fallocate(0, 0, 200 * KiB).ok());
  CHECK(h.GetAttr(ino)->attr.size == 200 * KiB);
  CHECK(fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 10).code() ==
        ErrorCode::kNotSupported);
  // Written in order from the start, as far as the writer goes; zeros after.
  const std::string data = Content(70 * KiB, 43);
  REQUIRE(h.WriteAll(ino, c->fh, data).ok());
  REQUIRE(h.Flush(ino, c->fh).ok());
  h.fs->Release(ino, c->fh);
  CHECK(*h.fake->Data("f") == data + std::string(200 * KiB - data.size(), '\0'));
}

TEST_CASE("Writes: mknod makes an empty regular file and refuses other kinds") {
  WriteRig h;
  auto make = [&](const std::string& name, uint32_t mode) {
    return h.Wait<Entry>([&](Callback<Entry> cb) {
      h.fs->MakeNode(kRootInode, name, mode, Opener(), std::move(cb));
    });
  };
  auto f = make("regular", S_IFREG | 0644);
  REQUIRE(f.ok());
  CHECK(f->attr.size == 0);
  CHECK(Eventually([&] { return h.fake->Data("regular") == std::optional<std::string>(""); }));
  CHECK(make("regular", S_IFREG | 0644).status().code() == ErrorCode::kAlreadyExists);
  CHECK(make("fifo", S_IFIFO | 0644).status().code() == ErrorCode::kNotPermitted);
  CHECK(make("dev", S_IFCHR | 0644).status().code() == ErrorCode::kNotPermitted);
  CHECK_FALSE(h.fake->HasObject("fifo"));
}

TEST_CASE("Writes: names whose keys the service would refuse are refused at create") {
  FsOptions o = WritableOptions();
  o.prefix = std::string(800, 'p') + "/";
  WriteRig h(o);
  auto d = h.MakeDir(kRootInode, std::string(200, 'd'));
  REQUIRE(d.ok());
  // 801 + 201 + 30 bytes: over the 1,023 a key may have.
  CHECK(h.Create(d->attr.ino, std::string(30, 'f')).status().code() == ErrorCode::kNameTooLong);
  CHECK(h.Create(d->attr.ino, std::string(10, 'f')).ok());
  WriteRig root;
  CHECK(root.Create(kRootInode, "bad \xff\xfe utf-8").status().code() ==
        ErrorCode::kInvalidArgument);
  CHECK(root.Create(kRootInode, "\\leading").status().code() == ErrorCode::kInvalidArgument);
  CHECK(root.MakeDir(kRootInode, "\\dir").status().code() == ErrorCode::kInvalidArgument);
  CHECK(root.Create(kRootInode, "caf\xc3\xa9 ok").ok());
  CHECK(root.fake->count(Op::kPut) == 0);
}
