// Each fault kind is observable from a client, and counted in stats. Time-based checks are
// lower bounds only (an injected delay can never make a request faster), never thresholds.
#include <chrono>

#include "testserver_fixture.h"

using namespace ossmount::testserver;
using Clock = std::chrono::steady_clock;

namespace {
double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
}  // namespace

TEST_CASE("error-rate injects SlowDown with Retry-After on GET only", "[faults]") {
  ServerFixture f;
  f.WriteFile("obj", "data");
  f.Start(
      {"--auth", "off", "--error-rate", "1", "--error-kinds", "SlowDown", "--retry-after", "3"});
  auto r = f.client().Request("GET", "/bkt/obj");
  REQUIRE(r.status == 503);
  CHECK(r.Header("Retry-After") == "3");
  pugi::xml_document doc;
  CHECK(std::string(ParseXml(doc, r.body).child_value("Code")) == "SlowDown");
  // HEAD and LIST are not in the default fault ops.
  CHECK(f.client().Request("HEAD", "/bkt/obj").status == 200);
  CHECK(f.client().Request("GET", "/bkt/?list-type=2").status == 200);
  CHECK(f.Stat("faults.error") == 1);
}

TEST_CASE("fault-ops all applies faults to HEAD and LIST, control API changes faults live",
          "[faults]") {
  ServerFixture f;
  f.WriteFile("obj", "data");
  f.Start({"--auth", "off", "--error-rate", "1", "--error-kinds", "500", "--fault-ops", "all"});
  auto& c = f.client();
  CHECK(c.Request("HEAD", "/bkt/obj").status == 500);
  CHECK(c.Request("GET", "/bkt/?list-type=2").status == 500);
  CHECK(c.Request("PUT", "/bkt/new", {}, "x").status == 500);
  CHECK(c.Request("GET", "/bkt/new", {}).status == 500);
  auto set = c.Request("POST", "/_ossmount/faults?clear&ttfb-ms=1");
  REQUIRE(set.status == 200);
  CHECK(set.body.find("\"error-rate\":0") != std::string::npos);
  CHECK(c.Request("GET", "/bkt/obj").status == 200);
  CHECK(c.Request("GET", "/bkt/new").status == 404);  // the faulted PUT did not happen
  CHECK(c.Request("POST", "/_ossmount/faults?error-rate=7").status == 400);
  CHECK(c.Request("POST", "/_ossmount/faults?bogus=1").status == 400);
}

TEST_CASE("reset-rate cuts the connection before or during the body", "[faults]") {
  ServerFixture f;
  std::string data = RandomBytes(200000, 7);
  f.WriteFile("obj", data);
  f.Start({"--auth", "off", "--reset-rate", "1"});
  int cut = 0;
  for (int i = 0; i < 10; ++i) {
    auto r = f.client().Request("GET", "/bkt/obj");
    CHECK_FALSE(r.error.empty());
    CHECK(r.body.size() < data.size());
    cut += !r.error.empty();
  }
  CHECK(cut == 10);
  CHECK(f.Stat("faults.reset") == 10);
  CHECK(f.client().connects() == 10);
}

TEST_CASE("truncate-rate sends fewer bytes than Content-Length, then closes", "[faults]") {
  ServerFixture f;
  std::string data = RandomBytes(100000, 8);
  f.WriteFile("obj", data);
  f.Start({"--auth", "off", "--truncate-rate", "1"});
  for (int i = 0; i < 5; ++i) {
    auto r = f.client().Request("GET", "/bkt/obj");
    REQUIRE(r.status == 200);
    CHECK(r.Header("Content-Length") == std::to_string(data.size()));
    CHECK_FALSE(r.error.empty());
    CHECK(r.body.size() < data.size());
    CHECK(r.body == data.substr(0, r.body.size()));  // what did arrive is correct
  }
  CHECK(f.Stat("faults.truncate") == 5);
}

TEST_CASE("corrupt-rate flips one body byte but keeps the true CRC header", "[faults]") {
  ServerFixture f;
  std::string data = RandomBytes(50000, 9);
  f.WriteFile("obj", data);
  f.Start({"--auth", "off", "--corrupt-rate", "1"});
  auto r = f.client().Request("GET", "/bkt/obj");
  REQUIRE(r.status == 200);
  REQUIRE(r.body.size() == data.size());
  int diffs = 0;
  for (size_t i = 0; i < data.size(); ++i) diffs += r.body[i] != data[i];
  CHECK(diffs == 1);
  CHECK(r.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(data)));
  CHECK(CrcOf(r.body) != CrcOf(data));
  // The cached copy is not damaged: the next clean read is exact.
  REQUIRE(f.client().Request("POST", "/_ossmount/faults?clear").status == 200);
  CHECK(f.client().Request("GET", "/bkt/obj").body == data);
}

TEST_CASE("corrupt-key flips a byte inside every ranged GET of matching keys only", "[faults]") {
  ServerFixture f;
  std::string data = RandomBytes(300000, 12);
  f.WriteFile("damaged/obj", data);
  f.WriteFile("fine/obj", data);
  f.Start({"--auth", "off", "--corrupt-key", "damaged/"});
  const std::pair<std::string, std::string> standard{"x-oss-range-behavior", "standard"};
  for (int attempt = 0; attempt < 2; ++attempt) {  // every time: a retry gets it again
    auto r = f.client().Request("GET", "/bkt/damaged/obj", {{"Range", "bytes=1000-100999"}});
    REQUIRE(r.status == 206);
    REQUIRE(r.body.size() == 100000);
    const std::string want = data.substr(1000, 100000);
    int diffs = 0;
    for (size_t i = 0; i < want.size(); ++i) diffs += r.body[i] != want[i];
    CHECK(diffs == 1);
    CHECK(r.body[50000] != want[50000]);  // in the middle of the range
    // The headers are those of the intact object: the whole object's CRC-64.
    CHECK(r.Header("Content-Range") == "bytes 1000-100999/300000");
    CHECK(r.Header("x-oss-hash-crc64ecma") == std::to_string(CrcOf(data)));
  }
  // Other keys' ranges, and whole-object GETs of the key, are intact.
  CHECK(f.client().Request("GET", "/bkt/fine/obj", {{"Range", "bytes=1000-100999"}}).body ==
        data.substr(1000, 100000));
  CHECK(f.client().Request("GET", "/bkt/damaged/obj").body == data);
  CHECK(f.Stat("faults.corrupt") == 2);
  // Off through the control API.
  REQUIRE(f.client().Request("POST", "/_ossmount/faults?corrupt-key=").status == 200);
  CHECK(f.client().Request("GET", "/bkt/damaged/obj", {{"Range", "bytes=0-9"}, standard}).body ==
        data.substr(0, 10));
}

TEST_CASE("stall-rate pauses mid-body for stall-ms, then completes", "[faults]") {
  ServerFixture f;
  std::string data = RandomBytes(300000, 10);
  f.WriteFile("obj", data);
  f.Start({"--auth", "off", "--stall-rate", "1", "--stall-ms", "800"});
  auto t = Clock::now();
  auto r = f.client().Request("GET", "/bkt/obj");
  CHECK(SecondsSince(t) >= 0.75);
  REQUIRE(r.status == 200);
  CHECK(r.error.empty());
  CHECK(r.body == data);
  CHECK(f.Stat("faults.stall") == 1);
}

TEST_CASE("ttfb-ms delays every object-API request, bandwidth-mbps paces bodies", "[faults]") {
  ServerFixture f;
  std::string data = RandomBytes(250000, 11);
  f.WriteFile("obj", data);
  f.Start({"--auth", "off", "--ttfb-ms", "300"});
  auto t = Clock::now();
  CHECK(f.client().Request("HEAD", "/bkt/obj").status == 200);
  CHECK(f.client().Request("GET", "/bkt/?list-type=2").status == 200);
  CHECK(SecondsSince(t) >= 0.59);
  CHECK(f.Stat("faults.delayed") == 2);

  // 4 Mbit/s = 500 kB/s: 250 kB take at least ~0.5 s.
  REQUIRE(f.client().Request("POST", "/_ossmount/faults?clear&bandwidth-mbps=4").status == 200);
  t = Clock::now();
  auto r = f.client().Request("GET", "/bkt/obj");
  CHECK(SecondsSince(t) >= 0.45);
  CHECK(r.body == data);
}

TEST_CASE("Faults are reproducible with --seed", "[faults]") {
  ServerFixture f;
  f.WriteFile("obj", "data");
  auto run = [&](const std::string& seed) {
    f.Start({"--auth", "off", "--error-rate", "0.5", "--error-kinds", "500,503", "--seed", seed});
    std::string statuses;
    for (int i = 0; i < 40; ++i)
      statuses += std::to_string(f.client().Request("GET", "/bkt/obj").status) + ",";
    return statuses;
  };
  std::string a = run("11"), b = run("11"), c = run("12");
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a.find("200") != std::string::npos);
  CHECK(a.find("500") != std::string::npos);
}
