// HEAD, PUT, multipart upload and DELETE through the client with the scripted executor.
#include <catch2/catch.hpp>

#include "common/crc64.h"
#include "unit/object/harness.h"

using namespace ossmount;
using namespace ossmount::object;
using namespace ossmount::object::testing;

TEST_CASE("HEAD parses the headers - a bodiless 404 is kNotFound with the request id") {
  Harness h;
  h.executor->respond = [](const SeenRequest& r, int i) {
    CHECK(r.method == "HEAD");
    if (i == 0) {
      return FakeReply::Ok("", {{"Content-Length", "77"},
                                {"ETag", "\"x\""},
                                {"Last-Modified", "Fri, 04 Mar 2022 02:46:25 GMT"},
                                {"x-oss-hash-crc64ecma", "42"},
                                {"x-oss-storage-class", "Standard"},
                                {"Content-Type", "image/jpeg"}});
    }
    return FakeReply::Error(404, "", {{"x-oss-request-id", "RID404"}});
  };
  auto info = h.Head("d/x.jpg");
  REQUIRE(info.ok());
  CHECK(info->key == "d/x.jpg");
  CHECK(info->size == 77);
  CHECK(info->etag == "\"x\"");
  CHECK(info->crc64 == 42u);
  CHECK(info->content_type == "image/jpeg");
  CHECK(info->storage_class == "Standard");
  CHECK(info->mtime_sec == 1646361985);
  auto missing = h.Head("nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kNotFound);
  CHECK(missing.status().service().request_id == "RID404");
  CHECK(missing.status().message().find("'nope'") != std::string::npos);
}

TEST_CASE("PUT sends the body and checks the returned CRC-64 - a mismatch is retried") {
  Harness h;
  auto body = SharedBytes::Copy("checkpoint bytes");
  int bad = 1;
  h.executor->respond = [&](const SeenRequest& r, int) {
    CHECK(r.method == "PUT");
    CHECK(r.body == body.view());
    CHECK(*r.Header("content-type") == "application/octet-stream");
    std::string crc = bad-- > 0 ? "12345" : Crc(std::string(body.view()));
    return FakeReply::Ok("", {{"ETag", "\"put-etag\""}, {"x-oss-hash-crc64ecma", crc}});
  };
  auto put = h.Call<Result<PutResult>>([&](auto cb) { h.Client().Put("ck/1.pt", body, {}, cb); });
  REQUIRE(put.ok());
  CHECK(put->etag == "\"put-etag\"");
  CHECK(put->crc64 == Crc64(0, body.data(), body.size()));
  CHECK(h.executor->count() == 2);

  bad = 100;
  auto failed =
      h.Call<Result<PutResult>>([&](auto cb) { h.Client().Put("ck/1.pt", body, {}, cb); });
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == ErrorCode::kIntegrity);
}

TEST_CASE("Multipart: initiate, upload parts, complete in order, abort") {
  Harness h;
  h.executor->respond = [](const SeenRequest& r, int) {
    if (r.method == "POST" && r.url.find("?uploads") != std::string::npos) {
      return FakeReply::Ok(
          "<InitiateMultipartUploadResult><Bucket>bkt</Bucket><Key>big</Key>"
          "<UploadId>UP/1+x</UploadId></InitiateMultipartUploadResult>");
    }
    if (r.method == "PUT") {
      std::string n = r.url.substr(r.url.find("partNumber=") + 11, 1);
      return FakeReply::Ok("",
                           {{"ETag", "\"part" + n + "\""}, {"x-oss-hash-crc64ecma", Crc(r.body)}});
    }
    if (r.method == "POST") {
      return FakeReply::Ok(
          "<CompleteMultipartUploadResult><ETag>\"whole-3\"</ETag></CompleteMultipartUploadResult>",
          {{"x-oss-hash-crc64ecma", Crc(std::string(10, 'b') + std::string(10, 'c'))}});
    }
    FakeReply ok = FakeReply::Ok("");
    ok.status = 204;
    return ok;
  };
  auto id = h.Call<Result<std::string>>([&](auto cb) { h.Client().InitiateMultipart("big", cb); });
  REQUIRE(id.ok());
  CHECK(id.value() == "UP/1+x");

  std::vector<PartInfo> parts;
  for (int n = 1; n <= 2; ++n) {
    auto body = SharedBytes::Copy(std::string(10, static_cast<char>('a' + n)));
    auto part = h.Call<Result<PartInfo>>(
        [&](auto cb) { h.Client().UploadPart("big", id.value(), n, body, cb); });
    REQUIRE(part.ok());
    CHECK(part->part_number == n);
    CHECK(part->etag == "\"part" + std::to_string(n) + "\"");
    CHECK(part->size == 10);
    CHECK(part->crc64 == Crc64(0, body.data(), body.size()));
    parts.push_back(part.value());
  }
  auto done = h.Call<Result<PutResult>>(
      [&](auto cb) { h.Client().CompleteMultipart("big", id.value(), parts, {}, cb); });
  REQUIRE(done.ok());
  CHECK(done->etag == "\"whole-3\"");
  const std::string whole = std::string(10, 'b') + std::string(10, 'c');
  CHECK(done->crc64 == Crc64(0, whole.data(), whole.size()));

  auto aborted = h.Call<Status>([&](auto cb) { h.Client().AbortMultipart("big", id.value(), cb); });
  CHECK(aborted.ok());

  auto seen = h.executor->seen();
  REQUIRE(seen.size() == 5);
  CHECK(seen[0].url == "https://bkt.oss-cn-hangzhou.aliyuncs.com/big?uploads");
  CHECK(seen[1].url ==
        "https://bkt.oss-cn-hangzhou.aliyuncs.com/big?partNumber=1&uploadId=UP%2F1%2Bx");
  CHECK(seen[3].url == "https://bkt.oss-cn-hangzhou.aliyuncs.com/big?uploadId=UP%2F1%2Bx");
  CHECK(seen[3].body ==
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;part1&quot;</ETag>"
        "</Part><Part><PartNumber>2</PartNumber><ETag>&quot;part2&quot;</ETag></Part>"
        "</CompleteMultipartUpload>");
  CHECK(seen[4].method == "DELETE");
}

TEST_CASE("Multipart argument checks and a 200 carrying an error") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int i) {
    if (i == 0) return FakeReply::Ok("<Error><Code>InternalError</Code></Error>");
    if (i == 1) {
      return FakeReply::Ok(
          "<CompleteMultipartUploadResult><ETag>\"w\"</ETag></CompleteMultipartUploadResult>");
    }
    return FakeReply::Error(404, "NoSuchUpload");
  };
  auto unordered = h.Call<Result<PutResult>>([&](auto cb) {
    h.Client().CompleteMultipart("k", "u", {NumberedPart(2, "a"), NumberedPart(1, "b")}, {}, cb);
  });
  CHECK(unordered.status().code() == ErrorCode::kInvalidArgument);
  auto bad_part = h.Call<Result<PartInfo>>(
      [&](auto cb) { h.Client().UploadPart("k", "u", 0, SharedBytes::Copy("x"), cb); });
  CHECK(bad_part.status().code() == ErrorCode::kInvalidArgument);
  CHECK(h.executor->count() == 0);

  auto done = h.Call<Result<PutResult>>(
      [&](auto cb) { h.Client().CompleteMultipart("k", "u", {NumberedPart(1, "a")}, {}, cb); });
  REQUIRE(done.ok());  // the 200-with-InternalError was retried
  CHECK(done->etag == "\"w\"");
  CHECK(h.executor->count() == 2);

  // An upload the server no longer knows has nothing left to abort.
  auto abort = h.Call<Status>([&](auto cb) { h.Client().AbortMultipart("k", "u", cb); });
  CHECK(abort.ok());
  CHECK(h.executor->count() == 3);
}

TEST_CASE("DELETE: 204 and a missing key succeed - a missing bucket does not") {
  Harness h;
  h.executor->respond = [](const SeenRequest& r, int i) {
    CHECK(r.method == "DELETE");
    if (i == 0) {
      FakeReply ok = FakeReply::Ok("");
      ok.status = 204;
      return ok;
    }
    if (i == 1) return FakeReply::Error(404, "NoSuchKey");
    return FakeReply::Error(404, "NoSuchBucket");
  };
  CHECK(h.Call<Status>([&](auto cb) { h.Client().Delete("a", cb); }).ok());
  CHECK(h.Call<Status>([&](auto cb) { h.Client().Delete("a", cb); }).ok());
  Status s = h.Call<Status>([&](auto cb) { h.Client().Delete("a", cb); });
  CHECK(s.code() == ErrorCode::kNoSuchBucket);
  CHECK(s.message() ==
        "bucket 'bkt' does not exist at endpoint https://oss-cn-hangzhou.aliyuncs.com: check the "
        "bucket name and --endpoint/--region");
}

TEST_CASE("LIST errors carry the bucket context - max_keys is checked") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int) {
    return FakeReply::Error(403, "AccessDenied");
  };
  auto page = h.List(ListRequest{});
  REQUIRE_FALSE(page.ok());
  CHECK(page.status().code() == ErrorCode::kAccessDenied);
  CHECK(page.status().message().find("LIST of bucket 'bkt'") != std::string::npos);
  CHECK(page.status().message().find("fake test credentials") != std::string::npos);
  CHECK(page.status().message().find("SECRET") == std::string::npos);
  ListRequest bad;
  bad.max_keys = 0;
  CHECK(h.List(bad).status().code() == ErrorCode::kInvalidArgument);
}
