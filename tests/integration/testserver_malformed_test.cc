// Malformed server responses (ossmount-testserver --malformed KIND) against the real client
// and FetchEngine: each one gives an error, or a retry that succeeds, never a crash, a hang
// or wrong bytes. tests/server/malformed.h describes the kinds.
#include <catch2/catch.hpp>

#include "client_rig.h"
#include "testserver_fixture.h"

using namespace ossmount;
using namespace ossmount::itest;
using ossmount::testserver::ServerFixture;

namespace {

const std::string kSmall = Content(100000, 11);
const std::string kLarge = Content(3 << 20, 12);

ClientOptions Options(ServerFixture& f) {
  ClientOptions o;
  o.protocol = Protocol::kOss;
  o.bucket = "bkt";
  o.endpoint = "http://127.0.0.1:" + std::to_string(f.server().port());
  o.region = "cn-hangzhou";
  o.credentials = std::make_shared<TestCredentials>("ak", "sk");
  o.retry.max_attempts = 3;
  o.retry.base_delay = std::chrono::milliseconds(5);
  o.retry.max_delay = std::chrono::milliseconds(20);
  return o;
}

struct Outcome {
  bool list_ok, get_ok, range_ok, get_no_if_match_ok;
};

// Runs a listing, a whole GET and a ranged GET (both with If-Match, as the filesystem sends
// them) and a whole GET without If-Match. Every success must carry exactly the right bytes.
Outcome Exercise(ClientRig& c, const std::string& etag_small, const std::string& etag_large) {
  Outcome o{};
  ListRequest lr;
  auto listed = c.List(lr);
  if (listed.ok()) {
    REQUIRE(listed->objects.size() == 2);
    CHECK(listed->objects[0].key == "large.bin");
    CHECK(listed->objects[0].size == kLarge.size());
    CHECK(listed->objects[1].key == "small.bin");
  } else {
    INFO(listed.status().ToString());
    CHECK(listed.status().ToErrno() != 0);
  }
  o.list_ok = listed.ok();
  auto whole = c.Get("small.bin", 0, std::nullopt, nullptr, etag_small);
  if (whole.ok()) CHECK(whole.value() == kSmall);
  o.get_ok = whole.ok();
  auto range = c.Get("large.bin", 1 << 20, 1 << 20, nullptr, etag_large);
  if (range.ok()) CHECK(range.value() == kLarge.substr(1 << 20, 1 << 20));
  o.range_ok = range.ok();
  auto plain = c.Get("small.bin");
  if (plain.ok()) CHECK(plain.value() == kSmall);
  o.get_no_if_match_ok = plain.ok();
  return o;
}

}  // namespace

TEST_CASE("testserver malformed: every kind gives an error or the right bytes") {
  struct Case {
    const char* kind;
    bool list_ok, get_ok, range_ok, get_no_if_match_ok;
  } cases[] = {
      // XML kinds break listings only (object bodies are not XML).
      {"invalid-xml", false, true, true, true},
      {"truncated-xml", false, true, true, true},
      {"huge-xml", false, true, true, true},
      // An HTML page with 200: the listing does not parse, a GET reply has no ETag.
      {"html-200", false, false, false, false},
      // Fewer bytes than sent (the CRC catches the short whole body; the range is short of
      // its Content-Range) or more declared than sent (a short body).
      // Listings get the same treatment: a cut XML body or a short body, an error.
      {"short-content-length", false, false, false, false},
      {"long-content-length", false, false, false, false},
      // No ETag, CRC or Content-Length on GET: not recognisably the object, an error.
      {"missing-headers", true, false, false, false},
      // A wrong CRC fails whole-object reads; ranges carry no whole-object CRC check.
      {"wrong-crc", true, false, true, false},
  };
  for (const auto& k : cases) {
    DYNAMIC_SECTION(k.kind) {
      ServerFixture f;
      f.WriteFile("small.bin", kSmall);
      f.WriteFile("large.bin", kLarge);
      f.Start({"--auth", "off", "--fault-ops", "get,list", "--malformed", k.kind});
      std::string etag_small, etag_large;
      {
        // The etags, from a clean server over the same tree.
        auto clean = testserver::TestServerProcess::Start(
            {"--root", f.root(), "--bucket", "bkt", "--auth", "off"});
        REQUIRE(clean.ok());
        ClientOptions o = Options(f);
        o.endpoint = "http://127.0.0.1:" + std::to_string((*clean)->port());
        ClientRig c(o);
        auto hs = c.Head("small.bin");
        auto hl = c.Head("large.bin");
        REQUIRE(hs.ok());
        REQUIRE(hl.ok());
        etag_small = hs->etag;
        etag_large = hl->etag;
      }
      ClientRig c(Options(f));
      Outcome o = Exercise(c, etag_small, etag_large);
      CHECK(o.list_ok == k.list_ok);
      CHECK(o.get_ok == k.get_ok);
      CHECK(o.range_ok == k.range_ok);
      CHECK(o.get_no_if_match_ok == k.get_no_if_match_ok);
      CHECK(f.Stat("faults.malformed") > 0);
      // The server is still fine, and so is the client: with the fault off, all works.
      testserver::HttpTestClient control(f.server().port());
      REQUIRE(control.Request("POST", "/_ossmount/faults?clear").status == 200);
      Outcome clean = Exercise(c, etag_small, etag_large);
      CHECK(clean.list_ok);
      CHECK(clean.get_ok);
      CHECK(clean.range_ok);
      CHECK(clean.get_no_if_match_ok);
    }
  }
}

TEST_CASE("testserver malformed: at a rate below 1, retries deliver the right bytes") {
  ServerFixture f;
  f.WriteFile("small.bin", kSmall);
  f.WriteFile("large.bin", kLarge);
  f.Start({"--auth", "off", "--fault-ops", "get", "--malformed",
           "wrong-crc,short-content-length,long-content-length", "--malformed-rate", "0.3",
           "--seed", "3"});
  ClientOptions o = Options(f);
  o.retry.max_attempts = 12;
  ClientRig c(o);
  for (int i = 0; i < 40; ++i) {
    auto got = c.Get("small.bin");
    REQUIRE(got.ok());
    CHECK(got.value() == kSmall);
  }
  CHECK(f.Stat("faults.malformed") > 0);
  CHECK(c.client().retry_stats().retries > 0);
  CHECK(c.client().retry_stats().gave_up == 0);
}
