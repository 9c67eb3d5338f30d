// --posix-metadata on a writable mount: a chmod or setxattr of a closed file is a copy of the
// object onto itself pinned to the version its HEAD read, so another client's version written
// in between is never replaced by the old bytes.
#include <sys/stat.h>
#include <sys/xattr.h>

#include <thread>

#include "support/eventually.h"
#include "write_harness.h"

namespace {

using namespace fswrite;
using ossmount::testing::Eventually;

FsOptions PosixOptions() {
  FsOptions o = WritableOptions();
  o.posix_metadata = true;
  return o;
}

// Runs `change` while the fake holds its answers, and replaces the object as another client
// once the change's HEAD was asked (so the HEAD answers the old version), then lets it go.
template <typename Change>
Status RacedByAnotherClient(WriteRig& h, const std::string& key, Change change) {
  const uint64_t heads = h.fake->count(Op::kHead);
  h.fake->Pause();
  Status result;
  std::thread changer([&] { result = change(); });
  REQUIRE(Eventually([&] { return h.fake->count(Op::kHead) > heads; }));
  h.fake->PutObject(key, "theirs, written in between");
  h.fake->Resume();
  changer.join();
  return result;
}

TEST_CASE("Posix: a chmod pinned to the version it read leaves another client's in between") {
  WriteRig h(PosixOptions());
  h.fake->PutObject("run.sh", "#!/bin/sh\n");
  auto e = h.Lookup(kRootInode, "run.sh");
  REQUIRE(e.ok());
  SetAttrRequest chmod;
  chmod.mode = S_IFREG | 0755;
  const Status s =
      RacedByAnotherClient(h, "run.sh", [&] { return h.SetAttr(e->attr.ino, 0, chmod).status(); });
  CHECK(s.code() == ErrorCode::kPreconditionFailed);  // ESTALE: the file is another one now
  CHECK(*h.fake->Data("run.sh") == "theirs, written in between");
}

TEST_CASE("Posix: a setxattr pinned to the version it read leaves another client's in between") {
  WriteRig h(PosixOptions());
  h.fake->PutObject("labels.json", "{}");
  auto e = h.Lookup(kRootInode, "labels.json");
  REQUIRE(e.ok());
  const Status s = RacedByAnotherClient(h, "labels.json", [&] {
    return h.WaitStatus([&](StatusCallback cb) {
      h.fs->SetXattr(e->attr.ino, "user.source", "crawl", 0, std::move(cb));
    });
  });
  CHECK(s.code() == ErrorCode::kPreconditionFailed);
  CHECK(*h.fake->Data("labels.json") == "theirs, written in between");
}

TEST_CASE("Posix: extended attributes need the option, user.* names and a file") {
  WriteRig plain;
  plain.fake->PutObject("f", "x");
  auto f = plain.Lookup(kRootInode, "f");
  REQUIRE(f.ok());
  CHECK_FALSE(plain.fs->KeepsXattrs());
  auto set = [](WriteRig& h, InodeId ino, const std::string& name, int flags = 0) {
    return h.WaitStatus(
        [&](StatusCallback cb) { h.fs->SetXattr(ino, name, "v", flags, std::move(cb)); });
  };
  CHECK(set(plain, f->attr.ino, "user.k").code() == ErrorCode::kNotSupported);
  CHECK(plain.fake->count(Op::kHead) == 0);

  WriteRig h(PosixOptions());
  h.fake->PutObject("f", "x");
  auto e = h.Lookup(kRootInode, "f");
  REQUIRE(e.ok());
  auto d = h.MakeDir(kRootInode, "d");
  REQUIRE(d.ok());
  CHECK(h.fs->KeepsXattrs());
  CHECK(set(h, e->attr.ino, "trusted.k").code() == ErrorCode::kNotSupported);
  CHECK(set(h, e->attr.ino, "user.").code() == ErrorCode::kNotSupported);
  CHECK(set(h, d->attr.ino, "user.k").code() == ErrorCode::kNotSupported);
  CHECK(set(h, e->attr.ino, "user.k", XATTR_REPLACE).code() == ErrorCode::kNoAttribute);
  CHECK(h.fake->count(Op::kCopy) == 0);  // refused before any copy
  // security.capability, asked before each write, is answered without a request.
  const uint64_t heads = h.fake->count(Op::kHead);
  auto got = h.Wait<std::string>([&](Callback<std::string> cb) {
    h.fs->GetXattr(e->attr.ino, "security.capability", std::move(cb));
  });
  CHECK(got.status().code() == ErrorCode::kNoAttribute);
  CHECK(h.fake->count(Op::kHead) == heads);
}

}  // namespace
