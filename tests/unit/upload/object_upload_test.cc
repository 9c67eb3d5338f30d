// ObjectUpload: one file's streaming upload. Sizes and write pieces, faults at every step,
// Abort, a dropped upload, Finish twice, the memory budget, and backpressure.
#include <boost/asio/post.hpp>
#include <functional>
#include <vector>

#include "common/crc64.h"
#include "upload_harness.h"

using namespace uploadtest;

namespace {

// Everything an upload that ended leaves: nothing open on the server, nothing in the gate,
// and in the budget only the bodies of single-PUT objects kept for a continuation.
void CheckNothingLeft(const Rig& rig) {
  CHECK(rig.fake->OpenUploadCount() == 0);
  CHECK(rig.budget->used() == rig.KeptBytes());
  CHECK(rig.gate->parts_pending() == 0);
}

Status Injected(ErrorCode code) { return Status(code, "injected by the test"); }

}  // namespace

TEST_CASE("ObjectUpload: one PUT within the first part, else parts, byte for byte") {
  struct Row {
    const char* what;
    size_t size;
    size_t piece;
    int parts;  // 0: one PutObject; -1: either (a file of exactly one part)
  };
  const Row rows[] = {
      {"empty file", 0, 1, 0},
      {"one byte", 1, 1, 0},
      {"one byte short of a part", 64 * KiB - 1, 4096, 0},
      {"exactly one part", 64 * KiB, 64 * KiB, -1},
      {"one byte past a part", 64 * KiB + 1, 1000, 2},
      {"three parts and a tail, in pieces", 3 * 64 * KiB + 17, 4096, 4},
      {"three parts and a tail, in one Append", 3 * 64 * KiB + 17, 3 * 64 * KiB + 17, 4},
      {"five whole parts, pieces across boundaries", 5 * 64 * KiB, 7000, 5},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    Rig rig;
    const std::string data = Bytes(row.size, static_cast<uint32_t>(row.size));
    auto up = rig.Make("dir/file.bin");
    Rig::AppendAll(*up, data, row.piece);
    CHECK(up->size() == row.size);
    auto r = rig.Finish(*up);
    REQUIRE(r.ok());
    CHECK(r->size == row.size);
    REQUIRE(rig.fake->Data("dir/file.bin").has_value());
    CHECK(*rig.fake->Data("dir/file.bin") == data);
    CHECK(r->etag == rig.fake->Info("dir/file.bin")->etag);
    CHECK(r->crc64 == Crc64(0, data.data(), data.size()));
    CHECK(rig.fake->ObjectCount() == 1);
    CHECK(rig.fake->count(Op::kAbort) == 0);
    const bool multipart = rig.fake->count(Op::kInitiate) == 1;
    if (row.parts >= 0) CHECK(multipart == (row.parts > 0));
    if (multipart) {
      if (row.parts > 0)
        CHECK(rig.fake->count(Op::kUploadPart) == static_cast<uint64_t>(row.parts));
      CHECK(r->parts == static_cast<int>(rig.fake->count(Op::kUploadPart)));
      CHECK(rig.fake->count(Op::kComplete) == 1);
      CHECK(rig.fake->count(Op::kPut) == 0);
    } else {
      CHECK(r->parts == 0);
      CHECK(rig.fake->count(Op::kPut) == 1);
      CHECK(rig.fake->count(Op::kUploadPart) == 0);
      CHECK(rig.fake->count(Op::kComplete) == 0);
    }
    // Parts go up numbered 1..n in order.
    int expected_number = 1;
    for (const auto& req : rig.fake->requests()) {
      if (req.op == Op::kUploadPart) CHECK(req.part_number == expected_number++);
    }
    CheckNothingLeft(rig);
    CHECK(up->error().ok());
  }
}

TEST_CASE("ObjectUpload: parts double in size after the 1,000th") {
  Rig rig;
  rig.fake->set_min_part_size(1);
  rig.options.part_size = 1;  // parts 1..1000: 1 byte, 1001..2000: 2 bytes
  const std::string data = Bytes(1000 + 2 * 2 + 1, 7);
  auto up = rig.Make("doubling");
  Rig::AppendAll(*up, data, 100);
  auto r = rig.Finish(*up);
  REQUIRE(r.ok());
  CHECK(r->parts == 1003);  // 1000 of 1 byte, 2 of 2 bytes, the last 1 byte
  CHECK(rig.fake->count(Op::kUploadPart) == 1003);
  CHECK(*rig.fake->Data("doubling") == data);
  CheckNothingLeft(rig);
}

TEST_CASE("ObjectUpload: bytes past the 10,000th part fail with kTooBig, not a broken upload") {
  // With 1-byte base parts, 10,000 parts hold 1000 x (1 + 2 + ... + 512) bytes.
  const size_t capacity = 1000 * 1023;
  struct Row {
    const char* what;
    size_t first;  // appended first (in pieces of 1000 bytes)
    size_t then;   // then appended in one call
  };
  const Row rows[] = {
      {"a write after the last part is full", capacity, 1},
      {"a write that runs past the last part", capacity - 500, 1000},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    Rig rig;
    rig.fake->set_min_part_size(1);
    rig.options.part_size = 1;
    const std::string data = Bytes(row.first + row.then, 11);
    auto up = rig.Make("huge");
    Rig::AppendAll(*up, data.substr(0, row.first), 1000);
    rig.Drain();
    Status last = up->Append(data.data() + row.first, row.then);
    auto r = rig.Finish(*up);
    CHECK_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kTooBig);
    // Whichever call said so, the error is kTooBig, nothing is at the key and no upload
    // is left open.
    if (!last.ok()) CHECK(last.code() == ErrorCode::kTooBig);
    CHECK_FALSE(rig.fake->HasObject("huge"));
    CheckNothingLeft(rig);
  }
}

TEST_CASE("ObjectUpload: a fault at any step fails Finish, aborts and leaves nothing") {
  struct Row {
    const char* what;
    size_t size;
    std::function<void(FailingObjectClient&)> inject;
    ErrorCode code;
    int aborts;        // AbortMultipart requests that reach the bucket
    bool key_checked;  // whether the key must be absent (a lost answer applied the write)
  };
  const size_t big = 3 * 64 * KiB + 5;
  const Row rows[] = {
      {"part 1 refused", big,
       [](FailingObjectClient& f) { f.RefuseNext(Op::kUploadPart, 1, std::nullopt, 1); },
       ErrorCode::kServerError, 1, true},
      {"part 3 refused", big,
       [](FailingObjectClient& f) { f.RefuseNext(Op::kUploadPart, 1, std::nullopt, 3); },
       ErrorCode::kServerError, 1, true},
      {"the last part (sent by Finish) refused", big,
       [](FailingObjectClient& f) { f.RefuseNext(Op::kUploadPart, 1, std::nullopt, 4); },
       ErrorCode::kServerError, 1, true},
      {"a part refused with the service's own error", big,
       [](FailingObjectClient& f) {
         f.RefuseNext(Op::kUploadPart, 1, Injected(ErrorCode::kAccessDenied), 2);
       },
       ErrorCode::kAccessDenied, 1, true},
      {"a part's body cut", big,
       [](FailingObjectClient& f) { f.CutBodyOfNext(Op::kUploadPart, 1); }, ErrorCode::kNetwork, 1,
       true},
      {"InitiateMultipart refused", big,
       [](FailingObjectClient& f) { f.RefuseNext(Op::kInitiate, 1); }, ErrorCode::kServerError, 0,
       true},
      {"CompleteMultipart refused", big,
       [](FailingObjectClient& f) { f.RefuseNext(Op::kComplete, 1); }, ErrorCode::kServerError, 1,
       true},
      {"CompleteMultipart's answer lost", big,
       [](FailingObjectClient& f) { f.LoseAnswerOfNext(Op::kComplete, 1); }, ErrorCode::kNetwork, 1,
       false},
      {"the single PUT refused", 1000, [](FailingObjectClient& f) { f.RefuseNext(Op::kPut, 1); },
       ErrorCode::kServerError, 0, true},
      {"the single PUT's body cut", 1000,
       [](FailingObjectClient& f) { f.CutBodyOfNext(Op::kPut, 1); }, ErrorCode::kNetwork, 0, true},
      {"the empty file's PUT refused", 0, [](FailingObjectClient& f) { f.RefuseNext(Op::kPut, 1); },
       ErrorCode::kServerError, 0, true},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    Rig rig(64 * MiB, 8, /*failing=*/true);
    row.inject(*rig.fail);
    const std::string data = Bytes(row.size, 3);
    auto up = rig.Make("k");
    Rig::AppendAll(*up, data, 4096);
    auto r = rig.Finish(*up);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == row.code);
    CHECK(up->error().code() == row.code);
    CHECK(rig.fake->count(Op::kAbort) == static_cast<uint64_t>(row.aborts));
    if (row.key_checked) CHECK_FALSE(rig.fake->HasObject("k"));
    CheckNothingLeft(rig);

    // The error sticks: later Appends and Finishes get it, and send nothing.
    const uint64_t requests = rig.fake->total_count();
    CHECK(up->Append("x", 1).code() == row.code);
    auto again = rig.Finish(*up);
    REQUIRE_FALSE(again.ok());
    CHECK(again.status().code() == row.code);
    CHECK(rig.fake->total_count() == requests);
    CHECK(rig.budget->used() == 0);
  }
}

TEST_CASE("ObjectUpload: a part refused while the file is written fails the next Append") {
  Rig rig(64 * MiB, 8, /*failing=*/true);
  rig.fail->RefuseNext(Op::kUploadPart, 1, std::nullopt, 2);
  const std::string data = Bytes(5 * 64 * KiB, 5);
  auto up = rig.Make("k");
  Rig::AppendAll(*up, data.substr(0, 3 * 64 * KiB), 64 * KiB);
  rig.Drain();  // parts 1..3 answered: part 2 refused
  CHECK(up->error().code() == ErrorCode::kServerError);
  CHECK(up->Append(data.data() + 3 * 64 * KiB, 1000).code() == ErrorCode::kServerError);
  CHECK(up->size() == 3 * 64 * KiB);  // the refused bytes were not taken
  auto r = rig.Finish(*up);
  CHECK(r.status().code() == ErrorCode::kServerError);
  CHECK(rig.fake->count(Op::kComplete) == 0);
  CHECK_FALSE(rig.fake->HasObject("k"));
  CheckNothingLeft(rig);
}

TEST_CASE("ObjectUpload: WriteOptions reach the bucket: no overwrite keeps the object there") {
  for (size_t size : {size_t{1000}, size_t{2 * 64 * KiB + 3}}) {
    INFO("size " << size);
    Rig rig;
    rig.fake->PutObject("taken", "the original");
    WriteOptions wo;
    wo.forbid_overwrite = true;
    auto up = rig.Make("taken", wo);
    Rig::AppendAll(*up, Bytes(size, 9), 4096);
    auto r = rig.Finish(*up);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kAlreadyExists);
    CHECK(*rig.fake->Data("taken") == "the original");
    bool sent = false;
    for (const auto& req : rig.fake->requests()) {
      if (req.op == Op::kPut || req.op == Op::kComplete) {
        CHECK(req.forbid_overwrite);
        sent = true;
      }
    }
    CHECK(sent);
    CheckNothingLeft(rig);
  }
}

TEST_CASE("ObjectUpload: Append while Finish runs is refused and changes nothing") {
  Rig rig;
  const std::string data = Bytes(2 * 64 * KiB + 100, 4);
  auto up = rig.Make("k");
  Rig::AppendAll(*up, data, 8192);
  std::optional<Result<UploadedObject>> out;
  up->Finish([&](Result<UploadedObject> r) { out.emplace(std::move(r)); });
  CHECK(up->Append("more", 4).code() == ErrorCode::kInvalidArgument);
  rig.Drain();
  REQUIRE(out.has_value());
  REQUIRE(out->ok());
  CHECK((*out)->size == data.size());
  CHECK(up->size() == data.size());
  CHECK(*rig.fake->Data("k") == data);
  CheckNothingLeft(rig);
}

TEST_CASE("ObjectUpload: bytes appended after a completion continue the object") {
  struct Row {
    const char* what;
    size_t first;     // bytes before the first Finish
    size_t more;      // bytes after it
    uint64_t copies;  // UploadPartCopy requests the continuation costs
  };
  const Row rows[] = {
      {"an empty object, then bytes (a shell's redirection)", 0, 100, 0},
      {"a single-PUT object, then bytes", 5000, 3000, 0},
      {"a single-PUT object grown past a part", 60 * KiB, 10 * KiB, 0},
      {"a multipart object, then bytes: copied on the server", 3 * 64 * KiB + 5, 70 * KiB, 1},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    Rig rig;
    const std::string data = Bytes(row.first + row.more, 11);
    auto up = rig.Make("k");
    Rig::AppendAll(*up, data.substr(0, row.first), 4096);
    auto first = rig.Finish(*up);
    REQUIRE(first.ok());
    CHECK(first->completion == 1);
    CHECK(*rig.fake->Data("k") == data.substr(0, row.first));
    CHECK_FALSE(up->active());
    Rig::AppendAll(*up, data.substr(row.first), 4096);
    CHECK(up->active());
    auto second = rig.Finish(*up);
    REQUIRE(second.ok());
    CHECK(second->completion == 2);
    CHECK(second->size == data.size());
    CHECK(*rig.fake->Data("k") == data);
    CHECK(rig.fake->count(Op::kUploadPartCopy) == row.copies);
    CheckNothingLeft(rig);
    up.reset();
    CHECK(rig.budget->used() == 0);
  }
}

TEST_CASE("ObjectUpload: Abort mid-way aborts the upload and fails every later call") {
  Rig rig;
  const std::string data = Bytes(2 * 64 * KiB + 500, 6);
  auto up = rig.Make("k");
  Rig::AppendAll(*up, data, 4096);
  rig.Drain();  // initiated, parts 1 and 2 uploaded
  CHECK(rig.fake->OpenUploadCount() == 1);
  CHECK(rig.budget->used() == 500);  // the unfinished third part
  up->Abort(Injected(ErrorCode::kCancelled));
  rig.Drain();
  CHECK(rig.fake->count(Op::kAbort) == 1);
  CHECK(up->Append("x", 1).code() == ErrorCode::kCancelled);
  auto r = rig.Finish(*up);
  CHECK(r.status().code() == ErrorCode::kCancelled);
  CHECK(rig.fake->count(Op::kComplete) == 0);
  CHECK_FALSE(rig.fake->HasObject("k"));
  CheckNothingLeft(rig);
}

TEST_CASE("ObjectUpload: Abort while the upload is being initiated aborts it once it exists") {
  Rig rig;
  auto up = rig.Make("k");
  Rig::AppendAll(*up, Bytes(64 * KiB + 1, 8), 64 * KiB + 1);
  CHECK(rig.fake->count(Op::kInitiate) == 1);  // sent, not answered yet
  up->Abort(Injected(ErrorCode::kCancelled));
  CHECK(rig.budget->used() == 0);  // the sealed part and the tail were dropped
  rig.Drain();
  CHECK(rig.fake->count(Op::kUploadPart) == 0);
  CHECK(rig.fake->count(Op::kAbort) == 1);
  CHECK(rig.Finish(*up).status().code() == ErrorCode::kCancelled);
  CheckNothingLeft(rig);
}

TEST_CASE("ObjectUpload: Abort with parts in flight frees their memory as they end") {
  Rig rig;
  auto up = rig.Make("k");
  Rig::AppendAll(*up, Bytes(64 * KiB, 1), 64 * KiB);
  rig.Drain();  // initiated, part 1 uploaded
  rig.fake->Pause();
  Rig::AppendAll(*up, Bytes(2 * 64 * KiB + 10, 2), 64 * KiB);
  CHECK(rig.gate->parts_pending() == 2);
  up->Abort(Injected(ErrorCode::kCancelled));
  CHECK(rig.budget->used() == 2 * 64 * KiB);  // in flight: freed when they end
  rig.fake->Resume();
  rig.Drain();
  CHECK(rig.fake->count(Op::kAbort) == 1);
  CHECK(rig.Finish(*up).status().code() == ErrorCode::kCancelled);
  CheckNothingLeft(rig);
}

TEST_CASE("ObjectUpload: Abort after the object is done changes nothing") {
  Rig rig;
  const std::string data = Bytes(3 * 64 * KiB, 12);
  auto up = rig.Make("k");
  Rig::AppendAll(*up, data, 64 * KiB);
  auto r = rig.Finish(*up);
  REQUIRE(r.ok());
  up->Abort(Injected(ErrorCode::kCancelled));
  rig.Drain();
  CHECK(rig.fake->count(Op::kAbort) == 0);
  CHECK(up->error().ok());
  auto again = rig.Finish(*up);
  REQUIRE(again.ok());
  CHECK(again->etag == r->etag);
  CHECK(*rig.fake->Data("k") == data);
}

TEST_CASE("ObjectUpload: an upload dropped without Finish aborts and frees its memory") {
  SECTION("after its parts were answered") {
    Rig rig;
    auto up = rig.Make("k");
    Rig::AppendAll(*up, Bytes(2 * 64 * KiB + 700, 13), 4096);
    rig.Drain();
    CHECK(rig.fake->OpenUploadCount() == 1);
    up.reset();
    rig.Drain();
    CHECK(rig.fake->count(Op::kAbort) == 1);
    CHECK(rig.fake->count(Op::kComplete) == 0);
    CHECK_FALSE(rig.fake->HasObject("k"));
    CheckNothingLeft(rig);
  }
  SECTION("while its upload was being initiated") {
    Rig rig;
    auto up = rig.Make("k");
    Rig::AppendAll(*up, Bytes(2 * 64 * KiB + 700, 13), 4096);
    up.reset();  // requests in flight keep it until they end
    rig.Drain();
    CHECK(rig.fake->count(Op::kAbort) == 1);
    CHECK_FALSE(rig.fake->HasObject("k"));
    CheckNothingLeft(rig);
  }
  SECTION("a small file: nothing was sent") {
    Rig rig;
    auto up = rig.Make("k");
    Rig::AppendAll(*up, Bytes(1000, 13), 100);
    CHECK(rig.budget->used() == 1000);
    up.reset();
    rig.Drain();
    CHECK(rig.fake->total_count() == 0);
    CheckNothingLeft(rig);
  }
}

TEST_CASE("ObjectUpload: Finish called twice gets the same answer, with one completion") {
  struct Row {
    const char* what;
    size_t size;
    Op completion;
  };
  const Row rows[] = {{"single PUT", 5000, Op::kPut},
                      {"multipart", 3 * 64 * KiB + 1, Op::kComplete}};
  for (const Row& row : rows) {
    INFO(row.what);
    Rig rig;
    auto up = rig.Make("k");
    Rig::AppendAll(*up, Bytes(row.size, 14), 4096);
    std::vector<Result<UploadedObject>> answers;
    up->Finish([&](Result<UploadedObject> r) { answers.push_back(std::move(r)); });
    up->Finish([&](Result<UploadedObject> r) { answers.push_back(std::move(r)); });
    rig.Drain();
    REQUIRE(answers.size() == 2);
    REQUIRE(answers[0].ok());
    REQUIRE(answers[1].ok());
    CHECK(answers[0]->etag == answers[1]->etag);
    CHECK(answers[0]->size == row.size);
    CHECK(answers[1]->size == row.size);
    // After the end: answered at once, without a request.
    up->Finish([&](Result<UploadedObject> r) { answers.push_back(std::move(r)); });
    REQUIRE(answers.size() == 3);
    REQUIRE(answers[2].ok());
    CHECK(answers[2]->etag == answers[0]->etag);
    CHECK(rig.fake->count(row.completion) == 1);
    CheckNothingLeft(rig);
  }
}

TEST_CASE("ObjectUpload: a writer is held back while parts are pending and the budget is over") {
  Rig rig(/*budget_limit=*/128 * KiB);
  const std::string data = Bytes(6 * 64 * KiB + 1, 15);
  auto up = rig.Make("k");
  REQUIRE(up->Append(data.data(), 64 * KiB + 1).ok());
  rig.Drain();  // initiated, part 1 uploaded
  CHECK(rig.budget->used() == 1);

  rig.fake->Pause();
  size_t at = 64 * KiB + 1;
  for (int i = 0; i < 3; ++i, at += 64 * KiB) REQUIRE(up->Append(data.data() + at, 64 * KiB).ok());
  CHECK(rig.gate->parts_pending() == 3);
  CHECK(rig.budget->used() == 3 * 64 * KiB + 1);
  int resumed = 0;
  up->WhenWritable([&resumed] { ++resumed; });
  rig.Drain();
  CHECK(resumed == 0);

  rig.fake->Resume();
  rig.Drain();
  CHECK(resumed == 1);
  CHECK(rig.budget->used() == 1);
  // Under the limit: no wait.
  up->WhenWritable([&resumed] { ++resumed; });
  CHECK(resumed == 2);

  REQUIRE(up->Append(data.data() + at, data.size() - at).ok());
  auto r = rig.Finish(*up);
  REQUIRE(r.ok());
  CHECK(*rig.fake->Data("k") == data);
  CheckNothingLeft(rig);
}

TEST_CASE("ObjectUpload: a writer is held back while its upload is being initiated") {
  // The parts sealed before the upload id is known are memory like any other: a writer whose
  // InitiateMultipart is slow must not buffer the whole file.
  Rig rig(/*budget_limit=*/128 * KiB);
  const std::string data = Bytes(4 * 64 * KiB, 16);
  auto up = rig.Make("k");
  rig.fake->Pause();  // InitiateMultipart is not answered
  Rig::AppendAll(*up, data.substr(0, 3 * 64 * KiB), 64 * KiB);
  CHECK(rig.budget->used() == 3 * 64 * KiB);
  int resumed = 0;
  up->WhenWritable([&resumed] { ++resumed; });
  rig.Drain();
  CHECK(resumed == 0);

  rig.fake->Resume();
  rig.Drain();
  CHECK(resumed == 1);
  Rig::AppendAll(*up, data.substr(3 * 64 * KiB), 64 * KiB);
  auto r = rig.Finish(*up);
  REQUIRE(r.ok());
  CHECK(*rig.fake->Data("k") == data);
  CheckNothingLeft(rig);
}

TEST_CASE("ObjectUpload: with the budget full, a part holding enough is sent early") {
  Rig rig(/*budget_limit=*/128 * KiB);
  // Other writers hold the budget: 200 KiB buffered elsewhere.
  rig.gate->AddBuffered(200 * KiB);
  const std::string data = Bytes(20 * KiB + 100 * KiB, 17);
  auto up = rig.Make("k");

  // Below max(min_part_size, limit / 8) = 16 KiB: kept.
  REQUIRE(up->Append(data.data(), 10 * KiB).ok());
  rig.Drain();
  CHECK(rig.fake->count(Op::kInitiate) == 0);
  // 20 KiB: sent early as part 1, though a part holds 64 KiB.
  REQUIRE(up->Append(data.data() + 10 * KiB, 10 * KiB).ok());
  rig.Drain();
  CHECK(rig.fake->count(Op::kInitiate) == 1);
  CHECK(rig.fake->count(Op::kUploadPart) == 1);
  CHECK(rig.budget->used() == 200 * KiB);  // part 1 answered: its memory freed

  // The budget frees: parts fill to their size again.
  rig.gate->ReleaseBuffered(200 * KiB);
  REQUIRE(up->Append(data.data() + 20 * KiB, 100 * KiB).ok());
  rig.Drain();
  CHECK(rig.fake->count(Op::kUploadPart) == 2);  // part 2: 64 KiB; 36 KiB kept
  CHECK(rig.budget->used() == 36 * KiB);
  auto r = rig.Finish(*up);
  REQUIRE(r.ok());
  CHECK(r->parts == 3);
  CHECK(*rig.fake->Data("k") == data);
  CheckNothingLeft(rig);
}

namespace {

// A writer that appends `data` in `piece`-byte writes, each next write after WhenWritable
// lets it, posted to the io_context like a new FUSE request. Records the highest budget use
// it saw right after an Append.
struct PacedWriter {
  Rig& rig;
  std::shared_ptr<ObjectUpload> up;
  std::string data;
  size_t piece;
  size_t at = 0;
  uint64_t peak = 0;
  bool done = false;

  void Step() {
    if (at == data.size()) {
      done = true;
      return;
    }
    const size_t n = std::min(piece, data.size() - at);
    REQUIRE(up->Append(data.data() + at, n).ok());
    at += n;
    peak = std::max(peak, rig.budget->used());
    up->WhenWritable([this] { boost::asio::post(rig.io, [this] { Step(); }); });
  }
};

}  // namespace

TEST_CASE("ObjectUpload: writers sharing a small budget all finish, byte for byte") {
  const uint64_t limit = 128 * KiB;
  Rig rig(limit, /*max_in_flight=*/2);
  std::vector<std::unique_ptr<PacedWriter>> writers;
  for (int i = 0; i < 3; ++i) {
    auto w = std::unique_ptr<PacedWriter>(new PacedWriter{rig, rig.Make("w" + std::to_string(i)),
                                                          Bytes(1 * MiB + 3 * i, 20 + i), 8 * KiB});
    writers.push_back(std::move(w));
  }
  rig.fake->Pause();  // the first steps all run before any answer
  for (auto& w : writers) w->Step();
  rig.fake->Resume();
  rig.Drain();
  for (size_t i = 0; i < writers.size(); ++i) {
    INFO("writer " << i);
    REQUIRE(writers[i]->done);
    auto r = rig.Finish(*writers[i]->up);
    REQUIRE(r.ok());
    CHECK(*rig.fake->Data("w" + std::to_string(i)) == writers[i]->data);
    // Held back: the budget went over by at most a write and an unfinished part per writer.
    CHECK(writers[i]->peak <= limit + writers.size() * (8 * KiB + 64 * KiB));
  }
  CHECK(rig.fake->max_in_flight() >= 1);
  CheckNothingLeft(rig);
}

TEST_CASE("ObjectUpload: a Complete left unanswered is settled by the abort and a HEAD") {
  struct Row {
    const char* what;
    std::function<void(FailingObjectClient&)> inject;
    bool unknown;  // the failure leaves open whether the server applied the Complete
    bool applied;  // it did: the object is at the key
  };
  const Row rows[] = {
      {"its answer lost after the server applied it",
       [](FailingObjectClient& f) { f.LoseAnswerOfNext(Op::kComplete, 1); }, true, true},
      {"timed out before the server applied it",
       [](FailingObjectClient& f) {
         f.RefuseNext(Op::kComplete, 1, Status(ErrorCode::kTimeout, "no answer"));
       },
       true, false},
      {"refused by the server: nothing to settle",
       [](FailingObjectClient& f) { f.RefuseNext(Op::kComplete, 1); }, false, false},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    Rig rig(64 * MiB, 8, /*failing=*/true);
    row.inject(*rig.fail);
    const std::string data = Bytes(3 * 64 * KiB + 5, 9);
    auto up = rig.Make("k");
    int settled_calls = 0;
    std::optional<ObjectInfo> settled;
    up->OnOutcomeSettled([&](std::optional<ObjectInfo> made) {
      ++settled_calls;
      settled = std::move(made);
    });
    Rig::AppendAll(*up, data, 4096);
    auto r = rig.Finish(*up);
    REQUIRE_FALSE(r.ok());
    CHECK(up->outcome_unknown() == row.unknown);
    CHECK(up->outcome_will_settle() == row.unknown);
    rig.Drain();
    CHECK(rig.fake->count(Op::kAbort) == 1);
    CHECK(rig.fake->OpenUploadCount() == 0);
    CHECK(rig.fake->HasObject("k") == row.applied);
    if (!row.unknown) {
      CHECK(settled_calls == 0);
      CHECK(rig.fake->count(Op::kHead) == 0);
      continue;
    }
    CHECK(rig.fake->count(Op::kHead) == 1);
    REQUIRE(settled_calls == 1);
    CHECK(settled.has_value() == row.applied);
    if (row.applied) {
      CHECK(settled->size == data.size());
      CHECK(*rig.fake->Data("k") == data);
    }
  }
}

TEST_CASE("ObjectUpload: an upload the server forgot (NoSuchUpload) fails with EIO, saying so") {
  Rig rig(64 * MiB, 8, /*failing=*/true);
  Status forgotten(ErrorCode::kNotFound, "The specified upload does not exist.");
  forgotten.WithService({404, "NoSuchUpload", "rid", "", ""});
  rig.fail->RefuseNext(Op::kUploadPart, 1, forgotten, 2);
  auto up = rig.Make("k");
  Rig::AppendAll(*up, Bytes(3 * 64 * KiB, 6), 64 * KiB);
  rig.Drain();
  const Status error = up->error();
  CHECK(error.code() == ErrorCode::kServerError);
  CHECK(error.ToErrno() == EIO);
  CHECK(error.message().find("no longer knows the multipart upload") != std::string::npos);
  CHECK_FALSE(rig.Finish(*up).ok());
  CheckNothingLeft(rig);
}

TEST_CASE("ObjectUpload: a name it took is its own: a completion after the first replaces it") {
  Rig rig;
  WriteOptions wo;
  wo.forbid_overwrite = true;
  auto up = rig.Make("new", wo);
  Rig::AppendAll(*up, Bytes(3 * 64 * KiB, 7), 64 * KiB);
  REQUIRE(rig.Finish(*up).ok());
  Rig::AppendAll(*up, Bytes(1000, 8), 1000);
  REQUIRE(rig.Finish(*up).ok());
  CHECK(rig.fake->Data("new")->size() == 3 * 64 * KiB + 1000);
  std::vector<bool> guards;
  for (const auto& req : rig.fake->requests()) {
    if (req.op == Op::kComplete) guards.push_back(req.forbid_overwrite);
  }
  CHECK(guards == std::vector<bool>{true, false});
  CheckNothingLeft(rig);
}
