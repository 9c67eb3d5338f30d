// Error XML parsing and the Status (code, message, retryability, details) for each code.
#include <catch2/catch.hpp>

#include "object/error_mapping.h"
#include "object/response_parsers.h"
#include "object/retry_policy.h"

using namespace ossmount;
using namespace ossmount::object;

namespace {

ErrorContext Ctx(std::string key = "a/b.jpg") {
  ErrorContext c;
  c.operation = key.empty() ? "LIST" : "GET";
  c.bucket = "bkt";
  c.key = std::move(key);
  c.endpoint = "https://oss-cn-hangzhou.aliyuncs.com";
  c.credentials_source = "environment OSS_ACCESS_KEY_ID";
  return c;
}

std::string ErrorXml(const std::string& code, const std::string& extra = "") {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>\n  <Code>" + code +
         "</Code>\n  <Message>The message.</Message>\n  "
         "<RequestId>5C3D9175B6FC201293AD</RequestId>\n"
         "  <HostId>bkt.oss-cn-hangzhou.aliyuncs.com</HostId>\n  <EC>0026-00000001</EC>\n" +
         extra + "</Error>";
}

MappedError Map(long status, const std::string& code, ErrorContext ctx = Ctx(),
                Protocol p = Protocol::kOss) {
  return MapErrorResponse(status, {}, code.empty() ? "" : ErrorXml(code), Dialect::For(p), ctx);
}

bool Has(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("ParseErrorXml reads code, message, ids, EC - rejects other documents") {
  auto e = ParseErrorXml(ErrorXml("NoSuchKey", "<ServerTime>2023-01-01T00:00:00Z</ServerTime>"));
  REQUIRE(e);
  CHECK(e->code == "NoSuchKey");
  CHECK(e->message == "The message.");
  CHECK(e->request_id == "5C3D9175B6FC201293AD");
  CHECK(e->host_id == "bkt.oss-cn-hangzhou.aliyuncs.com");
  CHECK(e->ec == "0026-00000001");
  CHECK(e->server_time == "2023-01-01T00:00:00Z");
  CHECK_FALSE(ParseErrorXml(""));
  CHECK_FALSE(ParseErrorXml("<html>bad gateway</html>"));
  CHECK_FALSE(ParseErrorXml("<Error><Code>"));
}

TEST_CASE("Each service code maps to its ErrorCode, message and retryability") {
  struct Case {
    long http;
    const char* code;
    ErrorCode expect;
    bool retryable;
    Recovery recovery;
    const char* text;
  } cases[] = {
      {404, "NoSuchKey", ErrorCode::kNotFound, false, Recovery::kNone,
       "object 'a/b.jpg' does not exist in bucket 'bkt'"},
      {404, "NoSuchBucket", ErrorCode::kNoSuchBucket, false, Recovery::kNone,
       "bucket 'bkt' does not exist at endpoint https://oss-cn-hangzhou.aliyuncs.com: check the "
       "bucket name and --endpoint/--region"},
      {403, "AccessDenied", ErrorCode::kAccessDenied, false, Recovery::kNone,
       "--region matches the bucket's region"},
      {403, "InvalidAccessKeyId", ErrorCode::kInvalidAccessKeyId, false, Recovery::kNone,
       "check the access key id"},
      {403, "SignatureDoesNotMatch", ErrorCode::kSignatureDoesNotMatch, false, Recovery::kNone,
       "check the access key secret"},
      {403, "RequestTimeTooSkewed", ErrorCode::kRequestTimeTooSkewed, true, Recovery::kCorrectClock,
       "the local clock is off by more than 15 minutes: sync it with NTP"},
      {403, "SecurityTokenExpired", ErrorCode::kTokenExpired, true, Recovery::kRefreshCredentials,
       "has expired or is invalid"},
      {400, "ExpiredToken", ErrorCode::kTokenExpired, true, Recovery::kRefreshCredentials,
       "refresh the credentials"},
      {403, "InvalidSecurityToken", ErrorCode::kTokenExpired, true, Recovery::kRefreshCredentials,
       "STS security token"},
      {412, "PreconditionFailed", ErrorCode::kPreconditionFailed, false, Recovery::kNone,
       "changed on the server"},
      {416, "InvalidRange", ErrorCode::kInvalidRange, false, Recovery::kNone,
       "starts at or past the end"},
      {503, "SlowDown", ErrorCode::kThrottled, true, Recovery::kNone, "throttling"},
      {503, "QpsLimitExceeded", ErrorCode::kThrottled, true, Recovery::kNone, "throttling"},
      {429, "", ErrorCode::kThrottled, true, Recovery::kNone, "HTTP 429"},
      {500, "InternalError", ErrorCode::kServerError, true, Recovery::kNone,
       "HTTP 500 InternalError"},
      {502, "", ErrorCode::kServerError, true, Recovery::kNone, "HTTP 502"},
      {408, "", ErrorCode::kTimeout, true, Recovery::kNone, "timed out"},
      {400, "InvalidArgument", ErrorCode::kInvalidArgument, false, Recovery::kNone,
       "rejected GET 'a/b.jpg'"},
      {501, "NotImplemented", ErrorCode::kNotSupported, false, Recovery::kNone, "does not support"},
  };
  for (const auto& c : cases) {
    INFO(c.http << " " << c.code);
    MappedError m = Map(c.http, c.code);
    CHECK(m.status.code() == c.expect);
    CHECK(m.status.retryable() == c.retryable);
    CHECK(m.recovery == c.recovery);
    CHECK(Has(m.status, c.text));
    CHECK(m.status.service().http_status == c.http);
    CHECK(m.status.service().code == c.code);
    if (*c.code) {
      CHECK(m.status.service().request_id == "5C3D9175B6FC201293AD");
      CHECK(m.status.service().ec == "0026-00000001");
    }
  }
}

TEST_CASE("Bodiless errors (HEAD): status decides, request id from the header") {
  MappedError m = MapErrorResponse(404, {{"x-oss-request-id", "RID9"}}, "",
                                   Dialect::For(Protocol::kOss), Ctx());
  CHECK(m.status.code() == ErrorCode::kNotFound);
  CHECK(m.status.service().request_id == "RID9");

  MappedError s3 = MapErrorResponse(404, {{"x-amz-request-id", "AMZ1"}}, "",
                                    Dialect::For(Protocol::kS3), Ctx(""));
  CHECK(s3.status.code() == ErrorCode::kNoSuchBucket);  // bucket-level: the bucket is missing
  CHECK(s3.status.service().request_id == "AMZ1");

  MappedError denied = MapErrorResponse(403, {{"x-oss-ec", "0003-00000001"}}, "",
                                        Dialect::For(Protocol::kOss), Ctx());
  CHECK(denied.status.code() == ErrorCode::kAccessDenied);
  CHECK_FALSE(denied.status.retryable());
  CHECK(denied.status.service().ec == "0003-00000001");
  CHECK(Has(denied.status, "HTTP 403"));
}

TEST_CASE("Secrets in an error body never reach the Status") {
  std::string body = ErrorXml("SignatureDoesNotMatch",
                              "<StringToSign>GET\n\nSECRETSTRING</StringToSign>"
                              "<SignatureProvided>c2lnbmF0dXJl</SignatureProvided>"
                              "<OSSAccessKeyId>AKID</OSSAccessKeyId>");
  MappedError m = MapErrorResponse(403, {}, body, Dialect::For(Protocol::kOss), Ctx());
  std::string all = m.status.ToString() + m.status.service().server_message;
  CHECK(all.find("SECRETSTRING") == std::string::npos);
  CHECK(all.find("c2lnbmF0dXJl") == std::string::npos);
}

TEST_CASE("Retry timing helpers: backoff, Retry-After, clock offset") {
  RetryOptions r;
  r.base_delay = std::chrono::milliseconds(200);
  r.max_delay = std::chrono::milliseconds(1000);
  CHECK(BackoffDelay(r, 0, 0.5).count() == 100);
  CHECK(BackoffDelay(r, 1, 0.5).count() == 200);
  CHECK(BackoffDelay(r, 2, 1.0).count() == 800);
  CHECK(BackoffDelay(r, 3, 1.0).count() == 1000);  // capped
  CHECK(BackoffDelay(r, 60, 0.999).count() == 999);
  CHECK(BackoffDelay(r, 5, 0.0).count() == 0);

  SystemTime now{std::chrono::seconds(1702743657)};  // Sat, 16 Dec 2023 16:20:57 GMT
  CHECK(ParseRetryAfter({{"retry-after", "3"}}, now)->count() == 3000);
  CHECK(ParseRetryAfter({{"Retry-After", "Sat, 16 Dec 2023 16:21:07 GMT"}}, now)->count() == 10000);
  CHECK(ParseRetryAfter({{"retry-after", "Sat, 16 Dec 2023 16:00:00 GMT"}}, now)->count() == 0);
  CHECK_FALSE(ParseRetryAfter({{"retry-after", "soon"}}, now));
  CHECK_FALSE(ParseRetryAfter({}, now));

  CHECK(ServerClockOffset({{"date", "Sat, 16 Dec 2023 17:20:57 GMT"}}, "", now)->count() == 3600);
  CHECK(ServerClockOffset({}, "2023-12-16T16:00:57Z", now)->count() == -1200);
  CHECK_FALSE(ServerClockOffset({{"date", "garbage"}}, "", now));
}

TEST_CASE("Response parsers: Content-Range, HEAD, multipart XML") {
  auto cr = ParseContentRange("bytes 100-199/1000");
  REQUIRE(cr.ok());
  CHECK(cr->first == 100);
  CHECK(cr->last == 199);
  CHECK(cr->total == 1000);
  for (const char* bad :
       {"bytes 5-4/10", "bytes 0-9/*", "bytes 0-10/10", "items 0-1/2", "bytes 0-/10", ""}) {
    INFO(bad);
    CHECK_FALSE(ParseContentRange(bad).ok());
  }

  http::HeaderList headers = {{"content-length", "1234"},
                              {"etag", "\"abc\""},
                              {"last-modified", "Fri, 04 Mar 2022 02:46:25 GMT"},
                              {"x-oss-hash-crc64ecma", "11051210869376104954"},
                              {"x-oss-storage-class", "IA"},
                              {"content-type", "image/jpeg"},
                              {"x-amz-checksum-crc64nvme", "AAAAAAAAAAA="}};
  auto info = ParseHeadResponse("k", headers, Dialect::For(Protocol::kOss));
  REQUIRE(info.ok());
  CHECK(info->key == "k");
  CHECK(info->size == 1234);
  CHECK(info->etag == "\"abc\"");
  CHECK(info->mtime_sec == 1646361985);
  CHECK(info->crc64 == 11051210869376104954ull);
  CHECK(info->storage_class == "IA");
  CHECK(info->content_type == "image/jpeg");
  auto s3 = ParseHeadResponse("k", headers, Dialect::For(Protocol::kS3));
  REQUIRE(s3.ok());
  CHECK_FALSE(s3->crc64);  // crc64nvme is a different algorithm: never used
  CHECK_FALSE(ParseHeadResponse("k", {{"etag", "x"}}, Dialect::For(Protocol::kOss)).ok());
  CHECK_FALSE(ResponseCrc64({{"x-oss-hash-crc64ecma", "12abc"}}, Dialect::For(Protocol::kOss)));

  auto id = ParseInitiateMultipartXml(
      "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</"
      "Key><UploadId>0004B9894A22E5B1888A1E29F823****</UploadId></InitiateMultipartUploadResult>");
  REQUIRE(id.ok());
  CHECK(id.value() == "0004B9894A22E5B1888A1E29F823****");
  CHECK_FALSE(ParseInitiateMultipartXml("<InitiateMultipartUploadResult/>").ok());

  auto etag = ParseCompleteMultipartXml(
      "<CompleteMultipartUploadResult><ETag>\"E-3\"</ETag></CompleteMultipartUploadResult>");
  REQUIRE(etag.ok());
  CHECK(etag.value() == "\"E-3\"");
  // Regression (fuzz_responses): a result without an ETag was a success with an empty etag.
  for (const char* no_etag :
       {"<CompleteMultipartUploadResult>/ETag></CompleteMultipartUploadResult>",
        "<CompleteMultipartUploadResult><ETag/></CompleteMultipartUploadResult>"}) {
    auto missing = ParseCompleteMultipartXml(no_etag);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.status().code() == ErrorCode::kProtocol);
  }
  auto error200 = ParseCompleteMultipartXml("<Error><Code>InternalError</Code></Error>");
  REQUIRE_FALSE(error200.ok());
  CHECK(error200.status().retryable());
  auto bad200 = ParseCompleteMultipartXml("<Error><Code>InvalidPart</Code></Error>");
  REQUIRE_FALSE(bad200.ok());
  CHECK_FALSE(bad200.status().retryable());
}
