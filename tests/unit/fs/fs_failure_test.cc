// Failures from the object store: the right errno, and nothing cached wrongly.
#include "fs_harness.h"

using namespace fstest;

namespace {

const std::string kData = "the bytes of a.jpg";

void Populate(Harness& h) {
  h.fake->PutObject("cls/a.jpg", kData);
  h.fake->PutObject("cls/b.jpg", "b");
}

// Lookup of an unlisted directory (one probe LIST), its listing (LIST), lookup + open of a
// listed file (no request), and a whole read (GET): 3 requests.
Result<std::string> Scenario(Harness& h) {
  auto cls = h.Lookup(kRootInode, "cls");
  if (!cls.ok()) return cls.status();
  auto entries = h.List(cls->attr.ino);
  if (!entries.ok()) return entries.status();
  if (entries->size() != 2) return Status(ErrorCode::kInternal, "wrong listing");
  auto file = h.Lookup(cls->attr.ino, "a.jpg");
  if (!file.ok()) return file.status();
  auto open = h.Open(file->attr.ino);
  if (!open.ok()) return open.status();
  auto bytes = h.ReadAll(file->attr.ino, open->fh);
  h.fs->Release(file->attr.ino, open->fh);
  return bytes;
}

}  // namespace

TEST_CASE("Fail matrix: each request failing surfaces as EIO, then a retry succeeds") {
  {
    Harness clean(Harness::DefaultOptions(), true);
    Populate(clean);
    auto r = Scenario(clean);
    REQUIRE(r.ok());
    REQUIRE(*r == kData);
    // The probe LIST of 'cls', the listing of 'cls/', the GET of the file.
    REQUIRE(clean.fake->total_count() == 3);
  }
  for (uint64_t n = 1; n <= 3; ++n) {
    INFO("failing request " << n);
    Harness h(Harness::DefaultOptions(), true);
    Populate(h);
    h.fail->FailNth(n);
    auto failed = Scenario(h);
    CHECK(h.fail->failures() == 1);
    REQUIRE(!failed.ok());
    CHECK(failed.status().ToErrno() == EIO);
    h.fail->ClearFailures();
    auto retried = Scenario(h);
    REQUIRE(retried.ok());
    CHECK(*retried == kData);
  }
}

TEST_CASE("Service errors map to their errno") {
  struct Row {
    ErrorCode code;
    int err;
  };
  const std::vector<Row> rows = {
      {ErrorCode::kAccessDenied, EACCES}, {ErrorCode::kThrottled, EAGAIN},
      {ErrorCode::kTimeout, ETIMEDOUT},   {ErrorCode::kNetwork, EIO},
      {ErrorCode::kIntegrity, EIO},       {ErrorCode::kServerError, EIO},
  };
  for (const auto& row : rows) {
    INFO(ErrorCodeName(row.code));
    Harness h(Harness::DefaultOptions(), true);
    h.fake->PutObject("f", "data");
    h.fail->set_error(Status(row.code, "injected"));
    SECTION(std::string("lookup ") + ErrorCodeName(row.code)) {
      h.fail->FailKey("f");  // the probe LIST
      CHECK(h.Lookup(kRootInode, "f").status().ToErrno() == row.err);
    }
    SECTION(std::string("listing ") + ErrorCodeName(row.code)) {
      h.fail->FailKey("");  // the root listing
      CHECK(h.List(kRootInode).status().ToErrno() == row.err);
    }
    SECTION(std::string("read ") + ErrorCodeName(row.code)) {
      auto f = h.Lookup(kRootInode, "f");
      REQUIRE(f.ok());
      auto open = h.Open(f->attr.ino);
      REQUIRE(open.ok());
      h.fail->FailKey("f");
      CHECK(h.Read(f->attr.ino, open->fh, 0, 10).status().ToErrno() == row.err);
      h.fail->ClearFailures();
      CHECK(*h.Read(f->attr.ino, open->fh, 0, 10) == "data");
      h.fs->Release(f->attr.ino, open->fh);
    }
  }
}

TEST_CASE("A failed probe caches nothing: no negative entry, no wrong kind") {
  Harness h(Harness::DefaultOptions(), true);
  h.fake->PutObject("c", "file c");
  h.fake->PutObject("c/inner", "dir c wins");
  h.fail->FailKey("c");  // the probe LIST (prefix "c")
  CHECK(h.Lookup(kRootInode, "c").status().ToErrno() == EIO);
  h.fail->ClearFailures();
  auto c = h.Lookup(kRootInode, "c");
  REQUIRE(c.ok());
  CHECK(c->attr.is_dir);
}

TEST_CASE("A listing failing on a later page leaves no partial directory behind") {
  Harness h(Harness::DefaultOptions(), true);
  h.fake->set_page_limit(5);
  for (int i = 0; i < 12; ++i) h.fake->PutObject("d/f" + std::to_string(i), "x");
  auto d = h.Lookup(kRootInode, "d");
  REQUIRE(d.ok());
  h.fail->FailNth(2, Op::kList);  // the second page
  auto fh = h.OpenDir(d->attr.ino);
  REQUIRE(fh.ok());
  CHECK(h.ReadDir(d->attr.ino, *fh, 0).status().ToErrno() == EIO);
  h.fail->ClearFailures();
  // A name from a page that never arrived is looked up, not declared missing.
  auto f9 = h.Lookup(d->attr.ino, "f9");
  REQUIRE(f9.ok());
  auto all = h.ReadDirAll(d->attr.ino, *fh);
  REQUIRE(all.ok());
  CHECK(all->size() == 12);
  h.fs->ReleaseDir(d->attr.ino, *fh);
}

TEST_CASE("A failed small-file GET is not cached, the next read fetches again") {
  Harness h(Harness::DefaultOptions(), true);
  h.fake->PutObject("f", kData);
  auto f = h.Lookup(kRootInode, "f");
  REQUIRE(f.ok());
  auto open = h.Open(f->attr.ino);
  REQUIRE(open.ok());
  h.fail->FailNth(1, Op::kGet);
  CHECK(h.Read(f->attr.ino, open->fh, 0, 100).status().ToErrno() == EIO);
  CHECK(h.fs->stats().whole_objects == 0);
  CHECK(*h.Read(f->attr.ino, open->fh, 0, 100) == kData);
  CHECK(h.fake->count(Op::kGet) == 1);  // the failed one never reached the bucket
  h.fs->Release(f->attr.ino, open->fh);
}
