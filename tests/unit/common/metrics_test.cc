// The metrics registry: identity of series, histogram buckets and percentiles, expositions.
#include "common/metrics.h"

#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <thread>
#include <vector>

namespace ossmount::metrics {
namespace {

using namespace std::chrono_literals;
using Catch::Matchers::Contains;

TEST_CASE("metrics: the same name and labels give the same counter") {
  Registry r;
  Counter& a = r.GetCounter("x_total", "help", {{"type", "GET"}});
  Counter& b = r.GetCounter("x_total", "help", {{"type", "GET"}});
  Counter& c = r.GetCounter("x_total", "help", {{"type", "LIST"}});
  CHECK(&a == &b);
  CHECK(&a != &c);
  a.Add();
  b.Add(4);
  CHECK(a.Value() == 5);
  CHECK(c.Value() == 0);
}

TEST_CASE("metrics: counters are exact under concurrent adds") {
  Registry r;
  Counter& c = r.GetCounter("c_total", "h");
  Histogram& h = r.GetHistogram("h_seconds", "h");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) {
        c.Add();
        h.Observe(1ms);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(c.Value() == 400000);
  CHECK(h.Take().count == 400000);
}

TEST_CASE("metrics: histogram buckets are half-doublings of a microsecond") {
  CHECK(Histogram::BucketFor(0ns) == 0);
  CHECK(Histogram::BucketFor(1us) == 0);
  CHECK(Histogram::BucketFor(1001ns) == 1);
  CHECK(Histogram::BucketFor(2us) == 2);
  CHECK(Histogram::BucketFor(3us) == 4);  // 2.83 < 3 <= 4
  CHECK(Histogram::BucketFor(1024us) == 20);
  CHECK(Histogram::BucketFor(1025us) == 21);
  CHECK(Histogram::BucketFor(1h) == Histogram::kBuckets);
  // Every value lies at or below its bucket's bound and above the previous one.
  for (int64_t ns : {1500, 7000, 123456, 9999999, 250000000}) {
    int b = Histogram::BucketFor(std::chrono::nanoseconds(ns));
    CAPTURE(ns, b);
    CHECK(ns * 1e-9 <= Histogram::BucketBound(b) * (1 + 1e-12));
    CHECK(ns * 1e-9 > Histogram::BucketBound(b - 1) * (1 - 1e-12));
  }
}

TEST_CASE("metrics: percentiles are within one bucket of the truth") {
  Histogram h;
  // 1..1000 ms, uniformly: p50 = 500 ms, p90 = 900 ms, p99 = 990 ms.
  for (int i = 1; i <= 1000; ++i) h.Observe(std::chrono::milliseconds(i));
  auto s = h.Take();
  CHECK(s.count == 1000);
  CHECK(s.sum_seconds == Approx(500.5).epsilon(1e-6));
  for (auto [q, truth] : {std::pair{0.5, 0.5}, {0.9, 0.9}, {0.99, 0.99}}) {
    double got = s.Quantile(q);
    CAPTURE(q, got);
    CHECK(got <= truth * std::sqrt(2.0));
    CHECK(got >= truth / std::sqrt(2.0));
  }
  CHECK(Histogram().Take().Quantile(0.5) == 0);
}

TEST_CASE("metrics: Prometheus text has HELP, TYPE, cumulative buckets, sum and count") {
  Registry r;
  r.GetCounter("ossmount_requests_total", "Requests sent.", {{"type", "GET"}, {"outcome", "ok"}})
      .Add(3);
  r.GetGauge("ossmount_open_handles", "Open files.").Set(7);
  r.SetCallbackGauge("ossmount_memory_bytes", "Memory in use.", {}, [] { return 1024.0; });
  Histogram& h = r.GetHistogram("ossmount_request_duration_seconds", "Latency.", {{"type", "GET"}});
  h.Observe(3ms);
  h.Observe(100ms);
  std::string text = r.PrometheusText();
  CHECK_THAT(text, Contains("# HELP ossmount_requests_total Requests sent.\n"));
  CHECK_THAT(text, Contains("# TYPE ossmount_requests_total counter\n"));
  CHECK_THAT(text, Contains("ossmount_requests_total{type=\"GET\",outcome=\"ok\"} 3\n"));
  CHECK_THAT(text, Contains("# TYPE ossmount_open_handles gauge\nossmount_open_handles 7\n"));
  CHECK_THAT(text, Contains("ossmount_memory_bytes 1024\n"));
  CHECK_THAT(text, Contains("# TYPE ossmount_request_duration_seconds histogram\n"));
  CHECK_THAT(text,
             Contains("ossmount_request_duration_seconds_bucket{type=\"GET\",le=\"+Inf\"} 2\n"));
  CHECK_THAT(text, Contains("ossmount_request_duration_seconds_count{type=\"GET\"} 2\n"));
  CHECK_THAT(text, Contains("ossmount_request_duration_seconds_sum{type=\"GET\"} 0.103\n"));
  // Buckets are cumulative and never decrease.
  uint64_t last = 0;
  int buckets = 0;
  std::size_t pos = 0;
  while ((pos = text.find("_bucket{", pos)) != std::string::npos) {
    auto eol = text.find('\n', pos);
    uint64_t v = std::stoull(text.substr(text.rfind(' ', eol) + 1, eol));
    CHECK(v >= last);
    last = v;
    ++buckets;
    pos = eol;
  }
  CHECK(buckets == Histogram::kBuckets + 1);
  CHECK(last == 2);
}

TEST_CASE("metrics: label values are escaped") {
  Registry r;
  r.GetCounter("e_total", "h", {{"v", "a\"b\\c\nd"}}).Add();
  CHECK_THAT(r.PrometheusText(), Contains("e_total{v=\"a\\\"b\\\\c\\nd\"} 1"));
}

TEST_CASE("metrics: Json is valid and carries values and percentiles") {
  Registry r;
  r.GetCounter("c_total", "h", {{"type", "HEAD"}}).Add(2);
  r.GetGauge("g", "h").Set(-3);
  r.SetCallbackGauge("cb", "h", {{"k", "v"}}, [] { return 2.5; });
  r.GetHistogram("l_seconds", "h").Observe(10ms);
  rapidjson::Document doc;
  std::string json = r.Json();
  doc.Parse(json.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  REQUIRE(doc["counters"].Size() == 1);
  CHECK(std::string(doc["counters"][0]["labels"]["type"].GetString()) == "HEAD");
  CHECK(doc["counters"][0]["value"].GetUint64() == 2);
  REQUIRE(doc["gauges"].Size() == 2);
  CHECK(doc["gauges"][0]["value"].GetDouble() == 2.5);
  CHECK(doc["gauges"][1]["value"].GetInt() == -3);
  REQUIRE(doc["histograms"].Size() == 1);
  CHECK(doc["histograms"][0]["count"].GetUint64() == 1);
  double p50 = doc["histograms"][0]["p50"].GetDouble();
  CHECK(p50 > 0.005);
  CHECK(p50 <= 0.0142);
}

TEST_CASE("metrics: a removed callback gauge is no longer read") {
  Registry r;
  int calls = 0;
  r.SetCallbackGauge("cb", "h", {}, [&] { return double(++calls); });
  CHECK_THAT(r.PrometheusText(), Contains("cb 1"));
  r.RemoveCallbackGauge("cb", {});
  CHECK(r.PrometheusText().find("cb") == std::string::npos);
  CHECK(calls == 1);
}

}  // namespace
}  // namespace ossmount::metrics
