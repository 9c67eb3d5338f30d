// The write side of the test doubles (tests/support): FakeObjectClient follows the service's
// rules for uploads, copies and deletes, and FailingObjectClient injects each write fault.
// Tests of the layers above rely on both behaving as documented.
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include "common/crc64.h"
#include "support/failing_object_client.h"
#include "support/fake_object_client.h"

using namespace ossmount;
using namespace ossmount::testing;

namespace {

struct RigF {
  RigF() : fake(std::make_shared<FakeObjectClient>(io)) {}

  template <typename T, typename Start>
  T Call(Start start) {
    std::optional<T> out;
    start([&](T value) { out.emplace(std::move(value)); });
    CHECK_FALSE(out.has_value());  // never inline
    io.restart();
    io.run();
    REQUIRE(out.has_value());
    return std::move(*out);
  }

  SharedBytes Body(std::string s) { return SharedBytes::FromString(std::move(s)); }

  Result<PartInfo> Upload(ObjectClient& c, const std::string& id, int n, std::string data) {
    auto body = Body(std::move(data));
    return Call<Result<PartInfo>>([&](auto h) { c.UploadPart("big", id, n, body, std::move(h)); });
  }

  Result<PutResult> Complete(ObjectClient& c, const std::string& id, std::vector<PartInfo> parts,
                             WriteOptions options = {}) {
    return Call<Result<PutResult>>(
        [&](auto h) { c.CompleteMultipart("big", id, std::move(parts), options, std::move(h)); });
  }

  std::string Initiate(ObjectClient& c) {
    auto id = Call<Result<std::string>>([&](auto h) { c.InitiateMultipart("big", std::move(h)); });
    REQUIRE(id.ok());
    return id.value();
  }

  boost::asio::io_context io;
  std::shared_ptr<FakeObjectClient> fake;
};

WriteOptions NoReplaceF() {
  WriteOptions o;
  o.forbid_overwrite = true;
  return o;
}

}  // namespace

TEST_CASE("Fake multipart: sizes and CRCs per part, order, ETags and the minimum part size") {
  RigF r;
  r.fake->set_min_part_size(4);
  std::string id = r.Initiate(*r.fake);
  CHECK(r.fake->OpenUploadCount() == 1);
  auto p1 = r.Upload(*r.fake, id, 1, "abcd");
  auto p2 = r.Upload(*r.fake, id, 2, "ef");
  REQUIRE(p1.ok());
  REQUIRE(p2.ok());
  CHECK(p1->size == 4);
  CHECK(p1->crc64 == Crc64(0, "abcd", 4));
  CHECK(p1->etag != p2->etag);
  CHECK(r.fake->UploadedParts(id) == std::vector<int>{1, 2});

  auto reversed = r.Complete(*r.fake, id, {*p2, *p1});
  CHECK(reversed.status().code() == ErrorCode::kInvalidArgument);
  CHECK(reversed.status().service().code == "InvalidPartOrder");
  PartInfo wrong = *p1;
  wrong.etag = "\"other\"";
  CHECK(r.Complete(*r.fake, id, {wrong, *p2}).status().service().code == "InvalidPart");
  auto small = r.Upload(*r.fake, id, 1, "abc");  // replaces part 1 with a short one
  CHECK(r.Complete(*r.fake, id, {*small, *p2}).status().service().code == "EntityTooSmall");
  p1 = r.Upload(*r.fake, id, 1, "abcd");
  auto done = r.Complete(*r.fake, id, {*p1, *p2});
  REQUIRE(done.ok());
  CHECK(done->crc64 == Crc64(0, "abcdef", 6));
  CHECK(r.fake->Data("big") == "abcdef");
  CHECK(r.fake->OpenUploadCount() == 0);
  // The upload is gone once completed; aborting it again still succeeds.
  CHECK(r.Complete(*r.fake, id, {*p1, *p2}).status().service().code == "NoSuchUpload");
  CHECK(r.Call<Status>([&](auto h) { r.fake->AbortMultipart("big", id, h); }).ok());
  CHECK(r.fake->count(Op::kComplete) == 5);
  CHECK(r.fake->count(Op::kUploadPart) == 4);
}

TEST_CASE("Fake forbid-overwrite: Put, Complete and Copy refuse an existing key") {
  RigF r;
  r.fake->PutObject("big", "old");
  auto put = r.Call<Result<PutResult>>(
      [&](auto h) { r.fake->Put("big", r.Body("new"), NoReplaceF(), h); });
  CHECK(put.status().code() == ErrorCode::kAlreadyExists);
  CHECK(put.status().service().code == "FileAlreadyExists");
  CHECK(r.fake->Data("big") == "old");

  std::string id = r.Initiate(*r.fake);
  auto p1 = r.Upload(*r.fake, id, 1, "x");
  CHECK(r.Complete(*r.fake, id, {*p1}, NoReplaceF()).status().code() == ErrorCode::kAlreadyExists);
  CHECK(r.fake->OpenUploadCount() == 1);  // a refused Complete leaves the upload open
  r.fake->PutObject("src", "source");
  CHECK(r.Call<Result<PutResult>>(
             [&](auto h) { r.fake->CopyObject("src", "", "big", NoReplaceF(), h); })
            .status()
            .code() == ErrorCode::kAlreadyExists);
  REQUIRE(
      r.Call<Result<PutResult>>([&](auto h) { r.fake->CopyObject("src", "", "big", {}, h); }).ok());
  CHECK(r.fake->Data("big") == "source");
  auto log = r.fake->requests();
  CHECK(log.front().forbid_overwrite);
  CHECK(log.back().source_key == "src");
}

TEST_CASE("Fake copies: UploadPartCopy ranges and If-Match, CopyObject of a missing source") {
  RigF r;
  std::string etag = r.fake->PutObject("src", "0123456789");
  std::string id = r.Initiate(*r.fake);
  auto part = r.Call<Result<PartInfo>>(
      [&](auto h) { r.fake->UploadPartCopy("big", id, 1, "src", etag, 2, 5, h); });
  REQUIRE(part.ok());
  CHECK(part->size == 5);
  CHECK(part->crc64 == Crc64(0, "23456", 5));
  auto tail = r.Call<Result<PartInfo>>(
      [&](auto h) { r.fake->UploadPartCopy("big", id, 2, "src", "", 8, 2, h); });
  REQUIRE(tail.ok());
  CHECK(tail->size == 2);
  CHECK(r.Call<Result<PartInfo>>([&](auto h) {
           r.fake->UploadPartCopy("big", id, 3, "src", "", 8, 3, h);  // past the end
         })
            .status()
            .code() == ErrorCode::kInvalidRange);
  CHECK(r.Call<Result<PartInfo>>(
             [&](auto h) { r.fake->UploadPartCopy("big", id, 3, "src", "\"old\"", 0, 1, h); })
            .status()
            .code() == ErrorCode::kPreconditionFailed);
  CHECK(r.Call<Result<PartInfo>>(
             [&](auto h) { r.fake->UploadPartCopy("big", id, 3, "src", "", 10, 1, h); })
            .status()
            .code() == ErrorCode::kInvalidRange);
  r.fake->set_min_part_size(1);
  REQUIRE(r.Complete(*r.fake, id, {*part, *tail}).ok());
  CHECK(r.fake->Data("big") == "2345689");
  CHECK(r.Call<Result<PutResult>>([&](auto h) { r.fake->CopyObject("nope", "", "d", {}, h); })
            .status()
            .code() == ErrorCode::kNotFound);
  CHECK(r.fake->count(Op::kUploadPartCopy) == 5);
  CHECK(r.fake->count(Op::kCopy) == 1);
}

TEST_CASE("Fake DeleteMultiple and ListMultipartUploads") {
  RigF r;
  r.fake->PutObject("a", "1");
  r.fake->PutObject("b", "2");
  CHECK(r.Call<Status>([&](auto h) { r.fake->DeleteMultiple({"a", "missing"}, h); }).ok());
  CHECK_FALSE(r.fake->HasObject("a"));
  CHECK(r.fake->HasObject("b"));
  std::vector<std::string> many(1001, "b");
  CHECK(r.Call<Status>([&](auto h) { r.fake->DeleteMultiple(many, h); }).code() ==
        ErrorCode::kInvalidArgument);
  CHECK(r.fake->HasObject("b"));

  std::string first = r.Initiate(*r.fake);
  std::string second = r.Initiate(*r.fake);
  auto other = r.Call<Result<std::string>>([&](auto h) { r.fake->InitiateMultipart("x/y", h); });
  auto open = r.Call<Result<std::vector<OpenUpload>>>(
      [&](auto h) { r.fake->ListMultipartUploads("bi", h); });
  REQUIRE(open.ok());
  REQUIRE(open->size() == 2);
  CHECK((*open)[0].upload_id == first);
  CHECK((*open)[1].upload_id == second);
  CHECK((*open)[0].initiated_sec < (*open)[1].initiated_sec);
  CHECK(r.fake->count(Op::kListUploads) == 1);
  CHECK(r.fake->count(Op::kDeleteMultiple) == 2);
}

TEST_CASE("Failing client: a part refused N times, then through") {
  RigF r;
  FailingObjectClient failing(r.io, r.fake);
  std::string id = r.Initiate(failing);
  failing.RefuseNext(Op::kUploadPart, 2, Status(ErrorCode::kServerError, "refused part", true), 3);
  CHECK(r.Upload(failing, id, 1, "a").ok());  // another part number passes
  for (int i = 0; i < 2; ++i) {
    auto refused = r.Upload(failing, id, 3, "c");
    CHECK(refused.status().message() == "refused part");
    CHECK(refused.status().retryable());
  }
  CHECK(r.Upload(failing, id, 3, "c").ok());
  CHECK(failing.failures() == 2);
  CHECK(r.fake->UploadedParts(id) == std::vector<int>{1, 3});  // refused ones never arrived
}

TEST_CASE("Failing client: a lost Complete answer is applied, the caller hears kNetwork") {
  RigF r;
  FailingObjectClient failing(r.io, r.fake);
  std::string id = r.Initiate(failing);
  auto p1 = r.Upload(failing, id, 1, "only");
  failing.LoseAnswerOfNext(Op::kComplete, 1);
  auto lost = r.Complete(failing, id, {*p1});
  CHECK(lost.status().code() == ErrorCode::kNetwork);
  CHECK(lost.status().retryable());
  CHECK(r.fake->Data("big") == "only");  // the server did complete it
  // Asking again finds the upload gone, as the service would answer.
  CHECK(r.Complete(failing, id, {*p1}).status().service().code == "NoSuchUpload");
}

TEST_CASE("Failing client: Complete and Put refused, a body cut mid-way reaches nothing") {
  RigF r;
  FailingObjectClient failing(r.io, r.fake);
  std::string id = r.Initiate(failing);
  auto p1 = r.Upload(failing, id, 1, "only");
  failing.RefuseNext(Op::kComplete, 1);
  CHECK(r.Complete(failing, id, {*p1}).status().message() == "injected failure");
  CHECK_FALSE(r.fake->HasObject("big"));
  CHECK(r.fake->OpenUploadCount() == 1);

  failing.RefuseNext(Op::kPut, 1, Status(ErrorCode::kAccessDenied, "no"));
  auto put =
      r.Call<Result<PutResult>>([&](auto h) { failing.Put("p", r.Body("x"), {}, std::move(h)); });
  CHECK(put.status().code() == ErrorCode::kAccessDenied);

  failing.CutBodyOfNext(Op::kPut, 1);
  auto cut =
      r.Call<Result<PutResult>>([&](auto h) { failing.Put("p", r.Body("x"), {}, std::move(h)); });
  CHECK(cut.status().code() == ErrorCode::kNetwork);
  CHECK_FALSE(r.fake->HasObject("p"));
  CHECK(r.fake->count(Op::kPut) == 0);
  REQUIRE(r.Call<Result<PutResult>>([&](auto h) {
             failing.Put("p", r.Body("x"), {}, std::move(h));
           }).ok());
  CHECK(r.fake->Data("p") == "x");

  // FailNth counts the new operations too.
  failing.FailNth(1, Op::kDeleteMultiple);
  CHECK_FALSE(r.Call<Status>([&](auto h) { failing.DeleteMultiple({"p"}, h); }).ok());
  CHECK(r.fake->HasObject("p"));
  CHECK(failing.failures() == 4);
}
