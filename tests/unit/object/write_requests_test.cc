// The wire requests of the write operations, in both dialects: method, URL (path and query),
// the headers that carry meaning (forbid-overwrite, Content-MD5, copy source and range), the
// XML bodies, and that the real signers cover the headers the protocol says they must.
#include <catch2/catch.hpp>

#include "auth/signer.h"
#include "object/content_types.h"
#include "object/signer_choice.h"
#include "object/write_operations.h"
#include "unit/object/harness.h"

using namespace ossmount;
using namespace ossmount::object;
using namespace ossmount::object::testing;

namespace {

constexpr const char* kHostW = "https://bkt.oss-cn-hangzhou.aliyuncs.com";

Harness& DialectedW(Harness& h, Protocol protocol) {
  h.options.protocol = protocol;
  return h;
}

FakeReply PutOkW(const SeenRequest& r) {
  return FakeReply::Ok("", {{"ETag", "\"e\""}, {"x-oss-hash-crc64ecma", Crc(r.body)}});
}

FakeReply XmlW(std::string body) { return FakeReply::Ok(std::move(body)); }

// The copy-source header of the request's dialect (a CopyObject carries it).
std::string protocol_copy_header(const SeenRequest& r) {
  return r.Header("x-amz-copy-source") ? "x-amz-copy-source" : "x-oss-copy-source";
}

WriteOptions NoReplaceW() {
  WriteOptions o;
  o.forbid_overwrite = true;
  return o;
}

}  // namespace

TEST_CASE("PUT on OSS: x-oss-forbid-overwrite only when asked - no Content-MD5") {
  Harness h;
  h.executor->respond = [](const SeenRequest& r, int) { return PutOkW(r); };
  auto body = SharedBytes::Copy("data");
  REQUIRE(h.Call<Result<PutResult>>([&](auto cb) {
             h.Client().Put("dir/a b.pt", body, NoReplaceW(), cb);
           }).ok());
  REQUIRE(
      h.Call<Result<PutResult>>([&](auto cb) { h.Client().Put("dir/a b.pt", body, {}, cb); }).ok());
  auto seen = h.executor->seen();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].method == "PUT");
  CHECK(seen[0].url == std::string(kHostW) + "/dir/a%20b.pt");
  CHECK(seen[0].body == "data");
  REQUIRE(seen[0].Header("x-oss-forbid-overwrite"));
  CHECK(*seen[0].Header("x-oss-forbid-overwrite") == "true");
  CHECK(seen[0].Header("if-none-match") == nullptr);
  CHECK(seen[0].Header("content-md5") == nullptr);
  CHECK(seen[1].Header("x-oss-forbid-overwrite") == nullptr);
}

TEST_CASE("PUT on S3: Content-MD5 of the body and If-None-Match: * when overwriting is forbidden") {
  Harness h;
  DialectedW(h, Protocol::kS3);
  h.executor->respond = [](const SeenRequest&, int) {
    return FakeReply::Ok("", {{"ETag", "\"8d777f385d3dfec8815d20f7496026dc\""}});
  };
  auto body = SharedBytes::Copy("data");
  auto put =
      h.Call<Result<PutResult>>([&](auto cb) { h.Client().Put("k", body, NoReplaceW(), cb); });
  REQUIRE(put.ok());
  CHECK(put->etag == "\"8d777f385d3dfec8815d20f7496026dc\"");
  CHECK_FALSE(put->crc64.has_value());  // S3 reports no CRC-64/XZ
  REQUIRE(h.Call<Result<PutResult>>([&](auto cb) { h.Client().Put("k", body, {}, cb); }).ok());
  auto seen = h.executor->seen();
  REQUIRE(seen.size() == 2);
  REQUIRE(seen[0].Header("content-md5"));
  CHECK(*seen[0].Header("content-md5") == "jXd/OF09/siBXSD3SWAm3A==");  // base64 MD5("data")
  REQUIRE(seen[0].Header("if-none-match"));
  CHECK(*seen[0].Header("if-none-match") == "*");
  CHECK(seen[0].Header("x-oss-forbid-overwrite") == nullptr);
  CHECK(seen[1].Header("if-none-match") == nullptr);
  CHECK(*seen[1].Header("content-md5") == "jXd/OF09/siBXSD3SWAm3A==");
}

TEST_CASE("UploadPart: Content-MD5 on S3 only - the result carries the part's size and CRC-64") {
  for (auto protocol : {Protocol::kOss, Protocol::kS3}) {
    Harness h;
    DialectedW(h, protocol);
    h.executor->respond = [](const SeenRequest& r, int) { return PutOkW(r); };
    auto body = SharedBytes::Copy("");
    auto part =
        h.Call<Result<PartInfo>>([&](auto cb) { h.Client().UploadPart("big", "U1", 7, body, cb); });
    REQUIRE(part.ok());
    CHECK(part->part_number == 7);
    CHECK(part->size == 0);
    CHECK(part->crc64 == 0u);
    auto seen = h.executor->seen();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].url == std::string(kHostW) + "/big?partNumber=7&uploadId=U1");
    if (protocol == Protocol::kS3) {
      REQUIRE(seen[0].Header("content-md5"));
      CHECK(*seen[0].Header("content-md5") == "1B2M2Y8AsgTpgAmY7PhCfg==");  // MD5("")
    } else {
      CHECK(seen[0].Header("content-md5") == nullptr);
    }
  }
}

TEST_CASE("UploadPartCopy on OSS: copy source, range and if-match headers - CopyPartResult ETag") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int) {
    return FakeReply::Ok(
        "<?xml version=\"1.0\"?><CopyPartResult><LastModified>2023-10-12T02:03:53.000Z"
        "</LastModified><ETag>\"cp2\"</ETag></CopyPartResult>",
        {{"x-oss-hash-crc64ecma", "777"}});
  };
  auto part = h.Call<Result<PartInfo>>([&](auto cb) {
    h.Client().UploadPartCopy("dst/big", "UP/1", 2, "src dir/a+b.bin", "\"src-etag\"", 100, 50, cb);
  });
  REQUIRE(part.ok());
  CHECK(part->part_number == 2);
  CHECK(part->etag == "\"cp2\"");
  CHECK(part->size == 50);
  CHECK(part->crc64 == 777u);
  auto seen = h.executor->seen();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method == "PUT");
  CHECK(seen[0].url == std::string(kHostW) + "/dst/big?partNumber=2&uploadId=UP%2F1");
  CHECK(seen[0].body.empty());
  CHECK(*seen[0].Header("x-oss-copy-source") == "/bkt/src%20dir/a%2Bb.bin");
  CHECK(*seen[0].Header("x-oss-copy-source-range") == "bytes=100-149");
  CHECK(*seen[0].Header("x-oss-copy-source-if-match") == "\"src-etag\"");
  CHECK(seen[0].Header("x-amz-copy-source") == nullptr);
}

TEST_CASE("UploadPartCopy on S3: x-amz-copy-source headers, no if-match for any version") {
  Harness h;
  DialectedW(h, Protocol::kS3);
  h.executor->respond = [](const SeenRequest&, int) {
    return XmlW("<CopyPartResult><ETag>\"c1\"</ETag></CopyPartResult>");
  };
  auto part = h.Call<Result<PartInfo>>(
      [&](auto cb) { h.Client().UploadPartCopy("d", "U", 1, "s", "", 0, 1, cb); });
  REQUIRE(part.ok());
  CHECK(part->etag == "\"c1\"");
  CHECK_FALSE(part->crc64.has_value());
  auto seen = h.executor->seen();
  REQUIRE(seen.size() == 1);
  CHECK(*seen[0].Header("x-amz-copy-source") == "/bkt/s");
  CHECK(*seen[0].Header("x-amz-copy-source-range") == "bytes=0-0");
  CHECK(seen[0].Header("x-amz-copy-source-if-match") == nullptr);
  CHECK(seen[0].Header("x-oss-copy-source") == nullptr);
}

TEST_CASE("UploadPartCopy errors name the source - bad arguments never reach the network") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int i) {
    return i == 0 ? FakeReply::Error(412, "PreconditionFailed")
                  : FakeReply::Error(404, "NoSuchKey");
  };
  auto changed = h.Call<Result<PartInfo>>(
      [&](auto cb) { h.Client().UploadPartCopy("d", "U", 1, "src", "\"v1\"", 0, 10, cb); });
  REQUIRE_FALSE(changed.ok());
  CHECK(changed.status().code() == ErrorCode::kPreconditionFailed);
  CHECK(changed.status().message().find("copy source 'src' changed") != std::string::npos);
  auto missing = h.Call<Result<PartInfo>>(
      [&](auto cb) { h.Client().UploadPartCopy("d", "U", 1, "src", "", 0, 10, cb); });
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == ErrorCode::kNotFound);
  CHECK(missing.status().message().find("copy source 'src' does not exist") != std::string::npos);
  CHECK(h.executor->count() == 2);

  for (auto row : {std::pair{0, 10}, std::pair{10001, 10}, std::pair{1, 0}}) {
    const int n = row.first;  // (clang cannot capture a structured binding)
    const int len = row.second;
    auto bad = h.Call<Result<PartInfo>>(
        [&](auto cb) { h.Client().UploadPartCopy("d", "U", n, "src", "", 0, len, cb); });
    CHECK(bad.status().code() == ErrorCode::kInvalidArgument);
  }
  CHECK(h.executor->count() == 2);
}

TEST_CASE("CompleteMultipart with forbid-overwrite: the header per dialect - exists is EEXIST") {
  for (auto protocol : {Protocol::kOss, Protocol::kS3}) {
    Harness h;
    DialectedW(h, protocol);
    const bool s3 = protocol == Protocol::kS3;
    h.executor->respond = [s3](const SeenRequest&, int) {
      return s3 ? FakeReply::Error(412, "PreconditionFailed")
                : FakeReply::Error(409, "FileAlreadyExists");
    };
    auto done = h.Call<Result<PutResult>>([&](auto cb) {
      h.Client().CompleteMultipart("k", "U", {NumberedPart(1, "\"a\"")}, NoReplaceW(), cb);
    });
    REQUIRE_FALSE(done.ok());
    CHECK(done.status().code() == ErrorCode::kAlreadyExists);
    CHECK(done.status().ToErrno() == EEXIST);
    CHECK_FALSE(done.status().retryable());
    auto seen = h.executor->seen();
    REQUIRE(seen.size() == 1);  // not retried, and no HEAD: the first answer is the truth
    CHECK(seen[0].method == "POST");
    CHECK(seen[0].url == std::string(kHostW) + "/k?uploadId=U");
    CHECK(seen[0].body ==
          "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag>"
          "</Part></CompleteMultipartUpload>");
    if (s3) {
      CHECK(*seen[0].Header("if-none-match") == "*");
      CHECK(seen[0].Header("x-oss-forbid-overwrite") == nullptr);
    } else {
      CHECK(*seen[0].Header("x-oss-forbid-overwrite") == "true");
      CHECK(seen[0].Header("if-none-match") == nullptr);
    }
  }
}

TEST_CASE("CopyObject: PUT with the copy source, if-match and forbid-overwrite per dialect") {
  for (auto protocol : {Protocol::kOss, Protocol::kS3}) {
    Harness h;
    DialectedW(h, protocol);
    const bool s3 = protocol == Protocol::kS3;
    h.executor->respond = [](const SeenRequest&, int i) {
      // A copy can fail after the 200 has started: retried like Complete's.
      if (i == 0) return XmlW("<Error><Code>InternalError</Code></Error>");
      return FakeReply::Ok(
          "<CopyObjectResult><LastModified>2023-10-12T02:03:53.000Z</LastModified>"
          "<ETag>\"copied\"</ETag></CopyObjectResult>",
          {{"x-oss-hash-crc64ecma", "5"}});
    };
    auto copy = h.Call<Result<PutResult>>(
        [&](auto cb) { h.Client().CopyObject("a/src é", "\"v1\"", "b/dst", NoReplaceW(), cb); });
    REQUIRE(copy.ok());
    CHECK(copy->etag == "\"copied\"");
    CHECK(copy->crc64 == (s3 ? std::nullopt : std::optional<uint64_t>(5)));
    auto seen = h.executor->seen();
    REQUIRE(seen.size() == 2);
    CHECK(seen[1].method == "PUT");
    CHECK(seen[1].url == std::string(kHostW) + "/b/dst");
    CHECK(seen[1].body.empty());
    const std::string prefix = s3 ? "x-amz-copy-source" : "x-oss-copy-source";
    REQUIRE(seen[1].Header(prefix));
    CHECK(*seen[1].Header(prefix) == "/bkt/a/src%20%C3%A9");
    CHECK(*seen[1].Header(prefix + "-if-match") == "\"v1\"");
    CHECK(seen[1].Header(prefix + "-range") == nullptr);
    CHECK(seen[1].Header(s3 ? "if-none-match" : "x-oss-forbid-overwrite") != nullptr);
  }
}

TEST_CASE("ListMultipartUploads: pages by key and upload-id markers, decoded, oldest first") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int i) {
    if (i == 0) {
      return XmlW(
          "<ListMultipartUploadsResult><EncodingType>url</EncodingType>"
          "<IsTruncated>true</IsTruncated><NextKeyMarker>ck%2Fa%20b</NextKeyMarker>"
          "<NextUploadIdMarker>U2</NextUploadIdMarker>"
          "<Upload><Key>ck%2Fa%20b</Key><UploadId>U1</UploadId>"
          "<Initiated>2023-10-12T02:03:53.000Z</Initiated></Upload>"
          "<Upload><Key>ck%2Fa%20b</Key><UploadId>U2</UploadId>"
          "<Initiated>2023-10-12T02:00:00.000Z</Initiated></Upload>"
          "</ListMultipartUploadsResult>");
    }
    return XmlW(
        "<ListMultipartUploadsResult><IsTruncated>false</IsTruncated>"
        "<Upload><Key>ck/z</Key><UploadId>U3</UploadId></Upload>"
        "</ListMultipartUploadsResult>");
  };
  auto uploads = h.Call<Result<std::vector<OpenUpload>>>(
      [&](auto cb) { h.Client().ListMultipartUploads("ck/", cb); });
  REQUIRE(uploads.ok());
  REQUIRE(uploads->size() == 3);
  CHECK((*uploads)[0].upload_id == "U3");  // no Initiated: 0, the oldest
  CHECK((*uploads)[1].upload_id == "U2");
  CHECK((*uploads)[1].key == "ck/a b");
  CHECK((*uploads)[1].initiated_sec == 1697076000);
  CHECK((*uploads)[2].upload_id == "U1");
  CHECK((*uploads)[2].initiated_sec == 1697076233);
  auto seen = h.executor->seen();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].method == "GET");
  CHECK(seen[0].url ==
        std::string(kHostW) + "/?uploads&prefix=ck%2F&max-uploads=1000&encoding-type=url");
  CHECK(seen[1].url == std::string(kHostW) +
                           "/?uploads&prefix=ck%2F&key-marker=ck%2Fa%20b&upload-id-marker=U2"
                           "&max-uploads=1000&encoding-type=url");
}

TEST_CASE("ListMultipartUploads refuses a listing that loops or never ends") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int) {
    return XmlW(
        "<ListMultipartUploadsResult><IsTruncated>true</IsTruncated><NextKeyMarker>m"
        "</NextKeyMarker><NextUploadIdMarker>u</NextUploadIdMarker></ListMultipartUploadsResult>");
  };
  auto looping = h.Call<Result<std::vector<OpenUpload>>>(
      [&](auto cb) { h.Client().ListMultipartUploads("", cb); });
  REQUIRE_FALSE(looping.ok());
  CHECK(looping.status().code() == ErrorCode::kProtocol);
  CHECK(h.executor->count() == 2);  // the second page pointed where it started

  Harness endless;
  endless.executor->respond = [](const SeenRequest&, int i) {
    return XmlW("<ListMultipartUploadsResult><IsTruncated>true</IsTruncated><NextKeyMarker>m" +
                std::to_string(i) + "</NextKeyMarker></ListMultipartUploadsResult>");
  };
  auto never = endless.Call<Result<std::vector<OpenUpload>>>(
      [&](auto cb) { endless.Client().ListMultipartUploads("", cb); });
  REQUIRE_FALSE(never.ok());
  CHECK(never.status().code() == ErrorCode::kProtocol);
  CHECK(endless.executor->count() == static_cast<size_t>(kMaxUploadListPages));
}

TEST_CASE("DeleteMultiple: quiet XML body with escaped keys and its Content-MD5, both dialects") {
  for (auto protocol : {Protocol::kOss, Protocol::kS3}) {
    Harness h;
    DialectedW(h, protocol);
    h.executor->respond = [](const SeenRequest&, int) {
      return XmlW("<DeleteResult></DeleteResult>");
    };
    auto s = h.Call<Status>([&](auto cb) { h.Client().DeleteMultiple({"a&b", "c"}, cb); });
    CHECK(s.ok());
    auto seen = h.executor->seen();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].method == "POST");
    CHECK(seen[0].url == std::string(kHostW) + "/?delete");
    CHECK(seen[0].body ==
          "<Delete><Quiet>true</Quiet><Object><Key>a&amp;b</Key></Object><Object><Key>c</Key>"
          "</Object></Delete>");
    REQUIRE(seen[0].Header("content-md5"));
    CHECK(*seen[0].Header("content-md5") == "JeORk2brQw5jS3RpPTnejQ==");
    CHECK(*seen[0].Header("content-type") == "application/xml");
  }
}

TEST_CASE("DeleteMultiple: key limits, per-key errors in the reply, missing keys succeed") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int i) {
    switch (i) {
      case 0:
        return XmlW(
            "<DeleteResult><Error><Key>gone</Key><Code>NoSuchKey</Code></Error></DeleteResult>");
      case 1:
        return XmlW(
            "<DeleteResult><Error><Key>x</Key><Code>InternalError</Code></Error></DeleteResult>");
      case 2:
        return XmlW("");  // a quiet reply may have no body at all
      default:
        return XmlW(
            "<DeleteResult><Error><Key>locked</Key><Code>AccessDenied</Code><Message>no"
            "</Message></Error><Error><Key>y</Key><Code>AccessDenied</Code></Error>"
            "</DeleteResult>");
    }
  };
  CHECK(h.Call<Status>([&](auto cb) { h.Client().DeleteMultiple({"gone"}, cb); }).ok());
  CHECK(h.Call<Status>([&](auto cb) { h.Client().DeleteMultiple({"x"}, cb); }).ok());
  CHECK(h.executor->count() == 3);  // the InternalError entry was retried
  Status denied = h.Call<Status>([&](auto cb) { h.Client().DeleteMultiple({"locked", "y"}, cb); });
  CHECK(denied.code() == ErrorCode::kAccessDenied);
  CHECK(denied.message().find("'locked'") != std::string::npos);
  CHECK(denied.message().find("1 other") != std::string::npos);
  CHECK(h.executor->count() == 4);

  std::vector<std::string> many(1001, "k");
  Status too_many = h.Call<Status>([&](auto cb) { h.Client().DeleteMultiple(many, cb); });
  CHECK(too_many.code() == ErrorCode::kInvalidArgument);
  CHECK(h.Call<Status>([&](auto cb) { h.Client().DeleteMultiple({}, cb); }).ok());
  CHECK(h.Call<Status>([&](auto cb) {
           h.Client().DeleteMultiple({"a", ""}, cb);
         }).code() == ErrorCode::kInvalidArgument);
  CHECK(h.executor->count() == 4);
}

namespace {

// The request as a server receives it, for the verifiers of src/auth.
auth::SignableRequest ReceivedW(const SeenRequest& r, const std::string& key, auth::Params query) {
  auth::SignableRequest s;
  s.method = r.method;
  s.bucket = "bkt";
  s.key = key;
  s.path = "/" + key;
  s.query = std::move(query);
  s.headers = r.headers;
  return s;
}

}  // namespace

TEST_CASE("Real signers cover the copy-source, forbid-overwrite and Content-MD5 headers") {
  struct Case {
    Protocol protocol;
    const char* region;
  } cases[] = {{Protocol::kOss, ""}, {Protocol::kOss, "cn-hangzhou"}, {Protocol::kS3, "us-east-1"}};
  for (const Case& c : cases) {
    INFO("protocol " << (c.protocol == Protocol::kS3 ? "s3" : "oss") << " region " << c.region);
    Harness h;
    h.options.protocol = c.protocol;
    h.options.region = c.region;
    ClientParts parts{h.executor, h.clock, MakeSigner(ChooseSigner(h.options, false)), nullptr};
    h.client = NewObjectClient(h.io, h.options, parts).value();
    h.executor->respond = [](const SeenRequest& r, int) {
      if (r.body.empty()) return XmlW("<CopyPartResult><ETag>\"c\"</ETag></CopyPartResult>");
      return PutOkW(r);
    };
    auto body = SharedBytes::Copy("data");
    REQUIRE(h.Call<Result<PutResult>>([&](auto cb) {
               h.Client().Put("k", body, NoReplaceW(), cb);
             }).ok());
    REQUIRE(h.Call<Result<PartInfo>>([&](auto cb) {
               h.Client().UploadPartCopy("d", "U", 2, "s", "\"v\"", 0, 10, cb);
             }).ok());
    auto seen = h.executor->seen();
    REQUIRE(seen.size() == 2);

    auth::VerifyOptions verify;
    verify.secret_for = [](std::string_view) {
      return std::optional<std::string>("SECRET-DO-NOT-LOG");
    };
    verify.now = h.clock->Now();
    auto check = [&](const auth::SignableRequest& r) {
      return c.protocol == Protocol::kS3 ? auth::VerifyAwsSigV4Request(r, verify)
                                         : auth::VerifyOssRequest(r, verify);
    };
    const bool s3 = c.protocol == Protocol::kS3;
    auth::SignableRequest put = ReceivedW(seen[0], "k", {});
    REQUIRE(check(put).ok());
    auth::SignableRequest copy = ReceivedW(seen[1], "d", {{"partNumber", "2"}, {"uploadId", "U"}});
    REQUIRE(check(copy).ok());

    // Each header that carries meaning is signed: changing it breaks the signature.
    std::vector<std::pair<auth::SignableRequest, std::string>> tampered;
    auto with = [](auth::SignableRequest r, const std::string& name, const std::string& value) {
      r.SetHeader(name, value);
      return r;
    };
    const std::string cs = s3 ? "x-amz-copy-source" : "x-oss-copy-source";
    tampered.push_back({with(copy, cs, "/bkt/other"), cs});
    tampered.push_back({with(copy, cs + "-range", "bytes=0-99"), cs + "-range"});
    tampered.push_back({with(copy, cs + "-if-match", "\"w\""), cs + "-if-match"});
    const std::string forbid = s3 ? "If-None-Match" : "x-oss-forbid-overwrite";
    tampered.push_back({with(put, forbid, s3 ? "\"x\"" : "false"), forbid});
    if (s3) tampered.push_back({with(put, "Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg=="), "md5"});
    for (const auto& [request, what] : tampered) {
      INFO("tampered " << what);
      CHECK(check(request).code() == ErrorCode::kSignatureDoesNotMatch);
    }
  }
}

TEST_CASE("Content-Type of PUT and InitiateMultipart follows the name's extension") {
  Harness h;
  h.executor->respond = [](const SeenRequest& r, int) {
    if (r.method == "POST") {
      return XmlW(
          "<InitiateMultipartUploadResult><UploadId>u</UploadId></InitiateMultipartUploadResult>");
    }
    return PutOkW(r);
  };
  auto body = SharedBytes::Copy("{}");
  for (const char* key : {"cfg/config.JSON", "run/index.html", "model.pt", "README"}) {
    REQUIRE(h.Call<Result<PutResult>>([&](auto cb) { h.Client().Put(key, body, {}, cb); }).ok());
  }
  REQUIRE(h.Call<Result<std::string>>([&](auto cb) {
             h.Client().InitiateMultipart("img/cat.jpg", cb);
           }).ok());
  auto seen = h.executor->seen();
  REQUIRE(seen.size() == 5);
  CHECK(*seen[0].Header("content-type") == "application/json");
  CHECK(*seen[1].Header("content-type") == "text/html");
  CHECK(*seen[2].Header("content-type") == "application/octet-stream");  // not in the table
  CHECK(*seen[3].Header("content-type") == "application/octet-stream");  // no extension
  CHECK(*seen[4].Header("content-type") == "image/jpeg");
}

TEST_CASE("ParseMimeTypes: types with their extensions, comments skipped, the first type wins") {
  auto table = ParseMimeTypes(
      "# comment\n"
      "text/plain\t\t\ttxt asc  # trailing\n"
      "application/x-empty\n"
      "image/jpeg jpeg JPG jpe\n"
      "text/other txt\n"
      "nonsense pdf\n");
  CHECK(table.at("txt") == "text/plain");
  CHECK(table.at("asc") == "text/plain");
  CHECK(table.at("jpg") == "image/jpeg");
  CHECK(table.count("pdf") == 0);
  CHECK(table.count("trailing") == 0);
  CHECK(ContentTypeFor(".bashrc") == kDefaultContentType);
  CHECK(ContentTypeFor("runs/exp1/") == "application/x-directory");
  CHECK(ContentTypeFor("dir.d/noext") == kDefaultContentType);
}

TEST_CASE("PutSymlink and GetSymlink: OSS sub-resources, S3 as s3fs stores links") {
  SECTION("OSS") {
    Harness h;
    h.executor->respond = [](const SeenRequest& r, int) {
      if (r.method == "GET") {
        return FakeReply::Ok("", {{"x-oss-symlink-target", "v1/w%20eights.bin"}});
      }
      return FakeReply::Ok("", {{"ETag", "\"e\""}});
    };
    REQUIRE(h.Call<Status>([&](auto cb) {
               h.Client().PutSymlink("m/latest", "v1/w eights.bin", NoReplaceW(), cb);
             }).ok());
    auto target =
        h.Call<Result<std::string>>([&](auto cb) { h.Client().GetSymlink("m/latest", cb); });
    REQUIRE(target.ok());
    CHECK(*target == "v1/w eights.bin");
    auto seen = h.executor->seen();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].method == "PUT");
    CHECK(seen[0].url == std::string(kHostW) + "/m/latest?symlink");
    CHECK(*seen[0].Header("x-oss-symlink-target") == "v1/w%20eights.bin");
    CHECK(*seen[0].Header("x-oss-forbid-overwrite") == "true");
    CHECK(seen[0].body.empty());
    CHECK(seen[1].method == "GET");
    CHECK(seen[1].url == std::string(kHostW) + "/m/latest?symlink");
    CHECK(h.Client().ListsLinks());
  }
  SECTION("S3") {
    Harness h;
    DialectedW(h, Protocol::kS3);
    h.executor->respond = [](const SeenRequest& r, int) {
      if (r.method == "GET") return FakeReply::Ok("v1/w");
      return FakeReply::Ok("", {{"ETag", "\"e\""}});
    };
    REQUIRE(
        h.Call<Status>([&](auto cb) { h.Client().PutSymlink("m/latest", "v1/w", {}, cb); }).ok());
    auto target =
        h.Call<Result<std::string>>([&](auto cb) { h.Client().GetSymlink("m/latest", cb); });
    REQUIRE(target.ok());
    CHECK(*target == "v1/w");
    auto seen = h.executor->seen();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].body == "v1/w");
    CHECK(*seen[0].Header("x-amz-meta-mode") == "41471");  // S_IFLNK | 0777
    REQUIRE(seen[0].Header("content-md5"));
    CHECK(seen[1].url.find("symlink") == std::string::npos);
    CHECK_FALSE(h.Client().ListsLinks());
  }
}

TEST_CASE("AppendObject: position and body, the whole object's CRC-64 checked, refusals") {
  const std::string first = "epoch 1\n", second = "epoch 2\n";
  const uint64_t crc_first = Crc64(0, first.data(), first.size());
  const std::string whole = first + second;
  SECTION("an append at the object's end") {
    Harness h;
    h.executor->respond = [&](const SeenRequest&, int) {
      return FakeReply::Ok("", {{"x-oss-next-append-position", std::to_string(whole.size())},
                                {"x-oss-hash-crc64ecma", Crc(whole)},
                                {"ETag", "\"a2\""}});
    };
    AppendRequest request{"logs/train.log", first.size(), crc_first, SharedBytes::Copy(second)};
    auto r = h.Call<Result<AppendResult>>([&](auto cb) { h.Client().Append(request, cb); });
    REQUIRE(r.ok());
    CHECK(r->next_position == whole.size());
    CHECK(r->crc64 == Crc64(0, whole.data(), whole.size()));
    auto seen = h.executor->seen();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].method == "POST");
    CHECK(seen[0].url == std::string(kHostW) + "/logs/train.log?append&position=8");
    CHECK(seen[0].body == second);
    CHECK(*seen[0].Header("content-type") == "application/octet-stream");
  }
  SECTION("a CRC-64 that is not the one of the bytes written fails, not retried") {
    Harness h;
    h.executor->respond = [&](const SeenRequest&, int) {
      return FakeReply::Ok("", {{"x-oss-next-append-position", std::to_string(whole.size())},
                                {"x-oss-hash-crc64ecma", Crc("something else")}});
    };
    AppendRequest request{"k.log", first.size(), crc_first, SharedBytes::Copy(second)};
    auto r = h.Call<Result<AppendResult>>([&](auto cb) { h.Client().Append(request, cb); });
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kIntegrity);
    CHECK(h.executor->seen().size() == 1);
  }
  SECTION("another writer's append: the position is refused") {
    Harness h;
    h.executor->respond = [&](const SeenRequest&, int) {
      return FakeReply::Error(409, "PositionNotEqualToLength",
                              {{"x-oss-next-append-position", "99"}});
    };
    AppendRequest request{"k.log", 8, crc_first, SharedBytes::Copy(second)};
    auto r = h.Call<Result<AppendResult>>([&](auto cb) { h.Client().Append(request, cb); });
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kPreconditionFailed);
  }
  SECTION("a lost answer: the retry's refusal is settled by a HEAD of the object") {
    Harness h;
    h.executor->respond = [&](const SeenRequest& req, int i) {
      if (req.method == "HEAD") {
        return FakeReply::Ok("", {{"Content-Length", std::to_string(whole.size())},
                                  {"x-oss-hash-crc64ecma", Crc(whole)},
                                  {"ETag", "\"a2\""}});
      }
      if (i == 0) return FakeReply::Error(503, "ServiceUnavailable");  // applied, answer lost
      return FakeReply::Error(409, "PositionNotEqualToLength");
    };
    AppendRequest request{"k.log", first.size(), crc_first, SharedBytes::Copy(second)};
    auto r = h.Call<Result<AppendResult>>([&](auto cb) { h.Client().Append(request, cb); });
    REQUIRE(r.ok());
    CHECK(r->next_position == whole.size());
  }
  SECTION("past 5 GiB: EFBIG, nothing sent") {
    Harness h;
    AppendRequest request{"k.log", (5ull << 30) - 2, std::nullopt, SharedBytes::Copy("abc")};
    auto r = h.Call<Result<AppendResult>>([&](auto cb) { h.Client().Append(request, cb); });
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kTooBig);
    CHECK(h.executor->seen().empty());
  }
}

TEST_CASE("User metadata: sent by PUT and Initiate, REPLACEd by a copy onto itself") {
  for (Protocol protocol : {Protocol::kOss, Protocol::kS3}) {
    const std::string prefix = protocol == Protocol::kS3 ? "x-amz-meta-" : "x-oss-meta-";
    Harness h;
    DialectedW(h, protocol);
    h.executor->respond = [](const SeenRequest& r, int) {
      if (r.method == "POST") {
        return XmlW(
            "<InitiateMultipartUploadResult><UploadId>u</UploadId></"
            "InitiateMultipartUploadResult>");
      }
      if (r.Header(protocol_copy_header(r))) {
        return XmlW("<CopyObjectResult><ETag>\"c\"</ETag></CopyObjectResult>");
      }
      return PutOkW(r);
    };
    WriteOptions options;
    options.user_meta = UserMetadata{{"mode", "33261"}, {"uid", "7"}};
    auto body = SharedBytes::Copy("#!/bin/sh\n");
    REQUIRE(h.Call<Result<PutResult>>([&](auto cb) {
               h.Client().Put("run.sh", body, options, cb);
             }).ok());
    REQUIRE(h.Call<Result<std::string>>([&](auto cb) {
               h.Client().InitiateMultipartWith("big.bin", options, cb);
             }).ok());
    options.content_type = "text/x-sh";
    REQUIRE(h.Call<Result<PutResult>>([&](auto cb) {
               h.Client().CopyObject("run.sh", "\"e\"", "run.sh", options, cb);
             }).ok());
    REQUIRE(h.Call<Result<PutResult>>([&](auto cb) {
               h.Client().CopyObject("run.sh", "", "moved.sh", WriteOptions{}, cb);
             }).ok());
    auto seen = h.executor->seen();
    REQUIRE(seen.size() == 4);
    for (int i : {0, 1, 2}) {
      INFO(i);
      REQUIRE(seen[i].Header(prefix + "mode"));
      CHECK(*seen[i].Header(prefix + "mode") == "33261");
      CHECK(*seen[i].Header(prefix + "uid") == "7");
    }
    const std::string directive =
        protocol == Protocol::kS3 ? "x-amz-metadata-directive" : "x-oss-metadata-directive";
    CHECK(*seen[2].Header(directive) == "REPLACE");
    CHECK(*seen[2].Header("content-type") == "text/x-sh");
    CHECK(seen[3].Header(directive) == nullptr);  // a rename keeps the source's
    CHECK(seen[3].Header(prefix + "mode") == nullptr);
  }
}
