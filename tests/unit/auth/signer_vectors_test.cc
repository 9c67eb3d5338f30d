// Every official signing vector of the OSS V1, OSS V4 and AWS SigV4 documentation (plus
// derived ones), byte for byte, through both the public Signer and the intermediate strings.
#include <catch2/catch.hpp>

#include "auth/signer.h"
#include "auth/signing_internal.h"
#include "common/url.h"
#include "unit/auth/test_credentials.h"

namespace ossmount::auth {
namespace {

using testing::Creds;

SystemTime At(int64_t unix_seconds) { return SystemTime(std::chrono::seconds(unix_seconds)); }

SystemTime AtRfc1123(const char* s) { return At(ParseRfc1123(s).value()); }

std::string HeaderOf(const SignableRequest& r, const char* name) {
  const std::string* v = r.Header(name);
  return v ? *v : std::string("<absent>");
}

// ---- OSS V1 -----------------------------------------------------------------------------

constexpr const char* kV1Date = "Wed, 28 Dec 2022 10:27:41 GMT";

SignableRequest V1Case1Request() {
  SignableRequest r;
  r.method = "PUT";
  r.bucket = "examplebucket";
  r.key = "nelson";
  r.headers = {{"Content-MD5", "eB5eJF1ptWaXm4bijSPyxw=="},
               {"Content-Type", "text/html"},
               {"x-oss-meta-author", "alice"},
               {"x-oss-meta-magic", "abracadabra"},
               {"x-oss-date", kV1Date}};
  return r;
}

TEST_CASE("OSS V1 header vector case 1 (PUT with x-oss-meta headers)") {
  SignableRequest r = V1Case1Request();
  MakeOssV1Signer()->Sign(r, Creds("ak", "sk"), AtRfc1123(kV1Date));
  CHECK(HeaderOf(r, "Date") == kV1Date);
  CHECK(internal::OssV1StringToSign(r, kV1Date) ==
        "PUT\neB5eJF1ptWaXm4bijSPyxw==\ntext/html\nWed, 28 Dec 2022 10:27:41 GMT\n"
        "x-oss-date:Wed, 28 Dec 2022 10:27:41 GMT\nx-oss-meta-author:alice\n"
        "x-oss-meta-magic:abracadabra\n/examplebucket/nelson");
  CHECK(HeaderOf(r, "Authorization") == "OSS ak:kSHKmLxlyEAKtZPkJhG9bZb5k7M=");
}

TEST_CASE("OSS V1 header vector case 2 (?acl sub-resource)") {
  SignableRequest r = V1Case1Request();
  r.query = {{"acl", ""}};
  MakeOssV1Signer()->Sign(r, Creds("ak", "sk"), AtRfc1123(kV1Date));
  CHECK(internal::OssV1CanonicalResource(r) == "/examplebucket/nelson?acl");
  CHECK(HeaderOf(r, "Authorization") == "OSS ak:/afkugFbmWDQ967j1vr6zygBLQk=");
}

TEST_CASE("OSS V1 header vectors case 3 and 4 (bucket-level, non-sub-resource excluded)") {
  SignableRequest r;
  r.method = "GET";
  r.bucket = "examplebucket";
  r.headers = {{"x-oss-date", kV1Date}};
  r.query = {{"resourceGroup", ""}, {"non-resousce", "null"}};
  SignableRequest case3 = r;
  MakeOssV1Signer()->Sign(case3, Creds("ak", "sk"), AtRfc1123(kV1Date));
  CHECK(internal::OssV1StringToSign(case3, kV1Date) ==
        "GET\n\n\nWed, 28 Dec 2022 10:27:41 GMT\nx-oss-date:Wed, 28 Dec 2022 10:27:41 GMT\n"
        "/examplebucket/?resourceGroup");
  CHECK(HeaderOf(case3, "Authorization") == "OSS ak:vkQmfuUDyi1uDi3bKt67oemssIs=");
  // The caller-declared extra sub-resource path gives the same answer.
  CHECK(internal::OssV1CanonicalResource(case3, {"resourceGroup"}) ==
        "/examplebucket/?resourceGroup");

  SignableRequest case4 = r;
  case4.query = {{"resourceGroup", ""}, {"acl", ""}};
  MakeOssV1Signer()->Sign(case4, Creds("ak", "sk"), AtRfc1123(kV1Date));
  CHECK(internal::OssV1CanonicalResource(case4) == "/examplebucket/?acl&resourceGroup");
  CHECK(HeaderOf(case4, "Authorization") == "OSS ak:x3E5TgOvl/i7PN618s5mEvpJDYk=");
}

TEST_CASE("OSS V1 key rule check (raw '+' in key, signed security-token)") {
  CHECK(
      internal::OssV1Signature(
          "sk", "GET\n\n\n1699808204\n/bucket/key+123?security-token=token&versionId=versionId") ==
      "jzKYRrM5y6Br0dRFPaTGOsbrDhY=");
}

TEST_CASE("OSS V1 presigned URL vectors") {
  SignableRequest r;
  r.method = "GET";
  r.bucket = "bucket";
  r.key = "key";
  r.query = {{"versionId", "versionId"}};
  CHECK(internal::OssV1StringToSign(r, "1699807420") ==
        "GET\n\n\n1699807420\n/bucket/key?versionId=versionId");
  Params q = PresignOssV1(r, Creds("ak", "sk"), 1699807420);
  CHECK(EncodePresignedQuery(q) ==
        "Expires=1699807420&OSSAccessKeyId=ak&Signature=dcLTea%2BYh9ApirQ8o8dOPqtvJXQ%3D&"
        "versionId=versionId");

  r.key = "key+123";
  Params q2 = PresignOssV1(r, Creds("ak", "sk", "token"), 1699808204);
  CHECK(EncodePresignedQuery(q2) ==
        "Expires=1699808204&OSSAccessKeyId=ak&Signature=jzKYRrM5y6Br0dRFPaTGOsbrDhY%3D&"
        "security-token=token&versionId=versionId");
  // The wire path of that URL is the percent-encoded key.
  CHECK(PercentEncode(r.key, true) == "key%2B123");
}

TEST_CASE("OSS V1 derived D3 (UTF-8 key with spaces, STS token header)") {
  constexpr const char* kDate = "Sat, 16 Dec 2023 16:20:57 GMT";
  SignableRequest r;
  r.method = "GET";
  r.bucket = "examplebucket";
  r.key = "dir/img 001-\xC3\xA9.jpg";
  MakeOssV1Signer()->Sign(r, Creds("ak", "sk", "token"), AtRfc1123(kDate));
  CHECK(HeaderOf(r, "x-oss-security-token") == "token");
  CHECK(internal::OssV1StringToSign(r, kDate) ==
        "GET\n\n\nSat, 16 Dec 2023 16:20:57 GMT\nx-oss-security-token:token\n"
        "/examplebucket/dir/img 001-\xC3\xA9.jpg");
  CHECK(HeaderOf(r, "Authorization") == "OSS ak:24+jM/4M8WTO757/nqmkOglZC8w=");
}

TEST_CASE("OSS V1 derived D4 (ListObjectsV2 page 2 signs only continuation-token)") {
  constexpr const char* kDate = "Sat, 16 Dec 2023 16:20:57 GMT";
  SignableRequest r;
  r.method = "GET";
  r.bucket = "examplebucket";
  r.query = {{"list-type", "2"},       {"prefix", "train/cls 1/"},
             {"delimiter", "/"},       {"max-keys", "1000"},
             {"encoding-type", "url"}, {"continuation-token", "ChR0cmFpbi9jbHMgMS8wMDAxLmpwZxAA"}};
  MakeOssV1Signer()->Sign(r, Creds("ak", "sk"), AtRfc1123(kDate));
  CHECK(internal::OssV1StringToSign(r, kDate) ==
        "GET\n\n\nSat, 16 Dec 2023 16:20:57 GMT\n"
        "/examplebucket/?continuation-token=ChR0cmFpbi9jbHMgMS8wMDAxLmpwZxAA");
  CHECK(HeaderOf(r, "Authorization") == "OSS ak:4hJctgxG5CcCxouKhFlD0TN2nao=");
}

TEST_CASE("OSS V1 anonymous credentials add nothing") {
  SignableRequest r = V1Case1Request();
  size_t before = r.headers.size();
  Credentials anon;
  anon.anonymous = true;
  MakeOssV1Signer()->Sign(r, anon, AtRfc1123(kV1Date));
  CHECK(r.headers.size() == before);
  CHECK(r.Header("Authorization") == nullptr);
}

// ---- OSS V4 -----------------------------------------------------------------------------

SignableRequest V4CommonRequest(const char* content_type, bool with_sha256) {
  SignableRequest r;
  r.method = "PUT";
  r.bucket = "bucket";
  r.key = "1234+-/123/1.txt";
  r.headers = {{"x-oss-head1", "value"},
               {"abc", "value"},
               {"ZAbc", "value"},
               {"XYZ", "value"},
               {"content-type", content_type}};
  if (with_sha256) r.headers.emplace_back("x-oss-content-sha256", "UNSIGNED-PAYLOAD");
  r.query = {{"param1", "value1"}, {"+param1", "value3"}, {"|param1", "value4"},
             {"+param2", ""},      {"|param2", ""},       {"param2", ""}};
  return r;
}

TEST_CASE("OSS V4 header vector H1 with canonical request and signing key") {
  SignableRequest r = V4CommonRequest("text/plain", true);
  CHECK(internal::OssV4CanonicalUri(r.bucket, r.key) == "/bucket/1234%2B-/123/1.txt");
  CHECK(internal::OssV4CanonicalQuery(r.query) ==
        "%2Bparam1=value3&%2Bparam2&%7Cparam1=value4&%7Cparam2&param1=value1&param2");
  MakeOssV4Signer("cn-hangzhou")->Sign(r, Creds("ak", "sk"), At(1702743657));
  CHECK(HeaderOf(r, "x-oss-date") == "20231216T162057Z");
  CHECK(HeaderOf(r, "x-oss-content-sha256") == "UNSIGNED-PAYLOAD");
  CHECK(HeaderOf(r, "Authorization") ==
        "OSS4-HMAC-SHA256 Credential=ak/20231216/cn-hangzhou/oss/aliyun_v4_request,"
        "Signature=e21d18daa82167720f9b1047ae7e7f1ce7cb77a31e8203a7d5f4624fa0284afe");

  internal::OssV4Parts p =
      internal::ComputeOssV4(r, "sk", "20231216T162057Z", "cn-hangzhou", "oss");
  CHECK(p.canonical_request ==
        "PUT\n/bucket/1234%2B-/123/1.txt\n"
        "%2Bparam1=value3&%2Bparam2&%7Cparam1=value4&%7Cparam2&param1=value1&param2\n"
        "content-type:text/plain\nx-oss-content-sha256:UNSIGNED-PAYLOAD\n"
        "x-oss-date:20231216T162057Z\nx-oss-head1:value\n\n\nUNSIGNED-PAYLOAD");
  CHECK(p.string_to_sign ==
        "OSS4-HMAC-SHA256\n20231216T162057Z\n20231216/cn-hangzhou/oss/aliyun_v4_request\n"
        "f4613657f1b108998e8dbd10a1aa5da621dc2c6e02c9ddec0f163664848704c4");
  CHECK(p.signing_key_hex == "b412a03b134ebddd720f5167b5de6db66620ebb3b01cff4d49e3ccb09f8de97f");
}

TEST_CASE("OSS V4 header vector H2 (STS token)") {
  SignableRequest r = V4CommonRequest("text/plain", true);
  MakeOssV4Signer("cn-hangzhou")->Sign(r, Creds("ak", "sk", "token"), At(1702784856));
  CHECK(HeaderOf(r, "x-oss-security-token") == "token");
  CHECK(HeaderOf(r, "Authorization") ==
        "OSS4-HMAC-SHA256 Credential=ak/20231217/cn-hangzhou/oss/aliyun_v4_request,"
        "Signature=b94a3f999cf85bcdc00d332fbd3734ba03e48382c36fa4d5af5df817395bd9ea");
}

TEST_CASE("OSS V4 header vector H3 (additional headers, both request forms)") {
  const char* kExpected =
      "OSS4-HMAC-SHA256 Credential=ak/20231216/cn-hangzhou/oss/aliyun_v4_request,"
      "AdditionalHeaders=abc;zabc,"
      "Signature=4a4183c187c07c8947db7620deb0a6b38d9fbdd34187b6dbaccb316fa251212f";
  for (std::vector<std::string> additional :
       {std::vector<std::string>{"ZAbc", "abc"},
        std::vector<std::string>{"x-oss-no-exist", "ZAbc", "x-oss-head1", "abc"}}) {
    SignableRequest r = V4CommonRequest("text/plain", true);
    r.additional_headers = additional;
    MakeOssV4Signer("cn-hangzhou")->Sign(r, Creds("ak", "sk"), At(1702747512));
    CHECK(HeaderOf(r, "Authorization") == kExpected);
    internal::OssV4Parts p =
        internal::ComputeOssV4(r, "sk", "20231216T172512Z", "cn-hangzhou", "oss");
    CHECK(p.canonical_request ==
          "PUT\n/bucket/1234%2B-/123/1.txt\n"
          "%2Bparam1=value3&%2Bparam2&%7Cparam1=value4&%7Cparam2&param1=value1&param2\n"
          "abc:value\ncontent-type:text/plain\nx-oss-content-sha256:UNSIGNED-PAYLOAD\n"
          "x-oss-date:20231216T172512Z\nx-oss-head1:value\nzabc:value\n\nabc;zabc\n"
          "UNSIGNED-PAYLOAD");
  }
}

TEST_CASE("OSS V4 header vector H4 (CloudBox product)") {
  SignableRequest r = V4CommonRequest("text/plain", true);
  MakeOssV4Signer("cb-123", "oss-cloudbox")->Sign(r, Creds("ak", "sk"), At(1702743657));
  CHECK(HeaderOf(r, "Authorization") ==
        "OSS4-HMAC-SHA256 Credential=ak/20231216/cb-123/oss-cloudbox/aliyun_v4_request,"
        "Signature=94ce1f12c17d148ea681030275a94449d3357f5b5b21133996eec80af3e08a43");
}

std::string ParamOf(const Params& q, const char* name) {
  for (const auto& [n, v] : q) {
    if (n == name) return v;
  }
  return "<absent>";
}

TEST_CASE("OSS V4 presign vector Q1 with canonical query") {
  SignableRequest r = V4CommonRequest("application/octet-stream", false);
  Params q =
      PresignOssV4(r, Creds("ak", "sk"), At(1702781677), std::chrono::seconds(599), "cn-hangzhou");
  CHECK(ParamOf(q, "x-oss-date") == "20231217T025437Z");
  CHECK(ParamOf(q, "x-oss-credential") == "ak/20231217/cn-hangzhou/oss/aliyun_v4_request");
  CHECK(ParamOf(q, "x-oss-expires") == "599");
  CHECK(ParamOf(q, "x-oss-signature-version") == "OSS4-HMAC-SHA256");
  CHECK(ParamOf(q, "x-oss-additional-headers") == "<absent>");
  CHECK(ParamOf(q, "x-oss-signature") ==
        "a39966c61718be0d5b14e668088b3fa07601033f6518ac7b523100014269c0fe");
  Params unsigned_q = q;
  unsigned_q.pop_back();  // x-oss-signature is appended last
  CHECK(internal::OssV4CanonicalQuery(unsigned_q) ==
        "%2Bparam1=value3&%2Bparam2&%7Cparam1=value4&%7Cparam2&param1=value1&param2&"
        "x-oss-credential=ak%2F20231217%2Fcn-hangzhou%2Foss%2Faliyun_v4_request&"
        "x-oss-date=20231217T025437Z&x-oss-expires=599&"
        "x-oss-signature-version=OSS4-HMAC-SHA256");
  SignableRequest sent = r;
  sent.query = unsigned_q;
  internal::OssV4Parts p =
      internal::ComputeOssV4(sent, "sk", "20231217T025437Z", "cn-hangzhou", "oss");
  CHECK(p.canonical_request.find(
            "\ncontent-type:application/octet-stream\nx-oss-head1:value\n\n") != std::string::npos);
}

TEST_CASE("OSS V4 presign vector Q2 (STS token in the query)") {
  SignableRequest r = V4CommonRequest("application/octet-stream", false);
  Params q = PresignOssV4(r, Creds("ak", "sk", "token"), At(1702785388), std::chrono::seconds(599),
                          "cn-hangzhou");
  CHECK(ParamOf(q, "x-oss-date") == "20231217T035628Z");
  CHECK(ParamOf(q, "x-oss-security-token") == "token");
  CHECK(ParamOf(q, "x-oss-signature") ==
        "3817ac9d206cd6dfc90f1c09c00be45005602e55898f26f5ddb06d7892e1f8b5");
}

TEST_CASE("OSS V4 presign vector Q3 (additional headers)") {
  SignableRequest r = V4CommonRequest("application/octet-stream", false);
  r.additional_headers = {"ZAbc", "abc"};
  Params q =
      PresignOssV4(r, Creds("ak", "sk"), At(1702783809), std::chrono::seconds(599), "cn-hangzhou");
  CHECK(ParamOf(q, "x-oss-date") == "20231217T033009Z");
  CHECK(ParamOf(q, "x-oss-additional-headers") == "abc;zabc");
  CHECK(ParamOf(q, "x-oss-signature") ==
        "6bd984bfe531afb6db1f7550983a741b103a8c58e5e14f83ea474c2322dfa2b7");
}

TEST_CASE("OSS V4 CloudBox presign vectors") {
  SignableRequest r = V4CommonRequest("application/octet-stream", false);
  r.additional_headers = {"ZAbc", "abc"};
  Params q1 = PresignOssV4(r, Creds("ak", "sk"), At(1702781677), std::chrono::seconds(599),
                           "cb-123", "oss-cloudbox");
  CHECK(ParamOf(q1, "x-oss-credential") == "ak/20231217/cb-123/oss-cloudbox/aliyun_v4_request");
  CHECK(ParamOf(q1, "x-oss-signature") ==
        "07284191b9b4978ac3520cd39ee2dea2747eda454089359371ff463a6c7ba20f");
  Params q2 = PresignOssV4(r, Creds("ak", "sk"), At(1702783809), std::chrono::seconds(599),
                           "cb-123", "oss-cloudbox");
  CHECK(ParamOf(q2, "x-oss-signature") ==
        "16782cc8a7a554523db055eb804b508522e7e370073108ad88ee2f47496701dd");
}

TEST_CASE("OSS V4 derived D1 (GetObject with UTF-8 key, unsigned Range)") {
  SignableRequest r;
  r.method = "GET";
  r.bucket = "examplebucket";
  r.key = "dir/img 001-\xC3\xA9.jpg";
  r.headers = {{"x-oss-range-behavior", "standard"}, {"Range", "bytes=0-99"}};
  MakeOssV4Signer("cn-hangzhou")->Sign(r, Creds("ak", "sk"), At(1702743657));
  internal::OssV4Parts p =
      internal::ComputeOssV4(r, "sk", "20231216T162057Z", "cn-hangzhou", "oss");
  CHECK(p.canonical_request ==
        "GET\n/examplebucket/dir/img%20001-%C3%A9.jpg\n\nx-oss-content-sha256:UNSIGNED-PAYLOAD\n"
        "x-oss-date:20231216T162057Z\nx-oss-range-behavior:standard\n\n\nUNSIGNED-PAYLOAD");
  CHECK(p.signature == "e381dcf72a68d86c4fc9675ff77a23ea910fb9ecfb3a6c25eccd3821a4ca1977");
  CHECK(HeaderOf(r, "Authorization") ==
        "OSS4-HMAC-SHA256 Credential=ak/20231216/cn-hangzhou/oss/aliyun_v4_request,"
        "Signature=e381dcf72a68d86c4fc9675ff77a23ea910fb9ecfb3a6c25eccd3821a4ca1977");
}

TEST_CASE("OSS V4 derived D2 (ListObjectsV2 signs every query parameter)") {
  SignableRequest r;
  r.method = "GET";
  r.bucket = "examplebucket";
  r.query = {{"list-type", "2"},       {"prefix", "train/cls 1/"},
             {"delimiter", "/"},       {"max-keys", "1000"},
             {"encoding-type", "url"}, {"continuation-token", "ChR0cmFpbi9jbHMgMS8wMDAxLmpwZxAA"}};
  CHECK(internal::OssV4CanonicalQuery(r.query) ==
        "continuation-token=ChR0cmFpbi9jbHMgMS8wMDAxLmpwZxAA&delimiter=%2F&encoding-type=url&"
        "list-type=2&max-keys=1000&prefix=train%2Fcls%201%2F");
  MakeOssV4Signer("cn-hangzhou")->Sign(r, Creds("ak", "sk"), At(1702743657));
  CHECK(HeaderOf(r, "Authorization") ==
        "OSS4-HMAC-SHA256 Credential=ak/20231216/cn-hangzhou/oss/aliyun_v4_request,"
        "Signature=48544a95b207935584d8df17c9fb230b9f5f2776b112a6ab5458e8a7a2bf72c6");
}

// ---- AWS SigV4 ---------------------------------------------------------------------------

constexpr const char* kAwsAk = "AKIDEXAMPLE";
constexpr const char* kAwsSk = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

SignableRequest AwsSuiteRequest() {
  SignableRequest r;
  r.method = "GET";
  r.path = "/";
  r.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  return r;
}

internal::AwsSigV4Parts AwsSuiteSign(const SignableRequest& r) {
  return internal::ComputeAwsSigV4(r, kAwsSk, "20150830T123600Z", "us-east-1", "service",
                                   internal::AwsSigV4DefaultSignedHeaders(r),
                                   internal::kEmptySha256);
}

TEST_CASE("AWS SigV4 suite get-vanilla with every intermediate string") {
  internal::AwsSigV4Parts p = AwsSuiteSign(AwsSuiteRequest());
  CHECK(p.canonical_request ==
        "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(p.string_to_sign ==
        "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
        "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  CHECK(p.signing_key_hex == "938127b5336810ddb6a5d6af445fcac9e371f9ed418ed386b022aed82901be75");
  CHECK(p.signature == "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  CHECK(internal::AwsSigV4Authorization(kAwsAk, p) ==
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, "
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST_CASE("AWS SigV4 suite get-vanilla-query-order-key-case") {
  SignableRequest r = AwsSuiteRequest();
  r.query = {{"Param2", "value2"}, {"Param1", "value1"}};
  CHECK(internal::AwsSigV4CanonicalQuery(r.query) == "Param1=value1&Param2=value2");
  CHECK(AwsSuiteSign(r).signature ==
        "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

TEST_CASE("AWS SigV4 suite get-utf8") {
  SignableRequest r = AwsSuiteRequest();
  r.path = "/\xE1\x88\xB4";
  CHECK(internal::AwsSigV4CanonicalUri(r.path) == "/%E1%88%B4");
  CHECK(AwsSuiteSign(r).signature ==
        "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85");
}

TEST_CASE("AWS SigV4 suite get-vanilla-with-session-token") {
  SignableRequest r = AwsSuiteRequest();
  r.headers.emplace_back("X-Amz-Security-Token",
                         "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267");
  internal::AwsSigV4Parts p = AwsSuiteSign(r);
  CHECK(p.signed_headers == "host;x-amz-date;x-amz-security-token");
  CHECK(p.signature == "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8");
}

TEST_CASE("AWS SigV4 empty query values are written as name=") {
  CHECK(internal::AwsSigV4CanonicalQuery({{"uploads", ""}, {"a b", "c/d"}}) ==
        "a%20b=c%2Fd&uploads=");
}

TEST_CASE("AWS SigV4 S3 documentation example (GET with Range) through the Signer") {
  SignableRequest r;
  r.method = "GET";
  r.bucket = "examplebucket";
  r.key = "test.txt";
  r.path = "/test.txt";
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"Range", "bytes=0-9"},
               {"x-amz-content-sha256", std::string(internal::kEmptySha256)}};
  r.additional_headers = {"Range"};
  SystemTime t = At(ParseIso8601("20130524T000000Z").value());
  MakeAwsSigV4Signer("us-east-1", "s3")
      ->Sign(r, Creds("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"), t);
  CHECK(HeaderOf(r, "x-amz-date") == "20130524T000000Z");
  CHECK(HeaderOf(r, "Authorization") ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  internal::AwsSigV4Parts p = internal::ComputeAwsSigV4(
      r, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524T000000Z", "us-east-1", "s3",
      internal::AwsSigV4DefaultSignedHeaders(r), internal::kEmptySha256);
  CHECK(p.string_to_sign.substr(p.string_to_sign.rfind('\n') + 1) ==
        "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
}

TEST_CASE("AWS SigV4 signer adds UNSIGNED-PAYLOAD and the session token header") {
  SignableRequest r;
  r.method = "GET";
  r.path = "/b/k";
  r.headers = {{"Host", "127.0.0.1:9000"}};
  MakeAwsSigV4Signer("us-east-1")->Sign(r, Creds("ak", "sk", "tok"), At(1702743657));
  CHECK(HeaderOf(r, "x-amz-content-sha256") == "UNSIGNED-PAYLOAD");
  CHECK(HeaderOf(r, "x-amz-security-token") == "tok");
  CHECK(HeaderOf(r, "Authorization")
            .find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") !=
        std::string::npos);
}

TEST_CASE("SignableRequest header lookup is case-insensitive and SetHeader replaces") {
  SignableRequest r;
  r.headers = {{"Content-Type", "a"}, {"content-type", "b"}};
  REQUIRE(r.Header("CONTENT-TYPE") != nullptr);
  CHECK(*r.Header("CONTENT-TYPE") == "a");
  r.SetHeader("content-TYPE", "c");
  CHECK(r.headers.size() == 1);
  CHECK(*r.Header("content-type") == "c");
  r.SetHeader("X-New", "1");
  CHECK(r.headers.size() == 2);
  CHECK(r.Header("x-absent") == nullptr);
}

}  // namespace
}  // namespace ossmount::auth
