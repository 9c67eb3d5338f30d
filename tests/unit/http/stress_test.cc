// Many concurrent transfers of varied sizes on few io threads: every body arrives intact
// and every handler runs once. A lost socket readiness edge would show up here as a
// transfer stuck until the stall deadline.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "http/fetch_engine.h"
#include "unit/http/io_threads.h"
#include "unit/http/test_http_server.h"

namespace ossmount::http {
namespace {

using testing::Collector;
using testing::IoThreads;
using testing::Route;
using testing::TestHttpServer;

TEST_CASE("2000 transfers of varied sizes, 32 in flight, all intact", "[stress]") {
  constexpr int kObjects = 40;
  constexpr int kRequests = 2000;
  Collector collector;
  TestHttpServer server;
  std::mt19937 gen(7);
  std::vector<std::string> bodies(kObjects);
  for (int i = 0; i < kObjects; ++i) {
    size_t size = i == 0 ? 0 : std::uniform_int_distribution<size_t>(1, 400 * 1024)(gen);
    bodies[i].resize(size);
    for (char& c : bodies[i]) c = static_cast<char>(gen() & 0xff);
    Route route;
    route.body = bodies[i];
    server.SetRoute("/o/" + std::to_string(i), route);
  }
  IoThreads io(2);
  EngineOptions options;
  options.max_in_flight = 32;
  // A stuck transfer fails fast instead of hanging the test.
  options.timeouts.low_speed_time = std::chrono::seconds(5);
  std::vector<std::vector<char>> outs(kRequests);
  std::vector<int> object_of(kRequests);
  {
    FetchEngine engine(io.context(), options);
    for (int i = 0; i < kRequests; ++i) {
      object_of[i] = i % kObjects;
      const std::string& body = bodies[object_of[i]];
      Request request;
      request.url = server.Url("/o/" + std::to_string(object_of[i]));
      request.priority = static_cast<Priority>(i % 3);
      if (i % 2 == 0) {
        outs[i].resize(body.size());
        request.target = GetTarget::Fixed(outs[i].data(), outs[i].size());
      } else {
        request.target = GetTarget::Growable(&outs[i]);
      }
      engine.Execute(std::move(request), collector.Handler(i));
    }
    REQUIRE(collector.WaitForTotal(kRequests, std::chrono::seconds(240)));
    CHECK(engine.Stats().transport_errors == 0);
  }
  CHECK(server.max_concurrent() <= 32);
  CHECK(server.accepted_connections() <= 32);
  int bad = 0;
  for (int i = 0; i < kRequests; ++i) {
    Response r = collector.response(i);
    const std::string& body = bodies[object_of[i]];
    bool good = collector.calls(i) == 1 && r.transport.ok() && r.status == 200 &&
                r.body_bytes == body.size() &&
                std::string(outs[i].begin(), outs[i].begin() + r.body_bytes) == body;
    if (!good) {
      ++bad;
      UNSCOPED_INFO("request " << i << ": " << r.transport.ToString());
    }
  }
  CHECK(bad == 0);
}

}  // namespace
}  // namespace ossmount::http
