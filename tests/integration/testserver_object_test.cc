// The OSS (and S3) client against the project's own object server (ossmount-testserver),
// which verifies OSS V1, OSS V4 and AWS SigV4 signatures and STS tokens, and injects
// errors, resets, truncated bodies and corrupted bytes.
#include <catch2/catch.hpp>

#include "client_rig.h"
#include "common/crc64.h"
#include "testserver_fixture.h"

using namespace ossmount;
using namespace ossmount::itest;
using ossmount::testserver::ServerFixture;

namespace {

constexpr const char* kAk = "LTAI-test-ak";
constexpr const char* kSecret = "test-secret-key";

std::vector<std::string> AuthArgs(const std::string& region = "cn-hangzhou") {
  return {"--auth",   "on",  "--access-key-id", kAk, "--access-key-secret", kSecret,
          "--region", region};
}

ClientOptions OssOptions(ServerFixture& f, const std::string& region,
                         OssSignatureVersion version = OssSignatureVersion::kV4) {
  ClientOptions o;
  o.protocol = Protocol::kOss;
  o.bucket = "bkt";
  o.endpoint = "http://127.0.0.1:" + std::to_string(f.server().port());
  o.region = region;
  o.oss_signature = version;
  o.credentials = std::make_shared<TestCredentials>(kAk, kSecret);
  o.retry.max_attempts = 4;
  o.retry.base_delay = std::chrono::milliseconds(20);
  return o;
}

// Exercises every operation; the server rejects any request whose signature is wrong.
void RoundTrip(ClientRig& c) {
  std::string data = Content(300000, 3);
  auto put = c.Put("train/cls a/img+1.jpg", data);
  REQUIRE(put.ok());
  CHECK(put->crc64 == Crc64(0, data.data(), data.size()));
  GetResult details;
  auto whole = c.Get("train/cls a/img+1.jpg", 0, std::nullopt, &details);
  REQUIRE(whole.ok());
  CHECK(whole.value() == data);
  CHECK(details.crc64 == Crc64(0, data.data(), data.size()));
  auto range = c.Get("train/cls a/img+1.jpg", 12345, 1000);
  REQUIRE(range.ok());
  CHECK(range.value() == data.substr(12345, 1000));
  auto stale = c.Get("train/cls a/img+1.jpg", 0, 10, nullptr, "\"not-the-etag\"");
  CHECK(stale.status().code() == ErrorCode::kPreconditionFailed);
  CHECK(c.Get("train/cls a/img+1.jpg", 0, 10, nullptr, put->etag).ok());
  auto past = c.Get("train/cls a/img+1.jpg", data.size(), 1);
  CHECK(past.status().code() == ErrorCode::kInvalidRange);
  auto head = c.Head("train/cls a/img+1.jpg");
  REQUIRE(head.ok());
  CHECK(head->size == data.size());
  CHECK(head->crc64 == Crc64(0, data.data(), data.size()));
  int pages = 0;
  auto listed = c.ListAll("train/", "/", 1000, &pages);
  REQUIRE(listed.ok());
  CHECK(listed->second == std::vector<std::string>{"train/cls a/"});
  auto id = c.Initiate("ckpt/model.pt");
  REQUIRE(id.ok());
  std::string p1 = Content(200 * 1024, 4), p2 = Content(1000, 5);
  auto part1 = c.UploadPart("ckpt/model.pt", id.value(), 1, p1);
  auto part2 = c.UploadPart("ckpt/model.pt", id.value(), 2, p2);
  REQUIRE(part1.ok());
  REQUIRE(part2.ok());
  auto done = c.Complete("ckpt/model.pt", id.value(), {part1.value(), part2.value()});
  REQUIRE(done.ok());
  auto back = c.Get("ckpt/model.pt");
  REQUIRE(back.ok());
  CHECK(back.value() == p1 + p2);
  auto id2 = c.Initiate("ckpt/aborted.pt");
  REQUIRE(id2.ok());
  REQUIRE(c.UploadPart("ckpt/aborted.pt", id2.value(), 1, "x").ok());
  CHECK(c.Abort("ckpt/aborted.pt", id2.value()).ok());
  // NoSuchUpload from a Complete is settled by a HEAD (the client's own first attempt may
  // have completed it); there is no object, so the outcome is an integrity failure.
  CHECK(c.Complete("ckpt/aborted.pt", id2.value(), {{1, "\"x\""}}).status().code() ==
        ErrorCode::kIntegrity);
  CHECK(c.Delete("ckpt/model.pt").ok());
  CHECK(c.Delete("ckpt/model.pt").ok());
  CHECK(c.Head("ckpt/model.pt").status().code() == ErrorCode::kNotFound);
  CHECK(c.Get("nope").status().code() == ErrorCode::kNotFound);
}

}  // namespace

TEST_CASE("testserver: OSS V4 signatures are accepted for every operation") {
  ServerFixture f;
  f.Start(AuthArgs());
  ClientRig c(OssOptions(f, "cn-hangzhou"));
  RoundTrip(c);
  CHECK(f.Stat("auth_failures") == 0);
}

TEST_CASE("testserver: OSS V1 signatures are accepted for every operation") {
  ServerFixture f;
  f.Start(AuthArgs());
  ClientRig c(OssOptions(f, "", OssSignatureVersion::kV1));
  RoundTrip(c);
  CHECK(f.Stat("auth_failures") == 0);
}

TEST_CASE("testserver: S3 SigV4 signatures are accepted for every operation") {
  ServerFixture f;
  f.Start(AuthArgs("us-east-1"));
  ClientOptions o = OssOptions(f, "");
  o.protocol = Protocol::kS3;
  ClientRig c(o);
  std::string data = Content(5000, 1);
  REQUIRE(c.Put("s3/a b", data).ok());
  auto back = c.Get("s3/a b", 10, 100);
  REQUIRE(back.ok());
  CHECK(back.value() == data.substr(10, 100));
  int pages = 0;
  auto listed = c.ListAll("s3/", "", 1000, &pages);
  REQUIRE(listed.ok());
  REQUIRE(listed->first.size() == 1);
  CHECK(listed->first[0].key == "s3/a b");
  CHECK(f.Stat("auth_failures") == 0);
}

TEST_CASE("testserver: listing pagination with url-encoded awkward keys") {
  ServerFixture f;
  std::vector<std::string> keys;
  for (int i = 0; i < 25; ++i) keys.push_back("k/" + std::to_string(i) + " a+b%c ü");
  for (const auto& k : keys) f.WriteFile(k, k);
  f.Start(AuthArgs());
  ClientRig c(OssOptions(f, "cn-hangzhou"));
  int pages = 0;
  auto listed = c.ListAll("k/", "", 4, &pages);
  REQUIRE(listed.ok());
  CHECK(pages == 7);
  std::vector<std::string> got, want = keys;
  for (const auto& o : listed->first) got.push_back(o.key);
  std::sort(want.begin(), want.end());
  CHECK(got == want);
  for (const auto& k : keys) CHECK(c.Get(k).value() == k);
}

TEST_CASE("testserver: a wrong secret or key id is reported clearly, not retried") {
  ServerFixture f;
  f.Start(AuthArgs());
  ClientOptions o = OssOptions(f, "cn-hangzhou");
  o.credentials = std::make_shared<TestCredentials>(kAk, "wrong-secret");
  {
    ClientRig c(o);
    auto got = c.Head("x");
    // HEAD has no body: only the status is known.
    CHECK(got.status().code() == ErrorCode::kAccessDenied);
    auto list = c.List(ListRequest{});
    REQUIRE_FALSE(list.ok());
    CHECK(list.status().code() == ErrorCode::kSignatureDoesNotMatch);
    CHECK(list.status().message().find("check the access key secret") != std::string::npos);
    CHECK(list.status().ToString().find("wrong-secret") == std::string::npos);
  }
  CHECK(f.Stat("LIST") == 1);  // not retried
  o.credentials = std::make_shared<TestCredentials>("unknown-ak", kSecret);
  ClientRig c(o);
  auto list = c.List(ListRequest{});
  CHECK(list.status().code() == ErrorCode::kInvalidAccessKeyId);
}

TEST_CASE("testserver: STS token sent, expired tokens refreshed through the provider") {
  ServerFixture f;
  auto args = AuthArgs();
  args.insert(args.end(), {"--sts-token", "GOOD-TOKEN"});
  f.Start(args);
  f.WriteFile("a", "hello");
  ClientOptions o = OssOptions(f, "cn-hangzhou");
  {
    auto creds = std::make_shared<TestCredentials>(kAk, kSecret, "GOOD-TOKEN");
    o.credentials = creds;
    ClientRig c(o);
    CHECK(c.Get("a").value() == "hello");
    CHECK(creds->invalidations() == 0);
  }
  {
    // The provider holds a stale token; the rejection makes the client invalidate it, the
    // provider re-reads (here: rotates) and the retry succeeds.
    auto creds = std::make_shared<TestCredentials>(kAk, kSecret, "STALE-TOKEN");
    creds->on_invalidate = [](TestCredentials& c) { c.Set(kAk, kSecret, "GOOD-TOKEN"); };
    o.credentials = creds;
    ClientRig c(o);
    auto got = c.Get("a");
    REQUIRE(got.ok());
    CHECK(got.value() == "hello");
    CHECK(creds->invalidations() == 1);
  }
}

TEST_CASE("testserver: an expired STS token is kTokenExpired after refresh attempts") {
  ServerFixture f;
  auto args = AuthArgs();
  args.insert(args.end(), {"--sts-token", "OLD", "--sts-expires-at", "1000"});
  f.Start(args);
  f.WriteFile("a", "hello");
  ClientOptions o = OssOptions(f, "cn-hangzhou");
  auto creds = std::make_shared<TestCredentials>(kAk, kSecret, "OLD");
  o.credentials = creds;
  ClientRig c(o);
  auto got = c.Get("a");
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kTokenExpired);
  CHECK(got.status().message().find("refresh the credentials") != std::string::npos);
  CHECK(creds->invalidations() == o.retry.max_attempts);
}

TEST_CASE("testserver: injected errors, resets, truncation and corruption, every byte right") {
  ServerFixture f;
  std::vector<std::pair<std::string, std::string>> objects;
  for (int i = 0; i < 60; ++i) {
    objects.emplace_back("data/" + std::to_string(i) + ".bin", Content(1000 + i * 3000, i));
    f.WriteFile(objects.back().first, objects.back().second);
  }
  auto args = AuthArgs();
  args.insert(args.end(), {"--error-rate", "0.15", "--error-kinds", "500,503,SlowDown,429",
                           "--reset-rate", "0.05", "--truncate-rate", "0.05", "--corrupt-rate",
                           "0.1", "--fault-ops", "get,head,list", "--seed", "42"});
  f.Start(args);
  ClientOptions o = OssOptions(f, "cn-hangzhou");
  o.retry.max_attempts = 12;
  o.retry.base_delay = std::chrono::milliseconds(5);
  o.retry.max_delay = std::chrono::milliseconds(100);
  ClientRig c(o);
  int pages = 0;
  auto listed = c.ListAll("data/", "", 7, &pages);
  REQUIRE(listed.ok());
  CHECK(listed->first.size() == objects.size());
  for (int round = 0; round < 3; ++round) {
    for (const auto& [key, data] : objects) {
      INFO(key);
      auto whole = c.Get(key);
      REQUIRE(whole.ok());
      CHECK(whole.value() == data);
      auto fixed = c.GetFixed(key, 0, std::nullopt, data.size());
      REQUIRE(fixed.ok());
      CHECK(fixed.value() == data);
      auto head = c.Head(key);
      REQUIRE(head.ok());
      CHECK(head->size == data.size());
    }
  }
  // The faults really happened, and the corrupted bodies were caught by the CRC check.
  CHECK(f.Stat("faults.error") > 0);
  CHECK(f.Stat("faults.corrupt") > 0);
  CHECK(f.Stat("faults.truncate") + f.Stat("faults.reset") > 0);
}

TEST_CASE("testserver: data endpoint with its own signing region, and fallback") {
  ServerFixture f;
  f.WriteFile("img.jpg", "jpeg-bytes");
  f.Start(AuthArgs("cn-hangzhou"));
  // The "accelerator": a second server over the same tree, scoped to a zone.
  auto acc = testserver::TestServerProcess::Start(
      {"--root", f.root(), "--bucket", "bkt", "--auth", "on", "--access-key-id", kAk,
       "--access-key-secret", kSecret, "--region", "cn-hangzhou-j"});
  REQUIRE(acc.ok());
  ClientOptions o = OssOptions(f, "cn-hangzhou");
  o.data_endpoint = "http://127.0.0.1:" + std::to_string(acc.value()->port());
  o.data_signing_region = "cn-hangzhou-j";
  {
    ClientRig c(o);
    CHECK(c.Get("img.jpg").value() == "jpeg-bytes");
    CHECK(c.Head("img.jpg")->size == 10);
    CHECK(c.List(ListRequest{}).ok());  // listing goes to the main endpoint
  }
  CHECK(f.Stat("GET") == 0);
  CHECK(f.Stat("LIST") == 1);

  // An unreachable accelerator: GETs fall back to the main endpoint.
  int dead = FreePort();
  o.data_endpoint = "http://127.0.0.1:" + std::to_string(dead);
  ClientRig c(o);
  CHECK(c.Get("img.jpg").value() == "jpeg-bytes");
  CHECK(f.Stat("GET") == 1);
}
