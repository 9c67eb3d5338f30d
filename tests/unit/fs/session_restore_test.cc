// ObjectFilesystem::RecordSession / RestoreSession: a second filesystem over the same bucket,
// given what the first recorded, serves the first one's nodes and handles (what a daemon
// restarted on the same FUSE connection does).
#include <unistd.h>

#include <cstdio>
#include <set>

#include "write_harness.h"

using namespace fswrite;

namespace {

struct RecordFiles {
  std::string nodes = "/tmp/session_restore_test." + std::to_string(getpid()) + ".nodes";
  std::string handles = "/tmp/session_restore_test." + std::to_string(getpid()) + ".handles";
  std::string listings = "/tmp/session_restore_test." + std::to_string(getpid()) + ".listings";
  ~RecordFiles() {
    std::remove(nodes.c_str());
    std::remove(handles.c_str());
    std::remove(listings.c_str());
  }
};

// Records what `h` serves; the listing records are returned so that a test can wait for them
// (ListingRecords::Flush) before the "death".
std::shared_ptr<meta::ListingRecords> Record(Harness& h, const RecordFiles& files) {
  auto nodes = RecordLog::Create(files.nodes);
  auto handles = RecordLog::Create(files.handles);
  auto listings = meta::ListingRecords::Create(files.listings, {});
  REQUIRE(nodes.ok());
  REQUIRE(handles.ok());
  REQUIRE(listings.ok());
  std::shared_ptr<meta::ListingRecords> kept = std::move(*listings);
  h.fs->RecordSession(std::move(*nodes), std::make_shared<HandleRecords>(std::move(*handles)),
                      kept);
  return kept;
}

ObjectFilesystem::RestoredSession Restore(Harness& h, const RecordFiles& files) {
  auto nodes = RecordLog::Load(files.nodes);
  auto handles = RecordLog::Load(files.handles);
  auto listings = RecordLog::Load(files.listings);
  REQUIRE(nodes.ok());
  REQUIRE(handles.ok());
  REQUIRE(listings.ok());
  return h.fs->RestoreSession(*nodes, HandleRecords::Decode(*handles),
                              meta::ListingRecords::Decode(*listings));
}

}  // namespace

TEST_CASE("RestoreSession: open files read their version, directories list, writers get EIO") {
  RecordFiles files;
  const std::string small = Content(10 * 1024, 1), large = Content(3 * 1024 * 1024, 2);
  FsOptions options = WritableOptions();
  options.small_file_threshold = 64 * 1024;
  WriteRig h(options);
  Record(h, files);
  h.fake->PutObject("d/small.bin", small);
  h.fake->PutObject("d/large.bin", large);
  for (int i = 0; i < 300; ++i) h.fake->PutObject("d/many/f" + std::to_string(i), "x");
  const InodeId dir_ino = h.Lookup(kRootInode, "d")->attr.ino;
  const InodeId small_ino = h.Lookup(dir_ino, "small.bin")->attr.ino;
  const InodeId large_ino = h.Lookup(dir_ino, "large.bin")->attr.ino;
  const uint64_t small_fh = h.Open(small_ino)->fh;
  const uint64_t large_fh = h.Open(large_ino)->fh;
  CHECK(h.Read(large_ino, large_fh, 0, 4096).value() == large.substr(0, 4096));
  const uint64_t dir_fh = h.OpenDir(dir_ino).value();
  auto created = h.Create(dir_ino, "ckpt.pt");
  REQUIRE(created.ok());
  const InodeId write_ino = created->entry.attr.ino;
  const uint64_t write_fh = created->fh;
  REQUIRE(h.WriteAll(write_ino, write_fh, Content(200 * 1024, 3)).ok());
  REQUIRE(h.fs->record_error().ok());
  // The first daemon dies here, releasing nothing and completing nothing; the next one is a
  // filesystem of its own over the same bucket.
  const std::shared_ptr<ObjectFilesystem> dead = h.fs;
  h.fs = MakeObjectFilesystem(h.io, h.fake, options);
  WriteRig& second = h;
  const auto restored = Restore(second, files);
  CHECK(restored.nodes >= 4);  // d, small.bin, large.bin, ckpt.pt
  CHECK(restored.read_handles == 2);
  CHECK(restored.dir_handles == 1);
  CHECK(restored.lost_writers == 1);
  // The kernel's numbers mean what they meant.
  CHECK(second.GetAttr(small_ino)->attr.size == small.size());
  CHECK(second.fs->InodeOf("d/large.bin") == large_ino);
  CHECK(second.ReadAll(small_ino, small_fh).value() == small);
  CHECK(second.ReadAll(large_ino, large_fh).value() == large);
  // The directory handle lists from any offset, each name once.
  auto listed = second.ReadDirAll(dir_ino, dir_fh);
  REQUIRE(listed.ok());
  std::set<std::string> names;
  for (const auto& e : *listed) names.insert(e.name);
  CHECK(names.count("small.bin") == 1);
  CHECK(names.count("many") == 1);
  // The writer's bytes died with the first daemon: EIO at every use, nothing saved.
  auto write = second.Wait<size_t>([&](Callback<size_t> cb) {
    second.fs->Write(write_ino, write_fh, 0, "x", 1, std::move(cb));
  });
  CHECK(write.status().ToErrno() == EIO);
  CHECK(second
            .WaitStatus([&](StatusCallback cb) {
              second.fs->Flush(write_ino, write_fh, Opener(), std::move(cb));
            })
            .ToErrno() == EIO);
  CHECK(second
            .WaitStatus(
                [&](StatusCallback cb) { second.fs->Fsync(write_ino, write_fh, std::move(cb)); })
            .ToErrno() == EIO);
  second.fs->Release(write_ino, write_fh);
  CHECK_FALSE(second.fake->HasObject("d/ckpt.pt"));
  // New handles are numbered past the restored ones.
  auto again = second.Open(small_ino);
  REQUIRE(again.ok());
  CHECK(again->fh != small_fh);
  CHECK(again->fh != large_fh);
  CHECK(again->fh != dir_fh);
  second.fs->Release(small_ino, small_fh);
  second.fs->Release(large_ino, large_fh);
  second.fs->Release(small_ino, again->fh);
  second.fs->ReleaseDir(dir_ino, dir_fh);
}

TEST_CASE("RestoreSession: a handle released before the death is not restored") {
  RecordFiles files;
  Harness first;
  Record(first, files);
  first.fake->PutObject("a", "aaaa");
  const InodeId ino = first.Lookup(kRootInode, "a")->attr.ino;
  const uint64_t kept = first.Open(ino)->fh;
  const uint64_t released = first.Open(ino)->fh;
  first.fs->Release(ino, released);
  const uint64_t dir = first.OpenDir(kRootInode).value();
  first.fs->ReleaseDir(kRootInode, dir);
  auto handles = RecordLog::Load(files.handles);
  REQUIRE(handles.ok());
  const auto decoded = HandleRecords::Decode(*handles);
  CHECK(decoded.size() == 1);
  REQUIRE(decoded.count(kept) == 1);
  CHECK(decoded.at(kept).kind == HandleRecord::Kind::kRead);
  CHECK(decoded.at(kept).path == "a");
  CHECK(decoded.at(kept).size == 4);
}

TEST_CASE("RestoreSession: listings come back, with this mount's changes, without a LIST") {
  RecordFiles files;
  FsOptions options = WritableOptions();
  options.metadata_ttl = std::nullopt;  // indefinite, as training mounts run
  WriteRig h(options);
  auto listings = Record(h, files);
  for (int i = 0; i < 50; ++i) {
    std::string key = "train/c";
    h.fake->PutObject(key.append(std::to_string(i % 5)).append("/x").append(std::to_string(i)),
                      "img");
  }
  h.fake->PutObject("ckpt/old.pt", "old");
  const InodeId train = h.Lookup(kRootInode, "train")->attr.ino;
  const InodeId c0 = h.Lookup(train, "c0")->attr.ino;
  const InodeId ckpt = h.Lookup(kRootInode, "ckpt")->attr.ino;
  for (InodeId dir : {kRootInode, train, c0, ckpt}) REQUIRE(h.List(dir).ok());
  // This mount's changes after the listings: a file saved, one removed.
  h.WriteFile(ckpt, "new.pt", "new bytes");
  REQUIRE(h.Unlink(ckpt, "old.pt").ok());
  listings->Flush();
  REQUIRE(listings->error().ok());
  CHECK(listings->recorded() >= 4);  // the root, train, train/c0, ckpt

  h.fs = MakeObjectFilesystem(h.io, h.fake, options);
  const auto restored = Restore(h, files);
  CHECK(restored.listings >= 4);
  h.fake->ResetCounters();
  // Every name in the listed directories answers from the restored listings: no request.
  for (int i = 0; i < 50; i += 5) {
    std::string name = "x";
    CHECK(h.Lookup(c0, name.append(std::to_string(i))).ok());
  }
  CHECK(h.Lookup(c0, "x1").status().ToErrno() == ENOENT);  // x1 is in c1
  CHECK(h.Lookup(ckpt, "new.pt")->attr.size == 9);
  CHECK(h.Lookup(ckpt, "old.pt").status().ToErrno() == ENOENT);
  CHECK(h.fake->total_count() == 0);
  // A directory that was not listed is asked about as usual.
  const InodeId c1 = h.Lookup(train, "c1")->attr.ino;
  CHECK(h.Lookup(c1, "x1").ok());
  CHECK(h.fake->total_count() > 0);
}

TEST_CASE("RestoreSession: a listing the cache stopped trusting is not restored") {
  RecordFiles files;
  FsOptions options = WritableOptions();
  options.metadata_ttl = std::nullopt;
  WriteRig h(options);
  auto listings = Record(h, files);
  h.fake->PutObject("d/a", "aaaa");
  h.fake->PutObject("e/b", "bbbb");
  const InodeId d = h.Lookup(kRootInode, "d")->attr.ino;
  const InodeId e = h.Lookup(kRootInode, "e")->attr.ino;
  REQUIRE(h.List(d).ok());
  REQUIRE(h.List(e).ok());
  listings->Flush();
  // Another client replaced d/a, and this mount noticed (a read found another version).
  h.fs->listings()->cache().Invalidate("d/a");
  // e was renamed away by this mount: its listing is forgotten.
  REQUIRE(h.Rename(kRootInode, "e", kRootInode, "e2").ok());
  listings->Flush();

  h.fs = MakeObjectFilesystem(h.io, h.fake, options);
  Restore(h, files);
  CHECK_FALSE(h.fs->listings()->cache().FreshListing("d"));
  CHECK_FALSE(h.fs->listings()->cache().FreshListing("e"));
}
