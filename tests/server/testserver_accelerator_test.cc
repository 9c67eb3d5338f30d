// Accelerator mode (--origin): the cache and its single flight against a scripted origin, the
// origin reply's translation into a held object, per-object GET counts, and end to end an
// accelerator process in front of an origin process (signed requests, hits costing the origin
// nothing, headers kept, ranges served from memory).
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "accelerator.h"
#include "object_get_counts.h"
#include "origin_client.h"
#include "testserver_fixture.h"

using namespace ossmount::testserver;

namespace {

// An origin whose fetches complete only when the test says so.
class ScriptedOrigin : public OriginFetcher {
 public:
  void Fetch(const std::string& bucket, const std::string& key,
             std::function<void(ossmount::Result<OriginReply>)> done) override {
    fetched.push_back(bucket + "/" + key);
    pending.push_back(std::move(done));
  }
  // Completes the oldest pending fetch.
  void Answer(ossmount::Result<OriginReply> reply) {
    REQUIRE(!pending.empty());
    auto done = std::move(pending.front());
    pending.erase(pending.begin());
    done(std::move(reply));
  }
  std::vector<std::string> fetched;
  std::vector<std::function<void(ossmount::Result<OriginReply>)>> pending;
};

OriginReply OkReply(const std::string& body, const std::string& etag = "\"ETAG1\"") {
  OriginReply r;
  r.status = 200;
  r.headers = {{"ETag", etag},
               {"Content-Length", std::to_string(body.size())},
               {"x-oss-hash-crc64ecma", std::to_string(CrcOf(body))},
               {"Last-Modified", "Wed, 01 Mar 2023 10:00:00 GMT"},
               {"Content-Type", "image/jpeg"},
               {"x-oss-meta-Label", "cat"}};
  r.body = body;
  return r;
}

// Collects what Get's callbacks received.
struct Got {
  std::vector<ossmount::Result<ObjectPtr>> results;
  Accelerator::Done Sink() {
    return [this](ossmount::Result<ObjectPtr> r) { results.push_back(std::move(r)); };
  }
};

}  // namespace

TEST_CASE("Accelerator merges concurrent misses of one object into one origin fetch",
          "[accelerator]") {
  ScriptedOrigin origin;
  Accelerator acc(origin, 1 << 20);
  Got got;
  acc.Get("bkt", "a.jpg", "", got.Sink());
  acc.Get("bkt", "a.jpg", "", got.Sink());
  acc.Get("bkt", "a.jpg", "", got.Sink());
  acc.Get("bkt", "b.jpg", "", got.Sink());
  CHECK(origin.fetched == std::vector<std::string>{"bkt/a.jpg", "bkt/b.jpg"});
  CHECK(got.results.empty());  // nobody is answered before the origin is

  origin.Answer(OkReply("hello"));
  REQUIRE(got.results.size() == 3);
  for (const auto& r : got.results) {
    REQUIRE(r.ok());
    REQUIRE(r.value());
    CHECK(*r.value()->blob == "hello");
  }
  auto c = acc.counts();
  CHECK(c.misses == 2);
  CHECK(c.merged == 2);
  CHECK(c.hits == 0);
  CHECK(c.cached_objects == 1);
  CHECK(c.cached_bytes == 5);

  // Held now: answered inline, the origin is not asked again.
  acc.Get("bkt", "a.jpg", "", got.Sink());
  CHECK(got.results.size() == 4);
  CHECK(origin.fetched.size() == 2);
  CHECK(acc.counts().hits == 1);
}

TEST_CASE("Accelerator does not remember origin failures or missing keys", "[accelerator]") {
  ScriptedOrigin origin;
  Accelerator acc(origin, 1 << 20);
  Got got;
  acc.Get("bkt", "gone", "", got.Sink());
  OriginReply missing;
  missing.status = 404;
  origin.Answer(missing);
  REQUIRE(got.results.size() == 1);
  REQUIRE(got.results[0].ok());
  CHECK(got.results[0].value() == nullptr);

  acc.Get("bkt", "gone", "", got.Sink());
  CHECK(origin.fetched.size() == 2);  // asked again: a 404 is not cached
  origin.Answer(ossmount::Status(ossmount::ErrorCode::kNetwork, "connection refused"));
  REQUIRE(got.results.size() == 2);
  CHECK(!got.results[1].ok());

  acc.Get("bkt", "gone", "", got.Sink());
  OriginReply busy;
  busy.status = 503;
  origin.Answer(busy);
  REQUIRE(got.results.size() == 3);
  CHECK(!got.results[2].ok());
  CHECK(origin.fetched.size() == 3);
  auto c = acc.counts();
  CHECK(c.origin_missing == 1);
  CHECK(c.origin_errors == 2);
  CHECK(c.cached_objects == 0);
}

TEST_CASE("Accelerator fetches again when If-Match names another ETag", "[accelerator]") {
  ScriptedOrigin origin;
  Accelerator acc(origin, 1 << 20);
  Got got;
  acc.Get("bkt", "k", "", got.Sink());
  origin.Answer(OkReply("old", "\"E1\""));
  acc.Get("bkt", "k", "\"E1\"", got.Sink());
  CHECK(origin.fetched.size() == 1);  // the held ETag matches
  acc.Get("bkt", "k", "\"E2\"", got.Sink());
  CHECK(origin.fetched.size() == 2);  // the client knows a newer version
  origin.Answer(OkReply("newer", "\"E2\""));
  REQUIRE(got.results.size() == 3);
  CHECK(got.results[2].value()->etag == "E2");
  auto c = acc.counts();
  CHECK(c.cached_objects == 1);
  CHECK(c.cached_bytes == 5);  // the old copy's bytes were given back
}

TEST_CASE("Accelerator serves but does not hold objects beyond its budget", "[accelerator]") {
  ScriptedOrigin origin;
  Accelerator acc(origin, 8);
  Got got;
  acc.Get("bkt", "small", "", got.Sink());
  origin.Answer(OkReply("12345"));
  acc.Get("bkt", "big", "", got.Sink());
  origin.Answer(OkReply("1234567890"));
  REQUIRE(got.results.size() == 2);
  CHECK(*got.results[1].value()->blob == "1234567890");
  auto c = acc.counts();
  CHECK(c.uncached == 1);
  CHECK(c.cached_bytes == 5);
  acc.Get("bkt", "big", "", got.Sink());
  CHECK(origin.fetched.size() == 3);

  acc.Drop();
  acc.Get("bkt", "small", "", got.Sink());
  CHECK(origin.fetched.size() == 4);  // a dropped cache is cold
}

TEST_CASE("ObjectFromOriginReply keeps the origin's ETag, CRC-64, time and metadata",
          "[accelerator]") {
  auto obj = ObjectFromOriginReply("x/y.jpg", OkReply("bytes", "\"ABC\""));
  REQUIRE(obj.ok());
  const ObjectInfo& o = *obj.value();
  CHECK(o.etag == "ABC");
  CHECK(o.size == 5);
  CHECK(o.known_crc == CrcOf("bytes"));
  CHECK(o.content_type == "image/jpeg");
  CHECK(std::chrono::system_clock::to_time_t(o.mtime) == 1677664800);
  REQUIRE(o.user_meta.size() == 1);
  CHECK(o.user_meta[0] == std::make_pair(std::string("label"), std::string("cat")));

  OriginReply bad_crc = OkReply("bytes");
  bad_crc.body = "BYTES";
  CHECK(ObjectFromOriginReply("k", bad_crc).status().code() == ossmount::ErrorCode::kIntegrity);
  OriginReply no_etag = OkReply("bytes");
  no_etag.headers.erase(no_etag.headers.begin());
  CHECK(ObjectFromOriginReply("k", no_etag).status().code() == ossmount::ErrorCode::kProtocol);
  OriginReply short_body = OkReply("bytes");
  short_body.headers[1].second = "9";
  CHECK(!ObjectFromOriginReply("k", short_body).ok());
}

TEST_CASE("ParseOriginUrl takes http://HOST:PORT only", "[accelerator]") {
  auto ok = ParseOriginUrl("http://10.213.0.1:9000/");
  REQUIRE(ok.ok());
  CHECK(ok.value().first == "10.213.0.1");
  CHECK(ok.value().second == 9000);
  for (const char* bad : {"https://h:1", "http://h", "http://h:0", "http://h:99999", "h:80",
                          "http://h:80/bucket", "http://:80"}) {
    INFO(bad);
    CHECK(!ParseOriginUrl(bad).ok());
  }
}

TEST_CASE("ObjectGetCounts counts GETs per object and reports the most", "[accelerator]") {
  ObjectGetCounts counts;
  counts.Count("b", "a");
  counts.Count("b", "a");
  counts.Count("b", "q\"uote");
  CHECK(counts.ToJson() ==
        "{\"objects\":2,\"gets\":3,\"max\":2,"
        "\"keys\":{\"b/a\":2,\"b/q\\\"uote\":1}}");
  counts.Reset();
  CHECK(counts.Snapshot().empty());
}

namespace {
// A JSON number field of a flat control answer.
uint64_t JsonField(const std::string& body, const std::string& name) {
  auto at = body.find("\"" + name + "\":");
  REQUIRE(at != std::string::npos);
  return std::stoull(body.substr(at + name.size() + 3));
}
}  // namespace

TEST_CASE("An accelerator process serves from memory what it fetched once from the origin",
          "[accelerator]") {
  ServerFixture origin;
  const std::string data = RandomBytes(300 * 1024, 7);
  origin.WriteFile("train/c/img.jpg", data);
  origin.Start({"--auth", "on", "--access-key-id", "AK", "--access-key-secret", "SK"});

  ServerFixture accel;
  accel.Start({"--auth", "off", "--access-key-id", "AK", "--access-key-secret", "SK", "--origin",
               "http://127.0.0.1:" + std::to_string(origin.server().port())});

  auto first = accel.client().Request("GET", "/bkt/train/c/img.jpg");
  REQUIRE(first.status == 200);
  CHECK(first.body == data);
  auto direct = origin.client().Request(
      "HEAD", "/bkt/train/c/img.jpg",
      {{"Authorization", "OSS AK:wrong"}, {"Date", "Wed, 01 Mar 2023 10:00:00 GMT"}});
  CHECK(direct.status == 403);  // the origin does check signatures: the accelerator signed
  auto range =
      accel.client().Request("GET", "/bkt/train/c/img.jpg",
                             {{"Range", "bytes=1000-1999"}, {"x-oss-range-behavior", "standard"}});
  REQUIRE(range.status == 206);
  CHECK(range.body == data.substr(1000, 1000));
  auto head = accel.client().Request("HEAD", "/bkt/train/c/img.jpg");
  REQUIRE(head.status == 200);
  CHECK(head.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(data)));
  CHECK(head.Header("ETag") == first.Header("ETag"));
  auto stale = accel.client().Request("GET", "/bkt/train/c/img.jpg",
                                      {{"If-Match", "\"0123456789ABCDEF0123456789ABCDEF\""}});
  CHECK(stale.status == 412);  // fetched again, and the origin's object does not match either

  HttpTestClient origin_control(origin.server().port());
  auto gets = origin_control.Request("GET", "/_ossmount/object-gets");
  REQUIRE(gets.status == 200);
  CHECK(JsonField(gets.body, "bkt/train/c/img.jpg") == 2);  // the first GET and the If-Match
  CHECK(JsonField(gets.body, "objects") == 1);

  HttpTestClient accel_control(accel.server().port());
  auto counts = accel_control.Request("GET", "/_ossmount/accelerator");
  REQUIRE(counts.status == 200);
  CHECK(JsonField(counts.body, "misses") == 2);
  CHECK(JsonField(counts.body, "hits") == 2);
  CHECK(JsonField(counts.body, "cached_bytes") == data.size());

  auto missing = accel.client().Request("GET", "/bkt/no/such.jpg");
  CHECK(missing.status == 404);
  auto list = accel.client().Request("GET", "/bkt/?list-type=2");
  CHECK(list.status == 501);  // listings belong to the origin
}

TEST_CASE("An accelerator whose signature the origin refuses answers 503, not stale bytes",
          "[accelerator]") {
  ServerFixture origin;
  origin.WriteFile("k.bin", "payload");
  origin.Start({"--auth", "on", "--access-key-id", "AK", "--access-key-secret", "SK"});
  ServerFixture accel;
  accel.Start({"--auth", "off", "--access-key-id", "AK", "--access-key-secret", "WRONG", "--origin",
               "http://127.0.0.1:" + std::to_string(origin.server().port())});
  auto r = accel.client().Request("GET", "/bkt/k.bin");
  CHECK(r.status == 503);
  CHECK(origin.Stat("auth_failures") == 1);
  HttpTestClient accel_control(accel.server().port());
  auto counts = accel_control.Request("GET", "/_ossmount/accelerator");
  CHECK(JsonField(counts.body, "origin_errors") == 1);
  CHECK(JsonField(counts.body, "cached_objects") == 0);
}
