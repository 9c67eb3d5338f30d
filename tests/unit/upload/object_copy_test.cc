// CopyObjectOnServer: one CopyObject up to copy_object_limit, UploadPartCopy parts above it
// (through the gate's cap), pinned to the source's etag; a failed copy leaves nothing at the
// destination and the source as it was.
#include "upload/object_copy.h"
#include "support/temp_dir.h"
#include "upload_harness.h"

using namespace uploadtest;

namespace {

Result<PutResult> CopyNow(Rig& rig, const std::string& from, const std::string& to,
                          std::string etag = "", WriteOptions wo = {},
                          std::shared_ptr<UploadJournal> journal = nullptr) {
  auto info = rig.fake->Info(from);
  CopySource source{from, std::move(etag), info ? info->size : 0};
  std::optional<Result<PutResult>> out;
  CopyObjectOnServer(rig.client, rig.gate, std::move(journal), rig.options, source, to, wo,
                     [&](Result<PutResult> r) { out.emplace(std::move(r)); });
  rig.Drain();
  REQUIRE(out.has_value());
  return std::move(*out);
}

}  // namespace

TEST_CASE("CopyObjectOnServer: up to the limit, one CopyObject pinned to the etag") {
  for (size_t size : {size_t{0}, size_t{1}, size_t{100 * KiB}}) {  // the limit is 100 KiB
    INFO("size " << size);
    Rig rig;
    const std::string data = Bytes(size, 40);
    const std::string etag = rig.fake->PutObject("src", data);
    auto r = CopyNow(rig, "src", "dst", etag);
    REQUIRE(r.ok());
    CHECK(rig.fake->count(Op::kCopy) == 1);
    CHECK(rig.fake->count(Op::kUploadPartCopy) == 0);
    CHECK(rig.fake->count(Op::kInitiate) == 0);
    CHECK(*rig.fake->Data("dst") == data);
    CHECK(*rig.fake->Data("src") == data);
    CHECK(r->etag == rig.fake->Info("dst")->etag);
    REQUIRE(rig.fake->requests().size() == 1);
    CHECK(rig.fake->requests()[0].source_key == "src");
    CHECK(rig.fake->requests()[0].if_match == etag);
  }
}

TEST_CASE("CopyObjectOnServer: above the limit, UploadPartCopy parts then Complete") {
  Rig rig(64 * MiB, /*max_in_flight=*/2);
  const std::string data = Bytes(250 * KiB, 41);  // 40 KiB parts: 6 whole and 10 KiB
  const std::string etag = rig.fake->PutObject("src", data);
  rig.fake->ResetCounters();
  auto r = CopyNow(rig, "src", "dst", etag);
  REQUIRE(r.ok());
  CHECK(rig.fake->count(Op::kCopy) == 0);
  CHECK(rig.fake->count(Op::kInitiate) == 1);
  CHECK(rig.fake->count(Op::kUploadPartCopy) == 7);
  CHECK(rig.fake->count(Op::kComplete) == 1);
  CHECK(rig.fake->count(Op::kAbort) == 0);
  CHECK(*rig.fake->Data("dst") == data);
  CHECK(*rig.fake->Data("src") == data);
  CHECK(rig.fake->Info("src")->etag == etag);
  CHECK(r->etag == rig.fake->Info("dst")->etag);
  CHECK(rig.fake->OpenUploadCount() == 0);
  CHECK(rig.gate->parts_pending() == 0);
  CHECK(rig.fake->max_in_flight() <= 2);  // the gate's cap
  uint64_t covered = 0;
  for (const auto& req : rig.fake->requests()) {
    if (req.op != Op::kUploadPartCopy) continue;
    CHECK(req.source_key == "src");
    CHECK(req.if_match == etag);
    CHECK(req.offset == covered);
    REQUIRE(req.length.has_value());
    CHECK(*req.length == std::min<uint64_t>(40 * KiB, data.size() - covered));
    covered += *req.length;
  }
  CHECK(covered == data.size());
}

TEST_CASE("CopyObjectOnServer: parts grow so that a copy needs at most 10,000") {
  Rig rig(64 * MiB, 64);
  rig.fake->set_min_part_size(1);
  rig.options.copy_object_limit = 1000;
  rig.options.copy_part_size = 1;
  const std::string data = Bytes(20001, 42);  // 1-byte parts would need 20,001
  rig.fake->PutObject("src", data);
  auto r = CopyNow(rig, "src", "dst");
  REQUIRE(r.ok());
  CHECK(rig.fake->count(Op::kUploadPartCopy) <= 10000);
  CHECK(rig.fake->count(Op::kUploadPartCopy) >= 2);
  CHECK(*rig.fake->Data("dst") == data);
}

TEST_CASE("CopyObjectOnServer: a failed copy leaves no destination and the source intact") {
  struct Row {
    const char* what;
    size_t size;
    std::function<void(FailingObjectClient&)> inject;
    ErrorCode code;
    int aborts;
  };
  const Row rows[] = {
      {"a part refused", 250 * KiB,
       [](FailingObjectClient& f) { f.RefuseNext(Op::kUploadPartCopy, 1, std::nullopt, 3); },
       ErrorCode::kServerError, 1},
      {"the last part refused", 250 * KiB,
       [](FailingObjectClient& f) { f.RefuseNext(Op::kUploadPartCopy, 1, std::nullopt, 7); },
       ErrorCode::kServerError, 1},
      {"Complete refused", 250 * KiB,
       [](FailingObjectClient& f) { f.RefuseNext(Op::kComplete, 1); }, ErrorCode::kServerError, 1},
      {"Initiate refused", 250 * KiB,
       [](FailingObjectClient& f) { f.RefuseNext(Op::kInitiate, 1); }, ErrorCode::kServerError, 0},
      {"CopyObject refused", 50 * KiB, [](FailingObjectClient& f) { f.RefuseNext(Op::kCopy, 1); },
       ErrorCode::kServerError, 0},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    Rig rig(64 * MiB, 2, /*failing=*/true);
    const std::string data = Bytes(row.size, 43);
    const std::string etag = rig.fake->PutObject("src", data);
    row.inject(*rig.fail);
    auto r = CopyNow(rig, "src", "dst", etag);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == row.code);
    CHECK(rig.fake->count(Op::kAbort) == static_cast<uint64_t>(row.aborts));
    CHECK_FALSE(rig.fake->HasObject("dst"));
    CHECK(*rig.fake->Data("src") == data);
    CHECK(rig.fake->Info("src")->etag == etag);
    CHECK(rig.fake->OpenUploadCount() == 0);
    CHECK(rig.gate->parts_pending() == 0);
  }
}

TEST_CASE("CopyObjectOnServer: a source changed since its etag was read fails the copy") {
  for (size_t size : {size_t{50 * KiB}, size_t{250 * KiB}}) {
    INFO("size " << size);
    Rig rig;
    const std::string old_etag = rig.fake->PutObject("src", Bytes(size, 44));
    const std::string now = Bytes(size, 45);
    rig.fake->PutObject("src", now);
    auto r = CopyNow(rig, "src", "dst", old_etag);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kPreconditionFailed);
    CHECK_FALSE(rig.fake->HasObject("dst"));
    CHECK(*rig.fake->Data("src") == now);
    CHECK(rig.fake->OpenUploadCount() == 0);
  }
}

TEST_CASE("CopyObjectOnServer: no overwrite keeps an existing destination") {
  for (size_t size : {size_t{50 * KiB}, size_t{250 * KiB}}) {
    INFO("size " << size);
    Rig rig;
    rig.fake->PutObject("src", Bytes(size, 46));
    rig.fake->PutObject("dst", "already here");
    WriteOptions wo;
    wo.forbid_overwrite = true;
    auto r = CopyNow(rig, "src", "dst", "", wo);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kAlreadyExists);
    CHECK(*rig.fake->Data("dst") == "already here");
    CHECK(rig.fake->OpenUploadCount() == 0);
  }
}

TEST_CASE("CopyObjectOnServer: a multipart copy is in the upload journal while it is open") {
  // A daemon killed mid-copy (a rename of a large file, a chmod's copy onto itself) leaves
  // an open upload: recorded, the next mount with the journal aborts it.
  ossmount::testing::TempDir dir;
  auto opened = UploadJournal::Open(dir.path());
  REQUIRE(opened.ok());
  std::shared_ptr<UploadJournal> journal = *opened;
  for (bool fails : {false, true}) {
    INFO((fails ? "a part refused" : "completed"));
    Rig rig(64 * MiB, 2, /*failing=*/true);
    const std::string etag = rig.fake->PutObject("src", Bytes(250 * KiB, 44));
    if (fails) rig.fail->RefuseNext(Op::kUploadPartCopy, 1, std::nullopt, 3);
    auto info = rig.fake->Info("src");
    std::optional<Result<PutResult>> out;
    CopyObjectOnServer(rig.client, rig.gate, journal, rig.options,
                       CopySource{"src", etag, info->size}, "dst", {},
                       [&](Result<PutResult> r) { out.emplace(std::move(r)); });
    // Step until the first part copy is asked for, then hold the answers: the copy is open.
    rig.io.restart();
    while (rig.fake->count(Op::kUploadPartCopy) == 0 && rig.io.run_one() > 0) {
    }
    rig.fake->Pause();
    REQUIRE_FALSE(out.has_value());
    REQUIRE(journal->Records().size() == 1);
    CHECK(journal->Records()[0].key == "dst");
    rig.fake->Resume();
    rig.Drain();
    REQUIRE(out.has_value());
    CHECK(out->ok() == !fails);
    CHECK(journal->Records().empty());  // completed, or aborted
    CHECK(rig.fake->OpenUploadCount() == 0);
  }
}
