// Sign-then-verify round trips for every scheme, and a table of single-byte tampering that
// must each be caught with the error code the real services send.
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "auth/signer.h"
#include "unit/auth/test_credentials.h"

namespace ossmount::auth {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using testing::Creds;

const SystemTime kNow = SystemTime(seconds(1702743657));  // 2023-12-16T16:20:57Z

VerifyOptions Options(SystemTime now = kNow) {
  VerifyOptions o;
  static const std::map<std::string, std::string, std::less<>> kSecrets = {
      {"ak", "sk"}, {"ak2", "another-secret"}};
  o.secret_for = [](std::string_view id) -> std::optional<std::string> {
    auto it = kSecrets.find(id);
    if (it == kSecrets.end()) return std::nullopt;
    return it->second;
  };
  o.check_token = [](std::string_view, std::string_view token) {
    if (token == "good-token") return Status::Ok();
    return Status(ErrorCode::kTokenExpired, "The security token expired.");
  };
  o.now = now;
  return o;
}

SignableRequest OssRequest() {
  SignableRequest r;
  r.method = "GET";
  r.bucket = "bucket";
  r.key = "train/cls 1/img+001-\xC3\xA9.jpg";
  r.query = {{"versionId", "v1"}, {"response-content-type", "image/jpeg"}};
  r.headers = {{"Host", "bucket.oss-cn-hangzhou.aliyuncs.com"},
               {"Content-Type", "image/jpeg"},
               {"x-oss-range-behavior", "standard"},
               {"Range", "bytes=0-99"}};
  return r;
}

SignableRequest S3Request(bool path_style) {
  SignableRequest r;
  r.method = "GET";
  r.bucket = "bucket";
  r.key = "train/cls 1/img+001.jpg";
  r.path = path_style ? "/bucket/train/cls 1/img+001.jpg" : "/train/cls 1/img+001.jpg";
  r.query = {{"versionId", "v1"}, {"uploads", ""}};
  r.headers = {{"Host", path_style ? "127.0.0.1:9000" : "bucket.s3.example.com"},
               {"Range", "bytes=0-99"},
               {"x-amz-meta-x", "1"}};
  r.additional_headers = {"range"};
  return r;
}

ErrorCode VerifyCode(const std::function<Status(const SignableRequest&, const VerifyOptions&)>& v,
                     const SignableRequest& r, const VerifyOptions& o = Options()) {
  return v(r, o).code();
}

struct Tamper {
  const char* what;
  std::function<void(SignableRequest&)> apply;
};

void FlipLastChar(std::string& s) { s.back() = s.back() == '0' ? '1' : '0'; }

std::vector<Tamper> CommonTampers() {
  return {
      {"method", [](SignableRequest& r) { r.method = "HEAD"; }},
      {"bucket", [](SignableRequest& r) { r.bucket = "bucket2"; }},
      {"key", [](SignableRequest& r) { r.key.back() = 'G'; }},
      {"signed query value", [](SignableRequest& r) { r.query[0].second = "v2"; }},
      {"signature byte",
       [](SignableRequest& r) {
         std::string a = *r.Header("Authorization");
         // The signature ends the header (V4/SigV4 hex) or is base64 before nothing else (V1).
         a[a.size() - 2] = a[a.size() - 2] == 'A' ? 'B' : 'A';
         r.SetHeader("Authorization", a);
       }},
  };
}

void ExpectAllCaught(const std::function<Status(const SignableRequest&, const VerifyOptions&)>& v,
                     const SignableRequest& signed_req, const std::vector<Tamper>& tampers) {
  REQUIRE(v(signed_req, Options()).ok());
  for (const Tamper& t : tampers) {
    SignableRequest r = signed_req;
    t.apply(r);
    INFO("tampered: " << t.what);
    CHECK(VerifyCode(v, r) == ErrorCode::kSignatureDoesNotMatch);
  }
}

// ---- OSS V1 -------------------------------------------------------------------------------

TEST_CASE("Verify OSS V1: a signed request verifies - every signed part is protected") {
  SignableRequest r = OssRequest();
  MakeOssV1Signer()->Sign(r, Creds("ak", "sk"), kNow);
  std::vector<Tamper> tampers = CommonTampers();
  tampers.push_back(
      {"content-type", [](SignableRequest& x) { x.SetHeader("Content-Type", "a/b"); }});
  tampers.push_back(
      {"x-oss header", [](SignableRequest& x) { x.SetHeader("x-oss-range-behavior", "x"); }});
  tampers.push_back(
      {"added x-oss header", [](SignableRequest& x) { x.SetHeader("x-oss-meta-a", "1"); }});
  tampers.push_back(
      {"date", [](SignableRequest& x) { x.SetHeader("Date", FormatRfc1123(kNow + seconds(1))); }});
  tampers.push_back(
      {"added sub-resource", [](SignableRequest& x) { x.query.emplace_back("acl", ""); }});
  ExpectAllCaught(VerifyOssRequest, r, tampers);

  // Not signed by V1, by design: ordinary query params and other headers.
  SignableRequest loose = r;
  loose.query.emplace_back("prefix", "x");
  loose.SetHeader("Range", "bytes=5-6");
  CHECK(VerifyOssRequest(loose, Options()).ok());
}

TEST_CASE("Verify OSS V1: wrong secret, unknown key, skew, token, missing Authorization") {
  SignableRequest r = OssRequest();
  SignableRequest wrong = r;
  MakeOssV1Signer()->Sign(wrong, Creds("ak", "not-the-secret"), kNow);
  CHECK(VerifyCode(VerifyOssRequest, wrong) == ErrorCode::kSignatureDoesNotMatch);

  SignableRequest unknown = r;
  MakeOssV1Signer()->Sign(unknown, Creds("nobody", "sk"), kNow);
  CHECK(VerifyCode(VerifyOssRequest, unknown) == ErrorCode::kInvalidAccessKeyId);

  SignableRequest ok = r;
  MakeOssV1Signer()->Sign(ok, Creds("ak", "sk"), kNow);
  CHECK(VerifyOssRequest(ok, Options(kNow + minutes(14))).ok());
  CHECK(VerifyCode(VerifyOssRequest, ok, Options(kNow + minutes(16))) ==
        ErrorCode::kRequestTimeTooSkewed);
  CHECK(VerifyCode(VerifyOssRequest, ok, Options(kNow - minutes(16))) ==
        ErrorCode::kRequestTimeTooSkewed);

  SignableRequest sts = r;
  MakeOssV1Signer()->Sign(sts, Creds("ak", "sk", "good-token"), kNow);
  CHECK(VerifyOssRequest(sts, Options()).ok());
  SignableRequest forged = sts;
  forged.SetHeader("x-oss-security-token", "other-token");
  CHECK(VerifyCode(VerifyOssRequest, forged) == ErrorCode::kSignatureDoesNotMatch);
  SignableRequest expired = r;
  MakeOssV1Signer()->Sign(expired, Creds("ak", "sk", "old-token"), kNow);
  CHECK(VerifyCode(VerifyOssRequest, expired) == ErrorCode::kTokenExpired);

  CHECK(VerifyCode(VerifyOssRequest, r) == ErrorCode::kAccessDenied);
}

// ---- OSS V4 -------------------------------------------------------------------------------

TEST_CASE("Verify OSS V4: with and without additional headers - tampering is caught") {
  for (bool with_additional : {false, true}) {
    INFO("additional headers: " << with_additional);
    SignableRequest r = OssRequest();
    if (with_additional) r.additional_headers = {"Range", "host"};
    MakeOssV4Signer("cn-hangzhou")->Sign(r, Creds("ak", "sk"), kNow);
    bool has_list =
        r.Header("Authorization")->find("AdditionalHeaders=host;range") != std::string::npos;
    CHECK(has_list == with_additional);
    std::vector<Tamper> tampers = CommonTampers();
    tampers.push_back({"any query value", [](SignableRequest& x) { x.query[1].second = "a/b"; }});
    tampers.push_back(
        {"added query", [](SignableRequest& x) { x.query.emplace_back("prefix", ""); }});
    tampers.push_back(
        {"content-type", [](SignableRequest& x) { x.SetHeader("Content-Type", "a/b"); }});
    tampers.push_back(
        {"x-oss header", [](SignableRequest& x) { x.SetHeader("x-oss-range-behavior", "x"); }});
    tampers.push_back({"x-oss-date", [](SignableRequest& x) {
                         x.SetHeader("x-oss-date", FormatIso8601Basic(kNow + seconds(1)));
                       }});
    if (with_additional) {
      tampers.push_back({"additional header value",
                         [](SignableRequest& x) { x.SetHeader("Range", "bytes=0-1"); }});
      tampers.push_back({"additional header removed", [](SignableRequest& x) {
                           std::erase_if(x.headers, [](auto& h) { return h.first == "Range"; });
                         }});
      tampers.push_back({"AdditionalHeaders list", [](SignableRequest& x) {
                           std::string a = *x.Header("Authorization");
                           a.replace(a.find("host;range"), 10, "range");
                           x.SetHeader("Authorization", a);
                         }});
    }
    ExpectAllCaught(VerifyOssRequest, r, tampers);
  }
}

TEST_CASE("Verify OSS V4: token, unknown key, skew, region, scope date") {
  SignableRequest r = OssRequest();
  SignableRequest sts = r;
  MakeOssV4Signer("cn-hangzhou")->Sign(sts, Creds("ak", "sk", "good-token"), kNow);
  CHECK(VerifyOssRequest(sts, Options()).ok());
  SignableRequest forged = sts;
  forged.SetHeader("x-oss-security-token", "good-tokeN");
  CHECK(VerifyCode(VerifyOssRequest, forged) == ErrorCode::kSignatureDoesNotMatch);

  SignableRequest expired = r;
  MakeOssV4Signer("cn-hangzhou")->Sign(expired, Creds("ak", "sk", "old-token"), kNow);
  CHECK(VerifyCode(VerifyOssRequest, expired) == ErrorCode::kTokenExpired);

  SignableRequest unknown = r;
  MakeOssV4Signer("cn-hangzhou")->Sign(unknown, Creds("nobody", "sk"), kNow);
  CHECK(VerifyCode(VerifyOssRequest, unknown) == ErrorCode::kInvalidAccessKeyId);

  SignableRequest ok = r;
  MakeOssV4Signer("cn-hangzhou")->Sign(ok, Creds("ak2", "another-secret"), kNow);
  CHECK(VerifyOssRequest(ok, Options()).ok());
  CHECK(VerifyCode(VerifyOssRequest, ok, Options(kNow + minutes(16))) ==
        ErrorCode::kRequestTimeTooSkewed);

  VerifyOptions region = Options();
  region.expected_region = "cn-beijing";
  CHECK(VerifyOssRequest(ok, region).code() == ErrorCode::kAccessDenied);
  region.expected_region = "cn-hangzhou";
  CHECK(VerifyOssRequest(ok, region).ok());

  SignableRequest other_day = ok;
  other_day.SetHeader("x-oss-date", FormatIso8601Basic(kNow + std::chrono::hours(24)));
  CHECK(VerifyCode(VerifyOssRequest, other_day) == ErrorCode::kAccessDenied);
}

// ---- OSS presigned URLs -----------------------------------------------------------------

TEST_CASE("Verify OSS presigned V1 and V4 URLs: valid, expired, tampered") {
  SignableRequest r = OssRequest();
  const int64_t now_s = 1702743657;

  SignableRequest v1 = r;
  v1.query = PresignOssV1(r, Creds("ak", "sk", "good-token"), now_s + 600);
  CHECK(VerifyOssRequest(v1, Options()).ok());
  CHECK(VerifyCode(VerifyOssRequest, v1, Options(kNow + minutes(11))) == ErrorCode::kAccessDenied);
  SignableRequest v1_bad = v1;
  v1_bad.key += "x";
  CHECK(VerifyCode(VerifyOssRequest, v1_bad) == ErrorCode::kSignatureDoesNotMatch);

  SignableRequest v4 = r;
  v4.additional_headers = {"range"};
  v4.query = PresignOssV4(v4, Creds("ak", "sk"), kNow, seconds(600), "cn-hangzhou");
  v4.additional_headers.clear();  // the server learns them from the query
  CHECK(VerifyOssRequest(v4, Options(kNow + minutes(9))).ok());
  CHECK(VerifyCode(VerifyOssRequest, v4, Options(kNow + minutes(11))) == ErrorCode::kAccessDenied);
  SignableRequest v4_bad = v4;
  v4_bad.SetHeader("Range", "bytes=1-2");
  CHECK(VerifyCode(VerifyOssRequest, v4_bad) == ErrorCode::kSignatureDoesNotMatch);
  SignableRequest v4_unknown = r;
  v4_unknown.query = PresignOssV4(r, Creds("nobody", "sk"), kNow, seconds(600), "cn-hangzhou");
  CHECK(VerifyCode(VerifyOssRequest, v4_unknown) == ErrorCode::kInvalidAccessKeyId);
}

// ---- AWS SigV4 ----------------------------------------------------------------------------

TEST_CASE("Verify AWS SigV4: path-style and virtual-hosted requests - tampering is caught") {
  for (bool path_style : {true, false}) {
    INFO("path style: " << path_style);
    SignableRequest r = S3Request(path_style);
    MakeAwsSigV4Signer("us-east-1")->Sign(r, Creds("ak", "sk"), kNow);
    std::vector<Tamper> tampers = {
        {"method", [](SignableRequest& x) { x.method = "PUT"; }},
        {"path", [](SignableRequest& x) { x.path.back() = 'G'; }},
        {"query value", [](SignableRequest& x) { x.query[0].second = "v2"; }},
        {"added query", [](SignableRequest& x) { x.query.emplace_back("a", "b"); }},
        {"host", [](SignableRequest& x) { x.SetHeader("Host", "evil.example.com"); }},
        {"range (signed extra header)",
         [](SignableRequest& x) { x.SetHeader("Range", "bytes=1-2"); }},
        {"x-amz header", [](SignableRequest& x) { x.SetHeader("x-amz-meta-x", "2"); }},
        {"payload hash", [](SignableRequest& x) { x.SetHeader("x-amz-content-sha256", "abc"); }},
        {"x-amz-date",
         [](SignableRequest& x) {
           x.SetHeader("x-amz-date", FormatIso8601Basic(kNow + seconds(1)));
         }},
        {"signature byte",
         [](SignableRequest& x) {
           std::string a = *x.Header("Authorization");
           FlipLastChar(a);
           x.SetHeader("Authorization", a);
         }},
    };
    ExpectAllCaught(VerifyAwsSigV4Request, r, tampers);

    SignableRequest smuggled = r;
    smuggled.SetHeader("x-amz-copy-source", "/other/key");
    CHECK(VerifyCode(VerifyAwsSigV4Request, smuggled) == ErrorCode::kAccessDenied);
  }
}

TEST_CASE("Verify AWS SigV4: token, unknown key, skew, region, missing Authorization") {
  SignableRequest r = S3Request(true);
  SignableRequest sts = r;
  MakeAwsSigV4Signer("us-east-1")->Sign(sts, Creds("ak", "sk", "good-token"), kNow);
  CHECK(VerifyAwsSigV4Request(sts, Options()).ok());
  SignableRequest expired = r;
  MakeAwsSigV4Signer("us-east-1")->Sign(expired, Creds("ak", "sk", "old-token"), kNow);
  CHECK(VerifyCode(VerifyAwsSigV4Request, expired) == ErrorCode::kTokenExpired);

  SignableRequest unknown = r;
  MakeAwsSigV4Signer("us-east-1")->Sign(unknown, Creds("nobody", "sk"), kNow);
  CHECK(VerifyCode(VerifyAwsSigV4Request, unknown) == ErrorCode::kInvalidAccessKeyId);

  SignableRequest wrong = r;
  MakeAwsSigV4Signer("us-east-1")->Sign(wrong, Creds("ak", "bad"), kNow);
  CHECK(VerifyCode(VerifyAwsSigV4Request, wrong) == ErrorCode::kSignatureDoesNotMatch);

  SignableRequest ok = r;
  MakeAwsSigV4Signer("us-east-1")->Sign(ok, Creds("ak", "sk"), kNow);
  CHECK(VerifyCode(VerifyAwsSigV4Request, ok, Options(kNow - minutes(16))) ==
        ErrorCode::kRequestTimeTooSkewed);
  VerifyOptions region = Options();
  region.expected_region = "eu-west-1";
  CHECK(VerifyAwsSigV4Request(ok, region).code() == ErrorCode::kAccessDenied);

  CHECK(VerifyCode(VerifyAwsSigV4Request, r) == ErrorCode::kAccessDenied);
  SignableRequest oss_scheme = r;
  MakeOssV4Signer("us-east-1")->Sign(oss_scheme, Creds("ak", "sk"), kNow);
  CHECK(VerifyCode(VerifyAwsSigV4Request, oss_scheme) == ErrorCode::kAccessDenied);
}

TEST_CASE("Verifier messages never contain the secret, token or signature") {
  SignableRequest r = OssRequest();
  MakeOssV4Signer("cn-hangzhou")->Sign(r, Creds("ak", "sk-very-secret", "old-token"), kNow);
  Status s = VerifyOssRequest(r, Options());
  REQUIRE(!s.ok());
  std::string sig = r.Header("Authorization")->substr(r.Header("Authorization")->rfind('=') + 1);
  CHECK(s.message().find("sk-very-secret") == std::string::npos);
  CHECK(s.message().find(sig) == std::string::npos);
}

}  // namespace
}  // namespace ossmount::auth
