// Staged writes (WriteService with a StagingArea): writes at any offset, reads back, truncation,
// existing objects changed in place, renames and unlinks of open files, the staging budget, and
// the switch of a streaming file to staging, against the in-memory fake bucket.
#include <fcntl.h>

#include <thread>

#include "support/eventually.h"
#include "support/temp_dir.h"
#include "upload/staging_area.h"
#include "write_harness.h"

namespace {

using namespace fswrite;
using ossmount::testing::Eventually;
using ossmount::testing::TempDir;

FsOptions WithStreamCopy(uint64_t max_stream_copy) {
  FsOptions o = WritableOptions();
  o.writes.max_stream_copy = max_stream_copy;
  return o;
}

class StagedRig : public WriteRig {
 public:
  explicit StagedRig(uint64_t staging_budget = 64 * MiB, bool failing = false,
                     uint64_t max_stream_copy = 512 * MiB)
      : StagedRig(WithStreamCopy(max_stream_copy), staging_budget, failing) {}
  StagedRig(FsOptions options, uint64_t staging_budget, bool failing = false)
      : WriteRig(std::move(options), failing) {
    auto area = ossmount::upload::StagingArea::Open(dir.path() + "/staging", staging_budget);
    REQUIRE(area.ok());
    staging = *area;
    fs->SetStaging(staging);
  }
  Result<std::string> ReadThrough(InodeId ino, uint64_t fh) { return ReadAll(ino, fh); }
  void Close(InodeId ino, uint64_t fh, Status expected = Status::Ok()) {
    CHECK(Flush(ino, fh).code() == expected.code());
    fs->Release(ino, fh);
  }

  TempDir dir;
  std::shared_ptr<ossmount::upload::StagingArea> staging;
};

std::string Pattern(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + (i * 7 + i / 251) % 23);
  return s;
}

TEST_CASE("Staged: writes at scattered offsets with holes make exactly those bytes") {
  StagedRig h;
  auto c = h.Create(kRootInode, "f");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  std::string expected(300 * KiB, '\0');
  auto put = [&](uint64_t at, const std::string& bytes) {
    REQUIRE(h.Write(ino, c->fh, at, bytes).ok());
    expected.replace(at, bytes.size(), bytes);
  };
  put(200 * KiB, Pattern(100 * KiB, 'a'));  // beyond the end: a hole before it
  put(10, "header");
  put(150 * KiB, Pattern(KiB, 'k'));
  auto attr = h.GetAttr(ino);
  REQUIRE(attr.ok());
  CHECK(attr->attr.size == 300 * KiB);
  h.Close(ino, c->fh);
  CHECK(*h.fake->Data("f") == expected);
  CHECK(Eventually([&] { return h.staging->used() == 0; }));  // gone with the handle
  CHECK(h.WritesSettled());
}

TEST_CASE("Staged: a header rewritten after the body streams no part twice") {
  // The writer that seeks back: a small file moves to staging while its bytes are in memory.
  StagedRig h;
  auto c = h.Create(kRootInode, "model.h5");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  std::string body = Pattern(40 * KiB, 'b');  // under one part: nothing sent yet
  REQUIRE(h.Write(ino, c->fh, 0, std::string(512, '\0')).ok());
  REQUIRE(h.Write(ino, c->fh, 512, body).ok());
  REQUIRE(h.Write(ino, c->fh, 0, "HDR").ok());
  h.Close(ino, c->fh);
  std::string expected = std::string(512, '\0') + body;
  expected.replace(0, 3, "HDR");
  CHECK(*h.fake->Data("model.h5") == expected);
  CHECK(h.fake->count(Op::kUploadPart) == 0);
}

TEST_CASE("Staged: a streamed file past its first part moves to its local copy") {
  StagedRig h;
  auto c = h.Create(kRootInode, "big");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  std::string expected = Pattern(200 * KiB, 'x');
  REQUIRE(h.WriteAll(ino, c->fh, expected).ok());  // parts went up
  REQUIRE(Eventually([&] { return h.fake->count(Op::kUploadPart) > 0; }));
  REQUIRE(h.Write(ino, c->fh, 0, "late").ok());
  expected.replace(0, 4, "late");
  // The streamed upload ends (aborted once its initiation is answered): nothing of it saved.
  CHECK(Eventually([&] { return h.fake->count(Op::kAbort) == 1; }));
  CHECK_FALSE(h.fake->HasObject("big"));
  h.Close(ino, c->fh);
  CHECK(*h.fake->Data("big") == expected);
  CHECK(Eventually([&] { return h.WritesSettled(); }));
  CHECK(h.fake->OpenUploadCount() == 0);
  CHECK(Eventually([&] { return h.staging->used() == 0; }));
}

TEST_CASE("Staged: a streamed file with no room for a local copy cannot go back, fails whole") {
  StagedRig h(/*staging_budget=*/64 * KiB);  // the copy stops at 64 KiB
  auto c = h.Create(kRootInode, "big");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.WriteAll(ino, c->fh, Pattern(200 * KiB, 'x')).ok());  // parts went up
  CHECK(h.staging->used() == 0);                                  // the partial copy was dropped
  CHECK(h.Write(ino, c->fh, 0, "late").status().code() == ErrorCode::kNotSupported);
  CHECK(h.Flush(ino, c->fh).code() == ErrorCode::kNotSupported);
  h.fs->Release(ino, c->fh);
  CHECK_FALSE(h.fake->HasObject("big"));
  CHECK(Eventually([&] { return h.WritesSettled(); }));
}

TEST_CASE("Staged: an existing object changed in the middle keeps every other byte") {
  StagedRig h;
  const std::string original = Pattern(1 * MiB + 123, 'o');
  h.fake->PutObject("data.bin", original);
  auto e = h.Lookup(kRootInode, "data.bin");
  REQUIRE(e.ok());
  const InodeId ino = e->attr.ino;
  auto o = h.OpenAs(ino, O_WRONLY);  // dd conv=notrunc
  REQUIRE(o.ok());
  const uint64_t gets_before = h.fake->count(Op::kGet);
  const std::string patch = Pattern(64 * KiB, 'p');
  REQUIRE(h.Write(ino, o->fh, 512 * KiB, patch).ok());
  h.Close(ino, o->fh);
  // The patch is one whole part: nothing of the object was downloaded.
  CHECK(h.fake->count(Op::kGet) == gets_before);
  std::string expected = original;
  expected.replace(512 * KiB, patch.size(), patch);
  CHECK(*h.fake->Data("data.bin") == expected);
  // 17 parts of 64 KiB: the one written goes up, the 16 others are copied on the server.
  CHECK(h.fake->count(Op::kUploadPart) == 1);
  CHECK(h.fake->count(Op::kUploadPartCopy) == 16);
}

TEST_CASE("Staged: only the parts a change touches go up again, at each completion") {
  StagedRig h;
  const std::string original = Pattern(10 * 64 * KiB, 'o');  // 10 parts
  h.fake->PutObject("ckpt.bin", original);
  auto e = h.Lookup(kRootInode, "ckpt.bin");
  REQUIRE(e.ok());
  const InodeId ino = e->attr.ino;
  auto o = h.OpenAs(ino, O_RDWR);
  REQUIRE(o.ok());
  std::string expected = original;
  auto put = [&](uint64_t at, const std::string& bytes) {
    REQUIRE(h.Write(ino, o->fh, at, bytes).ok());
    expected.replace(at, bytes.size(), bytes);
  };
  const uint64_t gets_before = h.fake->count(Op::kGet);
  put(64 * KiB - 1, "ab");  // across the boundary of parts 1 and 2
  put(5 * 64 * KiB + 7, "c");
  REQUIRE(h.Fsync(ino, o->fh).ok());
  CHECK(*h.fake->Data("ckpt.bin") == expected);
  CHECK(h.fake->count(Op::kUploadPart) == 3);
  CHECK(h.fake->count(Op::kUploadPartCopy) == 7);
  // Only the rest of the three parts sent was fetched: one range in each of parts 1 and 2,
  // two in part 6.
  CHECK(h.fake->count(Op::kGet) - gets_before == 4);
  // The next completion copies from the version just made.
  put(9 * 64 * KiB, "tail");
  REQUIRE(h.Fsync(ino, o->fh).ok());
  CHECK(*h.fake->Data("ckpt.bin") == expected);
  CHECK(h.fake->count(Op::kUploadPart) == 4);
  CHECK(h.fake->count(Op::kUploadPartCopy) == 16);
  // Shrunk, then grown: what is past the shrunk end is zeros now, never copied back.
  SetAttrRequest shrink;
  shrink.size = 3 * 64 * KiB + 10;
  REQUIRE(h.SetAttr(ino, o->fh, shrink).ok());
  SetAttrRequest grow;
  grow.size = 5 * 64 * KiB;
  REQUIRE(h.SetAttr(ino, o->fh, grow).ok());
  expected.resize(3 * 64 * KiB + 10);
  expected.resize(5 * 64 * KiB, '\0');
  h.Close(ino, o->fh);
  CHECK(*h.fake->Data("ckpt.bin") == expected);
  CHECK(h.fake->count(Op::kUploadPartCopy) == 16 + 3);  // parts 1 to 3; 4 and 5 changed
}

TEST_CASE("Staged: a run of unchanged parts goes as few copies as the copy size allows") {
  FsOptions o = WithStreamCopy(512 * MiB);
  o.writes.upload.copy_part_size = 256 * KiB;  // four parts of 64 KiB
  StagedRig big(o, 64 * MiB);
  const std::string original = Pattern(10 * 64 * KiB, 'o');
  big.fake->PutObject("ckpt.bin", original);
  auto e = big.Lookup(kRootInode, "ckpt.bin");
  REQUIRE(e.ok());
  auto w = big.OpenAs(e->attr.ino, O_WRONLY);
  REQUIRE(w.ok());
  REQUIRE(big.Write(e->attr.ino, w->fh, 5 * 64 * KiB + 7, "z").ok());
  REQUIRE(big.Flush(e->attr.ino, w->fh).ok());
  big.fs->Release(e->attr.ino, w->fh);
  std::string expected = original;
  expected[5 * 64 * KiB + 7] = 'z';
  CHECK(*big.fake->Data("ckpt.bin") == expected);
  // [0, 256K) and [256K, 320K) copied, part 6 sent, [384K, 640K) copied.
  CHECK(big.fake->count(Op::kUploadPart) == 1);
  CHECK(big.fake->count(Op::kUploadPartCopy) == 3);
}

TEST_CASE("Staged: an object replaced after every byte was fetched here goes up whole") {
  StagedRig h;
  const std::string original = Pattern(4 * 64 * KiB, 'o');
  h.fake->PutObject("shared.bin", original);
  auto e = h.Lookup(kRootInode, "shared.bin");
  REQUIRE(e.ok());
  auto o = h.OpenAs(e->attr.ino, O_RDWR);
  REQUIRE(o.ok());
  REQUIRE(h.Write(e->attr.ino, o->fh, 0, "mine").ok());
  auto read = h.ReadThrough(e->attr.ino, o->fh);  // fetches every byte
  REQUIRE(read.ok());
  CHECK(read->substr(4) == original.substr(4));
  h.fake->PutObject("shared.bin", Pattern(4 * 64 * KiB, 'x'));  // another client
  h.Close(e->attr.ino, o->fh);
  // The copies were refused (the object is another one now): the file went up whole, as a
  // file changed without copies would have, and no part of the other version got in.
  std::string expected = original;
  expected.replace(0, 4, "mine");
  CHECK(*h.fake->Data("shared.bin") == expected);
  CHECK(h.fake->count(Op::kUploadPart) == 1 + 4);
  // The refused upload is aborted while the whole one goes on: settled soon after.
  CHECK(Eventually([&] { return h.WritesSettled(); }));
}

TEST_CASE("Staged: an existing object opened for writing and not changed costs nothing") {
  StagedRig h;
  h.fake->PutObject("keep", "unchanged");
  auto e = h.Lookup(kRootInode, "keep");
  REQUIRE(e.ok());
  const uint64_t gets = h.fake->count(Op::kGet);
  auto o = h.OpenAs(e->attr.ino, O_RDWR);
  REQUIRE(o.ok());
  REQUIRE(h.Fsync(e->attr.ino, o->fh).ok());
  h.Close(e->attr.ino, o->fh);
  CHECK(h.fake->count(Op::kGet) == gets);
  CHECK(h.fake->count(Op::kPut) == 0);
  CHECK(*h.fake->Data("keep") == "unchanged");
}

TEST_CASE("Staged: an append to an existing object, as open(path, 'a') does it") {
  StagedRig h;
  h.fake->PutObject("train.log", "epoch 1\n");
  auto e = h.Lookup(kRootInode, "train.log");
  REQUIRE(e.ok());
  auto o = h.OpenAs(e->attr.ino, O_WRONLY | O_APPEND);
  REQUIRE(o.ok());
  // The kernel puts an O_APPEND write at the size it holds.
  REQUIRE(h.Write(e->attr.ino, o->fh, e->attr.size, "epoch 2\n").ok());
  h.Close(e->attr.ino, o->fh);
  CHECK(*h.fake->Data("train.log") == "epoch 1\nepoch 2\n");
}

TEST_CASE("Staged: a file being written reads back through its own and another descriptor") {
  StagedRig h;
  auto c = h.Create(kRootInode, "f", O_RDWR | O_CREAT | O_TRUNC);
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.Write(ino, c->fh, 0, "hello world").ok());
  auto own = h.ReadThrough(ino, c->fh);
  REQUIRE(own.ok());
  CHECK(*own == "hello world");
  auto reader = h.Open(ino);
  REQUIRE(reader.ok());
  REQUIRE(h.Write(ino, c->fh, 6, "there").ok());
  auto other = h.ReadAll(ino, reader->fh);
  REQUIRE(other.ok());
  CHECK(*other == "hello there");
  h.Close(ino, c->fh);
  // The reader goes on with what it opened.
  auto after = h.ReadAll(ino, reader->fh);
  REQUIRE(after.ok());
  CHECK(*after == "hello there");
  h.fs->Release(ino, reader->fh);
  CHECK(*h.fake->Data("f") == "hello there");
  CHECK(h.fs->stats().write_handles == 0);
}

TEST_CASE("Staged: ftruncate and truncate, up and down, of open and closed files") {
  StagedRig h;
  SECTION("an open file") {
    auto c = h.Create(kRootInode, "f");
    REQUIRE(c.ok());
    const InodeId ino = c->entry.attr.ino;
    REQUIRE(h.Write(ino, c->fh, 0, "0123456789").ok());
    SetAttrRequest shrink;
    shrink.size = 4;
    auto a = h.SetAttr(ino, c->fh, shrink);
    REQUIRE(a.ok());
    CHECK(a->attr.size == 4);
    SetAttrRequest grow;
    grow.size = 8;
    REQUIRE(h.SetAttr(ino, c->fh, grow).ok());
    h.Close(ino, c->fh);
    CHECK(*h.fake->Data("f") == std::string("0123") + std::string(4, '\0'));
  }
  SECTION("a closed file, down and up") {
    h.fake->PutObject("g", "abcdefgh");
    auto e = h.Lookup(kRootInode, "g");
    REQUIRE(e.ok());
    SetAttrRequest shrink;
    shrink.size = 3;
    auto a = h.SetAttr(e->attr.ino, 0, shrink);
    REQUIRE(a.ok());
    CHECK(a->attr.size == 3);
    CHECK(*h.fake->Data("g") == "abc");
    SetAttrRequest grow;
    grow.size = 5;
    REQUIRE(h.SetAttr(e->attr.ino, 0, grow).ok());
    CHECK(*h.fake->Data("g") == std::string("abc") + std::string(2, '\0'));
    CHECK(h.fs->stats().write_handles == 0);
  }
}

TEST_CASE("Staged: the staging budget gives ENOSPC at the write and nothing partial") {
  StagedRig h(128 * KiB);
  auto c = h.Create(kRootInode, "f");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.Write(ino, c->fh, 100 * KiB, Pattern(20 * KiB, 'a')).ok());
  CHECK(h.Write(ino, c->fh, 120 * KiB, Pattern(20 * KiB, 'b')).status().code() ==
        ErrorCode::kNoSpace);
  CHECK(h.Flush(ino, c->fh).code() == ErrorCode::kNoSpace);
  h.fs->Release(ino, c->fh);
  CHECK_FALSE(h.fake->HasObject("f"));
  CHECK(Eventually([&] { return h.staging->used() == 0; }));
  // The mount goes on: the next file fits again.
  auto next = h.Create(kRootInode, "g");
  REQUIRE(next.ok());
  REQUIRE(h.Write(next->entry.attr.ino, next->fh, 1, "x").ok());
  h.Close(next->entry.attr.ino, next->fh);
  CHECK(*h.fake->Data("g") == std::string("\0x", 2));
}

TEST_CASE("Staged: a file renamed while open is saved under its new name only") {
  StagedRig h;
  SECTION("a new file") {
    auto c = h.Create(kRootInode, "tmp");
    REQUIRE(c.ok());
    const InodeId ino = c->entry.attr.ino;
    REQUIRE(h.Write(ino, c->fh, 0, "first").ok());
    REQUIRE(h.Rename(kRootInode, "tmp", kRootInode, "final").ok());
    REQUIRE(h.Write(ino, c->fh, 5, " second").ok());
    h.Close(ino, c->fh);
    CHECK(*h.fake->Data("final") == "first second");
    CHECK_FALSE(h.fake->HasObject("tmp"));
    CHECK(h.Lookup(kRootInode, "tmp").status().code() == ErrorCode::kNotFound);
  }
  SECTION("an existing object being changed") {
    h.fake->PutObject("old", "0123456789");
    auto e = h.Lookup(kRootInode, "old");
    REQUIRE(e.ok());
    auto o = h.OpenAs(e->attr.ino, O_RDWR);
    REQUIRE(o.ok());
    REQUIRE(h.Rename(kRootInode, "old", kRootInode, "new").ok());
    REQUIRE(h.Write(e->attr.ino, o->fh, 2, "ab").ok());
    h.Close(e->attr.ino, o->fh);
    CHECK(*h.fake->Data("new") == "01ab456789");
    CHECK_FALSE(h.fake->HasObject("old"));
  }
}

TEST_CASE("Staged: a file unlinked while open keeps working and is never saved") {
  StagedRig h;
  auto c = h.Create(kRootInode, "scratch", O_RDWR | O_CREAT | O_TRUNC);
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.Write(ino, c->fh, 0, "temporary").ok());
  REQUIRE(h.Unlink(kRootInode, "scratch").ok());
  CHECK(h.Lookup(kRootInode, "scratch").status().code() == ErrorCode::kNotFound);
  REQUIRE(h.Write(ino, c->fh, 9, " data").ok());
  auto back = h.ReadThrough(ino, c->fh);
  REQUIRE(back.ok());
  CHECK(*back == "temporary data");
  // The name is free for a new file meanwhile.
  auto again = h.Create(kRootInode, "scratch");
  REQUIRE(again.ok());
  REQUIRE(h.Write(again->entry.attr.ino, again->fh, 0, "new").ok());
  h.Close(again->entry.attr.ino, again->fh);
  h.Close(ino, c->fh);
  CHECK(*h.fake->Data("scratch") == "new");
  CHECK(h.fake->count(Op::kPut) == 1);
}

TEST_CASE("Staged: an object replaced before the bytes a save needs were fetched fails it") {
  StagedRig h;
  h.fake->PutObject("shared", "version one");
  auto e = h.Lookup(kRootInode, "shared");
  REQUIRE(e.ok());
  auto o = h.OpenAs(e->attr.ino, O_WRONLY);
  REQUIRE(o.ok());
  REQUIRE(h.Write(e->attr.ino, o->fh, 0, "V").ok());  // "Version one" needs "ersion one"
  h.fake->PutObject("shared", "version two, longer");
  // The save cannot be made without the old bytes: ESTALE, and theirs stays.
  CHECK(h.Flush(e->attr.ino, o->fh).code() == ErrorCode::kPreconditionFailed);
  h.fs->Release(e->attr.ino, o->fh);
  CHECK(*h.fake->Data("shared") == "version two, longer");
}

TEST_CASE("Staged: a failed completion leaves the old object and the next one resends all") {
  StagedRig h(64 * MiB, /*failing=*/true);
  h.fake->PutObject("f", "old bytes");
  auto e = h.Lookup(kRootInode, "f");
  REQUIRE(e.ok());
  auto o = h.OpenAs(e->attr.ino, O_RDWR);
  REQUIRE(o.ok());
  REQUIRE(h.Write(e->attr.ino, o->fh, 0, "new").ok());
  h.fail->RefuseNext(Op::kPut, 1);
  CHECK_FALSE(h.Fsync(e->attr.ino, o->fh).ok());
  CHECK(*h.fake->Data("f") == "old bytes");
  REQUIRE(h.Fsync(e->attr.ino, o->fh).ok());
  CHECK(*h.fake->Data("f") == "new bytes");
  h.Close(e->attr.ino, o->fh);
}

TEST_CASE("Staged: without a staging directory the old refusals stand") {
  WriteRig h;
  h.fake->PutObject("f", "abc");
  auto e = h.Lookup(kRootInode, "f");
  REQUIRE(e.ok());
  auto o = h.OpenAs(e->attr.ino, O_WRONLY);
  REQUIRE(o.ok());
  CHECK(h.Write(e->attr.ino, o->fh, 0, "x").status().code() == ErrorCode::kNotSupported);
  h.fs->Release(e->attr.ino, o->fh);
  CHECK(*h.fake->Data("f") == "abc");
  auto c = h.Create(kRootInode, "g");
  REQUIRE(c.ok());
  REQUIRE(h.Write(c->entry.attr.ino, c->fh, 0, "abc").ok());
  CHECK(h.Write(c->entry.attr.ino, c->fh, 0, "x").status().code() == ErrorCode::kNotSupported);
  h.fs->Release(c->entry.attr.ino, c->fh);
  CHECK_FALSE(h.fake->HasObject("g"));
}

}  // namespace

TEST_CASE("Staged: a large read of an object changed in place fetches pieces at once") {
  StagedRig h;
  const std::string original = Pattern(40 * MiB + 77, 'L');  // five pieces and a bit
  h.fake->PutObject("big.bin", original);
  auto e = h.Lookup(kRootInode, "big.bin");
  REQUIRE(e.ok());
  const InodeId ino = e->attr.ino;
  auto o = h.OpenAs(ino, O_WRONLY);
  REQUIRE(o.ok());
  REQUIRE(h.Write(ino, o->fh, 20 * MiB, "patched").ok());
  const uint64_t gets_before = h.fake->count(Op::kGet);
  // With every answer held, the read asks for several pieces before any arrives.
  h.fake->Pause();
  Result<std::string> got = Status(ErrorCode::kInternal, "not read");
  std::thread reader([&] { got = h.Read(ino, o->fh, 0, 24 * MiB); });
  CHECK(Eventually([&] { return h.fake->count(Op::kGet) >= gets_before + 2; }));
  h.fake->Resume();
  reader.join();
  REQUIRE(got.ok());
  std::string expected_read = original.substr(0, 24 * MiB);
  expected_read.replace(20 * MiB, 7, "patched");
  CHECK(*got == expected_read);
  h.Close(ino, o->fh);
  std::string expected = original;
  expected.replace(20 * MiB, 7, "patched");
  CHECK(*h.fake->Data("big.bin") == expected);
}

TEST_CASE("Staged: a streamed file past --max-stream-copy keeps no copy, and cannot go back") {
  StagedRig h(/*staging_budget=*/64 * MiB, /*failing=*/false, /*max_stream_copy=*/64 * KiB);
  auto c = h.Create(kRootInode, "big");
  REQUIRE(c.ok());
  const InodeId ino = c->entry.attr.ino;
  REQUIRE(h.WriteAll(ino, c->fh, Pattern(200 * KiB, 'x')).ok());  // parts went up
  CHECK(h.staging->used() == 0);                                  // the copy went at 64 KiB
  CHECK(h.Write(ino, c->fh, 0, "late").status().code() == ErrorCode::kNotSupported);
  h.fs->Release(ino, c->fh);
  CHECK_FALSE(h.fake->HasObject("big"));
  CHECK(Eventually([&] { return h.WritesSettled(); }));
}
