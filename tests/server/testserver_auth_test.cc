// Signature verification with --auth on, using the real signers of src/auth.
#include <chrono>

#include "auth/signer.h"
#include "common/url.h"
#include "object_store.h"
#include "testserver_fixture.h"

using namespace ossmount::testserver;
namespace auth = ossmount::auth;

namespace {

const char* kAk = "test-ak";
const char* kSk = "test-secret-0123456789";

struct Signed {
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Signs a path-style request to bucket "bkt" the way a client would send it.
Signed Sign(const auth::Signer& signer, const auth::Credentials& creds, uint16_t port,
            const std::string& method, const std::string& key, const auth::Params& query = {},
            ossmount::SystemTime now = std::chrono::system_clock::now(),
            const auth::Params& headers = {}) {
  auth::SignableRequest sr;
  sr.method = method;
  sr.bucket = "bkt";
  sr.key = key;
  sr.path = "/bkt/" + key;
  sr.query = query;
  sr.SetHeader("Host", "127.0.0.1:" + std::to_string(port));
  for (const auto& [name, value] : headers) sr.SetHeader(name, value);
  signer.Sign(sr, creds, now);
  Signed s;
  s.target = "/bkt/" + ossmount::PercentEncode(key, true);
  for (size_t i = 0; i < query.size(); ++i) {
    s.target += (i ? "&" : "?") + ossmount::PercentEncode(query[i].first);
    if (!query[i].second.empty()) s.target += "=" + ossmount::PercentEncode(query[i].second);
  }
  s.headers = sr.headers;
  return s;
}

auth::Credentials Creds(std::string ak = kAk, std::string sk = kSk, std::string token = "") {
  auth::Credentials c;
  c.access_key_id = std::move(ak);
  c.access_key_secret = std::move(sk);
  c.security_token = std::move(token);
  return c;
}

std::string Code(const HttpResult& r) {
  pugi::xml_document doc;
  doc.load_buffer(r.body.data(), r.body.size());
  return doc.child("Error").child_value("Code");
}

struct Scheme {
  const char* name;
  std::unique_ptr<auth::Signer> signer;
};

std::vector<Scheme> Schemes() {
  std::vector<Scheme> s;
  s.push_back({"OSS V1", auth::MakeOssV1Signer()});
  s.push_back({"OSS V4", auth::MakeOssV4Signer("cn-test-1")});
  s.push_back({"AWS SigV4", auth::MakeAwsSigV4Signer("cn-test-1")});
  return s;
}

}  // namespace

TEST_CASE("Signed requests pass, wrong secret, unknown key, no signature fail", "[auth]") {
  ServerFixture f;
  f.WriteFile("dir/img 1.jpg", "pixels");
  f.Start({"--access-key-id", kAk, "--access-key-secret", kSk, "--region", "cn-test-1"});
  const uint16_t port = f.server().port();
  for (auto& scheme : Schemes()) {
    INFO(scheme.name);
    auto s = Sign(*scheme.signer, Creds(), port, "GET", "dir/img 1.jpg");
    auto r = f.client().Request("GET", s.target, s.headers);
    CHECK(r.status == 200);
    CHECK(r.body == "pixels");
    const bool aws = std::string(scheme.name) == "AWS SigV4";
    CHECK(r.HasHeader(aws ? "x-amz-request-id" : "x-oss-request-id"));

    s = Sign(*scheme.signer, Creds(kAk, "wrong-secret"), port, "GET", "dir/img 1.jpg");
    r = f.client().Request("GET", s.target, s.headers);
    CHECK(r.status == 403);
    CHECK(Code(r) == "SignatureDoesNotMatch");
    CHECK(r.body.find("wrong-secret") == std::string::npos);
    CHECK(r.body.find(kSk) == std::string::npos);

    s = Sign(*scheme.signer, Creds("nobody", kSk), port, "GET", "dir/img 1.jpg");
    r = f.client().Request("GET", s.target, s.headers);
    CHECK(r.status == 403);
    CHECK(Code(r) == "InvalidAccessKeyId");

    s = Sign(*scheme.signer, Creds(), port, "GET", "dir/img 1.jpg", {},
             std::chrono::system_clock::now() - std::chrono::hours(1));
    r = f.client().Request("GET", s.target, s.headers);
    CHECK(r.status == 403);
    CHECK(Code(r) == "RequestTimeTooSkewed");

    // A signature for another key does not open this one.
    s = Sign(*scheme.signer, Creds(), port, "GET", "dir/other");
    r = f.client().Request("GET", "/bkt/dir/img%201.jpg", s.headers);
    CHECK(r.status == 403);
  }
  auto anon = f.client().Request("GET", "/bkt/dir/img%201.jpg");
  CHECK(anon.status == 403);
  CHECK(Code(anon) == "AccessDenied");
  CHECK(f.Stat("auth_failures") == 13);
  // The control API needs no signature.
  CHECK(f.client().Request("GET", "/_ossmount/stats").status == 200);
}

TEST_CASE("Signed PUT, multipart and paginated listing", "[auth]") {
  ServerFixture f;
  for (int i = 0; i < 3; ++i) f.WriteFile("l/" + std::to_string(i), "x");
  f.Start({"--access-key-id", kAk, "--access-key-secret", kSk, "--min-part-size", "1"});
  const uint16_t port = f.server().port();
  for (auto& scheme : Schemes()) {
    INFO(scheme.name);
    auto s = Sign(*scheme.signer, Creds(), port, "PUT", "up/loaded");
    auto r = f.client().Request("PUT", s.target, s.headers, "body");
    CHECK(r.status == 200);

    s = Sign(*scheme.signer, Creds(), port, "POST", "mp", {{"uploads", ""}});
    r = f.client().Request("POST", s.target, s.headers);
    REQUIRE(r.status == 200);
    pugi::xml_document doc;
    std::string id = ParseXml(doc, r.body).child_value("UploadId");
    s = Sign(*scheme.signer, Creds(), port, "PUT", "mp", {{"partNumber", "1"}, {"uploadId", id}});
    r = f.client().Request("PUT", s.target, s.headers, "part-one");
    REQUIRE(r.status == 200);
    std::string xml = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" +
                      r.Header("ETag") + "</ETag></Part></CompleteMultipartUpload>";
    s = Sign(*scheme.signer, Creds(), port, "POST", "mp", {{"uploadId", id}});
    r = f.client().Request("POST", s.target, s.headers, xml);
    CHECK(r.status == 200);

    // Page 2 of a listing signs the continuation token (an OSS V1 sub-resource).
    s = Sign(*scheme.signer, Creds(), port, "GET", "",
             {{"list-type", "2"}, {"prefix", "l/"}, {"max-keys", "2"}});
    s.target = "/bkt/" + s.target.substr(std::string("/bkt/").size());
    r = f.client().Request("GET", s.target, s.headers);
    REQUIRE(r.status == 200);
    pugi::xml_document page1;
    std::string token = ParseXml(page1, r.body).child_value("NextContinuationToken");
    REQUIRE(!token.empty());
    s = Sign(
        *scheme.signer, Creds(), port, "GET", "",
        {{"list-type", "2"}, {"prefix", "l/"}, {"max-keys", "2"}, {"continuation-token", token}});
    r = f.client().Request("GET", s.target, s.headers);
    REQUIRE(r.status == 200);
    CHECK(r.body.find("<Key>l/2</Key>") != std::string::npos);
  }
  CHECK(f.Stat("auth_failures") == 0);
}

TEST_CASE("STS tokens: valid passes, expired and wrong are rejected", "[auth]") {
  const int64_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  for (bool expired : {false, true}) {
    ServerFixture f;
    f.WriteFile("k", "v");
    f.Start({"--access-key-id", kAk, "--access-key-secret", kSk, "--sts-token", "tok-123",
             "--sts-expires-at", std::to_string(expired ? now - 10 : now + 3600)});
    const uint16_t port = f.server().port();
    for (auto& scheme : Schemes()) {
      INFO(scheme.name << (expired ? " expired" : " valid"));
      const bool aws = std::string(scheme.name) == "AWS SigV4";
      auto s = Sign(*scheme.signer, Creds(kAk, kSk, "tok-123"), port, "GET", "k");
      auto r = f.client().Request("GET", s.target, s.headers);
      if (expired) {
        CHECK(r.status == 403);
        CHECK(Code(r) == (aws ? "ExpiredToken" : "SecurityTokenExpired"));
        CHECK(r.body.find("tok-123") == std::string::npos);
      } else {
        CHECK(r.status == 200);
      }
      s = Sign(*scheme.signer, Creds(kAk, kSk, "other-token"), port, "GET", "k");
      r = f.client().Request("GET", s.target, s.headers);
      CHECK(r.status == 403);
      CHECK(Code(r) == (aws ? "InvalidToken" : "InvalidSecurityToken"));
      s = Sign(*scheme.signer, Creds(), port, "GET", "k");  // no token at all
      r = f.client().Request("GET", s.target, s.headers);
      CHECK(r.status == 403);
    }
  }
}

TEST_CASE("Signed write operations: copies, part copies, listings, deletes", "[auth]") {
  ServerFixture f;
  f.WriteFile("src", std::string(5000, 's'));
  f.Start({"--access-key-id", kAk, "--access-key-secret", kSk, "--min-part-size", "1"});
  const uint16_t port = f.server().port();
  const auto now = [] { return std::chrono::system_clock::now(); };
  int n = 0;
  for (auto& scheme : Schemes()) {
    INFO(scheme.name);
    const bool aws = std::string(scheme.name) == "AWS SigV4";
    const std::string copy = aws ? "x-amz-copy-source" : "x-oss-copy-source";
    const std::string dst = "dst" + std::to_string(n++);
    auto s = Sign(*scheme.signer, Creds(), port, "PUT", dst, {}, now(), {{copy, "/bkt/src"}});
    auto r = f.client().Request("PUT", s.target, s.headers);
    CHECK(r.status == 200);
    // The copy source is signed: changing it after signing is refused.
    auto tampered = s.headers;
    for (auto& [k, v] : tampered) {
      if (k == copy) v = "/bkt/" + dst;
    }
    CHECK(f.client().Request("PUT", s.target, tampered).status == 403);

    s = Sign(*scheme.signer, Creds(), port, "POST", dst, {{"uploads", ""}});
    r = f.client().Request("POST", s.target, s.headers);
    REQUIRE(r.status == 200);
    pugi::xml_document doc;
    std::string id = ParseXml(doc, r.body).child_value("UploadId");
    s = Sign(*scheme.signer, Creds(), port, "PUT", dst, {{"partNumber", "1"}, {"uploadId", id}},
             now(),
             {{copy, "/bkt/src"},
              {aws ? "x-amz-copy-source-range" : "x-oss-copy-source-range", "bytes=0-99"}});
    r = f.client().Request("PUT", s.target, s.headers);
    CHECK(r.status == 200);
    s = Sign(*scheme.signer, Creds(), port, "GET", dst, {{"uploadId", id}});
    r = f.client().Request("GET", s.target, s.headers);
    CHECK(r.status == 200);
    CHECK(r.body.find("<Size>100</Size>") != std::string::npos);
    s = Sign(*scheme.signer, Creds(), port, "GET", "", {{"uploads", ""}});
    r = f.client().Request("GET", s.target, s.headers);
    CHECK(r.status == 200);
    CHECK(r.body.find(id) != std::string::npos);
    s = Sign(*scheme.signer, Creds(), port, "DELETE", dst, {{"uploadId", id}});
    CHECK(f.client().Request("DELETE", s.target, s.headers).status == 204);

    const std::string xml = "<Delete><Object><Key>" + dst + "</Key></Object></Delete>";
    s = Sign(*scheme.signer, Creds(), port, "POST", "", {{"delete", ""}}, now(),
             {{"Content-MD5", Md5Base64(xml)}});
    r = f.client().Request("POST", s.target, s.headers, xml);
    CHECK(r.status == 200);
    s = Sign(*scheme.signer, Creds(), port, "DELETE", "src-not-there");
    CHECK(f.client().Request("DELETE", s.target, s.headers).status == 204);
  }
  CHECK(f.Stat("auth_failures") == 3);
  CHECK(f.Stat("open_multipart_uploads") == 0);
}

TEST_CASE("Signed AppendObject and symlink requests: their sub-resources are signed", "[auth]") {
  ServerFixture f;
  f.Start({"--access-key-id", kAk, "--access-key-secret", kSk, "--region", "cn-test-1"});
  const uint16_t port = f.server().port();
  auto now = [] { return std::chrono::system_clock::now(); };
  for (auto& scheme : Schemes()) {
    const std::string name = scheme.name;
    if (name == "AWS SigV4") continue;  // S3 has neither operation
    INFO(name);
    const std::string key = name == "OSS V1" ? "log v1" : "log v4";
    const std::string link = key + " link";
    auto s = Sign(*scheme.signer, Creds(), port, "POST", key, {{"append", ""}, {"position", "0"}});
    auto r = f.client().Request("POST", s.target, s.headers, "abc");
    CHECK(r.status == 200);
    CHECK(r.Header("x-oss-next-append-position") == "3");
    // On the wire in another order: the canonical resource sorts the sub-resources.
    s = Sign(*scheme.signer, Creds(), port, "POST", key, {{"position", "3"}, {"append", ""}});
    r = f.client().Request("POST", s.target, s.headers, "def");
    CHECK(r.status == 200);
    CHECK(r.Header("x-oss-next-append-position") == "6");
    // The position is signed: another one does not pass.
    s = Sign(*scheme.signer, Creds(), port, "POST", key, {{"append", ""}, {"position", "6"}});
    std::string forged = s.target;
    forged.replace(forged.find("position=6"), 10, "position=7");
    r = f.client().Request("POST", forged, s.headers, "x");
    CHECK(r.status == 403);
    CHECK(Code(r) == "SignatureDoesNotMatch");

    s = Sign(*scheme.signer, Creds(), port, "PUT", link, {{"symlink", ""}}, now(),
             {{"x-oss-symlink-target", ossmount::PercentEncode(key)}});
    r = f.client().Request("PUT", s.target, s.headers);
    CHECK(r.status == 200);
    s = Sign(*scheme.signer, Creds(), port, "GET", link, {{"symlink", ""}});
    r = f.client().Request("GET", s.target, s.headers);
    CHECK(r.status == 200);
    CHECK(ossmount::PercentDecode(r.Header("x-oss-symlink-target")).value() == key);
    s = Sign(*scheme.signer, Creds(), port, "GET", link);
    r = f.client().Request("GET", s.target, s.headers);
    CHECK(r.status == 200);
    CHECK(r.body == "abcdef");
    // A plain GET's signature does not open GetSymlink: symlink is part of what is signed.
    r = f.client().Request("GET", s.target + "?symlink", s.headers);
    CHECK(r.status == 403);
    CHECK(Code(r) == "SignatureDoesNotMatch");
  }
}
