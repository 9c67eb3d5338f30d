// The pure pieces of the write path: reply parsers, the error mapping of write refusals,
// MD5 and the S3 multipart ETag, the lost-answer comparison, and the request metrics types.
#include <catch2/catch.hpp>

#include "common/crc64.h"
#include "object/content_md5.h"
#include "object/error_mapping.h"
#include "object/request_builder.h"
#include "object/request_metrics.h"
#include "object/response_parsers.h"
#include "object/upload_verification.h"
#include "unit/object/harness.h"

using namespace ossmount;
using namespace ossmount::object;
using ossmount::object::testing::NumberedPart;

namespace {

const Dialect& kOssR = Dialect::For(Protocol::kOss);
const Dialect& kS3R = Dialect::For(Protocol::kS3);

std::string ErrorXmlR(const std::string& code) {
  return "<Error><Code>" + code + "</Code><Message>m</Message></Error>";
}

MappedError MapR(long status, const std::string& code, const Dialect& d, ErrorContext c = {}) {
  c.operation = "PUT";
  c.bucket = "bkt";
  if (c.key.empty()) c.key = "k";
  return MapErrorResponse(status, {}, code.empty() ? "" : ErrorXmlR(code), d, c);
}

PartInfo PartR(int n, const std::string& data, std::string etag = "\"e\"") {
  PartInfo p;
  p.part_number = n;
  p.etag = std::move(etag);
  p.size = data.size();
  p.crc64 = Crc64(0, data.data(), data.size());
  return p;
}

}  // namespace

TEST_CASE("Copy replies: ETag from CopyObjectResult and CopyPartResult - errors after a 200") {
  auto obj = ParseCopyResultXml(
      "<?xml version=\"1.0\"?><CopyObjectResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<LastModified>x</LastModified><ETag>\"abc\"</ETag></CopyObjectResult>",
      "CopyObjectResult");
  REQUIRE(obj.ok());
  CHECK(obj.value() == "\"abc\"");
  auto part =
      ParseCopyResultXml("<CopyPartResult><ETag>\"p\"</ETag></CopyPartResult>", "CopyPartResult");
  REQUIRE(part.ok());
  CHECK(part.value() == "\"p\"");
  // The wrong root, no ETag, not XML.
  CHECK(
      ParseCopyResultXml("<CopyPartResult><ETag>\"p\"</ETag></CopyPartResult>", "CopyObjectResult")
          .status()
          .code() == ErrorCode::kProtocol);
  CHECK(ParseCopyResultXml("<CopyObjectResult></CopyObjectResult>", "CopyObjectResult")
            .status()
            .code() == ErrorCode::kProtocol);
  CHECK(ParseCopyResultXml("<<", "CopyObjectResult").status().code() == ErrorCode::kProtocol);
  auto slow = ParseCopyResultXml(ErrorXmlR("SlowDown"), "CopyObjectResult");
  REQUIRE_FALSE(slow.ok());
  CHECK(slow.status().code() == ErrorCode::kServerError);
  CHECK(slow.status().retryable());
  CHECK(slow.status().service().code == "SlowDown");
  auto denied = ParseCopyResultXml(ErrorXmlR("AccessDenied"), "CopyPartResult");
  CHECK_FALSE(denied.status().retryable());
}

TEST_CASE("ListMultipartUploads reply: uploads, markers, raw or url-encoded keys") {
  auto raw = ParseListMultipartUploadsXml(
      "<ListMultipartUploadsResult><IsTruncated>false</IsTruncated>"
      "<Upload><Key>a+b c</Key><UploadId>U1</UploadId><Initiated>2023-10-12T02:03:53.000Z"
      "</Initiated></Upload></ListMultipartUploadsResult>");
  REQUIRE(raw.ok());
  REQUIRE(raw->uploads.size() == 1);
  CHECK(raw->uploads[0].key == "a+b c");  // not decoded: the reply did not say url
  CHECK(raw->uploads[0].upload_id == "U1");
  CHECK(raw->uploads[0].initiated_sec == 1697076233);
  CHECK_FALSE(raw->truncated);

  auto encoded = ParseListMultipartUploadsXml(
      "<ListMultipartUploadsResult><EncodingType>url</EncodingType><IsTruncated>true"
      "</IsTruncated><NextKeyMarker>a%2Bb+c</NextKeyMarker><NextUploadIdMarker>U1"
      "</NextUploadIdMarker><Upload><Key>a%2Bb+c</Key><UploadId>U1</UploadId></Upload>"
      "</ListMultipartUploadsResult>");
  REQUIRE(encoded.ok());
  CHECK(encoded->uploads[0].key == "a+b c");
  CHECK(encoded->uploads[0].initiated_sec == 0);
  CHECK(encoded->truncated);
  CHECK(encoded->next_key_marker == "a+b c");
  CHECK(encoded->next_upload_id_marker == "U1");

  for (const char* bad :
       {"<ListMultipartUploadsResult><IsTruncated>true</IsTruncated></ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><Upload><Key>k</Key></Upload></ListMultipartUploadsResult>",
        "<ListMultipartUploadsResult><Upload><Key>k</Key><UploadId>u</UploadId><Initiated>"
        "yesterday</Initiated></Upload></ListMultipartUploadsResult>",
        "<ListBucketResult/>", "not xml <"}) {
    INFO(bad);
    CHECK(ParseListMultipartUploadsXml(bad).status().code() == ErrorCode::kProtocol);
  }
}

TEST_CASE("DeleteMultipleObjects reply: failed keys except NoSuchKey, empty quiet replies") {
  auto none = ParseDeleteResultXml("  \n");
  REQUIRE(none.ok());
  CHECK(none->empty());
  auto some = ParseDeleteResultXml(
      "<DeleteResult><Deleted><Key>ok</Key></Deleted>"
      "<Error><Key>gone</Key><Code>NoSuchKey</Code></Error>"
      "<Error><Key>a&amp;b</Key><Code>AccessDenied</Code><Message>denied</Message></Error>"
      "</DeleteResult>");
  REQUIRE(some.ok());
  REQUIRE(some->size() == 1);
  CHECK((*some)[0].key == "a&b");
  CHECK((*some)[0].code == "AccessDenied");
  CHECK((*some)[0].message == "denied");
  CHECK(ParseDeleteResultXml(ErrorXmlR("InternalError")).status().retryable());
  CHECK(ParseDeleteResultXml("<Other/>").status().code() == ErrorCode::kProtocol);
}

TEST_CASE("Write refusals map to their own codes - FileAlreadyExists is EEXIST, not retried") {
  MappedError exists = MapR(409, "FileAlreadyExists", kOssR);
  CHECK(exists.status.code() == ErrorCode::kAlreadyExists);
  CHECK(exists.status.ToErrno() == EEXIST);
  CHECK_FALSE(exists.status.retryable());
  CHECK(exists.status.message() ==
        "object 'k' already exists in bucket 'bkt' and the write must not replace it");

  ErrorContext forbid;
  forbid.forbid_overwrite = true;
  CHECK(MapR(412, "PreconditionFailed", kS3R, forbid).status.code() == ErrorCode::kAlreadyExists);
  // On OSS a 412 is never the forbid-overwrite answer (that is 409 FileAlreadyExists).
  CHECK(MapR(412, "PreconditionFailed", kOssR, forbid).status.code() ==
        ErrorCode::kPreconditionFailed);
  // Without forbid-overwrite a 412 is If-Match, as before.
  CHECK(MapR(412, "PreconditionFailed", kS3R).status.code() == ErrorCode::kPreconditionFailed);
  ErrorContext both = forbid;
  both.if_match = "\"v\"";
  both.source_key = "src";
  MappedError ambiguous = MapR(412, "PreconditionFailed", kS3R, both);
  CHECK(ambiguous.status.code() == ErrorCode::kPreconditionFailed);
  CHECK(ambiguous.status.message().find("or the destination already exists") != std::string::npos);

  MappedError upload = MapR(404, "NoSuchUpload", kOssR);
  CHECK(upload.status.code() == ErrorCode::kNotFound);
  CHECK(upload.status.service().code == "NoSuchUpload");
  for (const char* code : {"EntityTooSmall", "InvalidPart", "InvalidPartOrder"}) {
    INFO(code);
    MappedError m = MapR(400, code, kOssR);
    CHECK(m.status.code() == ErrorCode::kInvalidArgument);
    CHECK_FALSE(m.status.retryable());
    CHECK(m.status.message().find(code) != std::string::npos);
  }
  MappedError digest = MapR(400, "BadDigest", kS3R);
  CHECK(digest.status.code() == ErrorCode::kIntegrity);
  CHECK(digest.status.retryable());
  CHECK(MapR(400, "EntityTooLarge", kOssR).status.code() == ErrorCode::kTooBig);
  CHECK(MapR(400, "EntityTooLarge", kOssR).status.ToErrno() == EFBIG);
}

TEST_CASE("Content-MD5 and the S3 multipart ETag match independent computations") {
  CHECK(HexLower(Md5("")) == "d41d8cd98f00b204e9800998ecf8427e");
  CHECK(ContentMd5("") == "1B2M2Y8AsgTpgAmY7PhCfg==");
  CHECK(ContentMd5("data") == "jXd/OF09/siBXSD3SWAm3A==");
  // md5(md5("part1") || md5("part2")), from Python's hashlib; quoted or bare, any hex case.
  auto etag =
      S3MultipartEtag({"\"ffc88b4ca90a355f8ddba6b2c3b2af5c\"", "D067A0FA9DC61A6E7195CA99696B5A89"});
  REQUIRE(etag);
  CHECK(*etag == "\"620e8b191a353bdc9189840bb3904928-2\"");
  CHECK_FALSE(S3MultipartEtag({"\"not-an-md5\""}));
  CHECK_FALSE(S3MultipartEtag({}));
}

TEST_CASE("CheckFoundObject: size, then CRC-64 when both know it, else the S3 ETag") {
  const std::string a(1000, 'a'), b = "tail";
  std::vector<PartInfo> parts = {PartR(1, a), PartR(2, b)};
  const std::string whole = a + b;
  const uint64_t crc = Crc64(0, whole.data(), whole.size());
  CHECK(CombinedCrc64(parts) == crc);

  ExpectedObject expected = ExpectedFromParts(parts, kOssR);
  CHECK(expected.size == 1004);
  CHECK(expected.crc64 == crc);
  CHECK_FALSE(expected.etag);

  ObjectInfo found;
  found.key = "k";
  found.size = 1004;
  found.crc64 = crc;
  CHECK(CheckFoundObject(found, expected, "w").ok());
  found.crc64 = crc ^ 1;
  Status differs = CheckFoundObject(found, expected, "w");
  CHECK(differs.code() == ErrorCode::kIntegrity);
  CHECK(differs.message().find("outcome of the upload is unknown") != std::string::npos);
  found.crc64 = crc;
  found.size = 1003;
  CHECK(CheckFoundObject(found, expected, "w").code() == ErrorCode::kIntegrity);
  // No CRC on either side and no comparable ETag (OSS): unknown, never a guess.
  found.size = 1004;
  found.crc64.reset();
  CHECK(CheckFoundObject(found, expected, "w").code() == ErrorCode::kIntegrity);

  parts[1].crc64.reset();  // a copied part the server gave no CRC for
  CHECK_FALSE(CombinedCrc64(parts));
  parts = {PartR(1, a, "\"ffc88b4ca90a355f8ddba6b2c3b2af5c\""),
           PartR(2, b, "\"d067a0fa9dc61a6e7195ca99696b5a89\"")};
  ExpectedObject s3 = ExpectedFromParts(parts, kS3R);
  REQUIRE(s3.etag);
  found.etag = "\"620E8B191A353BDC9189840BB3904928-2\"";
  CHECK(CheckFoundObject(found, s3, "w").ok());
  found.etag = "\"620e8b191a353bdc9189840bb3904928-3\"";
  CHECK(CheckFoundObject(found, s3, "w").code() == ErrorCode::kIntegrity);
}

TEST_CASE("Request metrics name each write operation") {
  const Dialect& d = kOssR;
  auto body = SharedBytes::Copy("x");
  struct Case {
    RequestSpec spec;
    const char* name;
  } cases[] = {
      {PutSpec("k", body, {}, d), "PUT"},
      {InitiateMultipartSpec("k", WriteOptions{}, Dialect::For(Protocol::kOss)),
       "InitiateMultipart"},
      {UploadPartSpec("k", "U", 1, body, d), "UploadPart"},
      {UploadPartCopySpec("k", "U", 1, {"b", "s", ""}, 0, 1, kS3R), "UploadPartCopy"},
      {CompleteMultipartSpec("k", "U", {NumberedPart(1, "e")}, {}, d), "CompleteMultipart"},
      {AbortMultipartSpec("k", "U"), "AbortMultipart"},
      {ListMultipartUploadsSpec("p", "", ""), "ListMultipartUploads"},
      {CopyObjectSpec({"b", "s", ""}, "k", {}, d), "CopyObject"},
      {DeleteSpec("k"), "DELETE"},
      {DeleteMultipleSpec({"k"}), "DeleteMultiple"},
      {HeadSpec("k"), "HEAD"},
      {ListSpec(ListRequest{}), "LIST"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK(std::string(RequestTypeName(ClassifyRequest(c.spec))) == c.name);
  }
}
