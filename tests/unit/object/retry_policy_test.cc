// Retry timing bounds, proven one by one: full jitter keeps every wait within
// [0, min(base * 2^n, max_delay)); the production clock's jitter is uniform in [0, 1) and
// really random; Retry-After (seconds or HTTP date) lengthens a wait but never shortens
// one; the retry loop counts what it absorbed (RetryStats); an oversized XML reply is
// refused without a retry.
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <set>

#include "object/clock.h"
#include "object/retry_policy.h"
#include "unit/object/harness.h"

using namespace ossmount;
using namespace ossmount::object;
using namespace ossmount::object::testing;
using ms = std::chrono::milliseconds;

TEST_CASE("Backoff bounds: every wait is within 0 and min(base times 2 to the n, max_delay)") {
  RetryOptions r;
  r.base_delay = ms(200);
  r.max_delay = ms(20000);
  for (int n = 0; n < 80; ++n) {  // far past the point where 2^n overflows an int64
    int64_t cap = std::min<int64_t>(r.max_delay.count(), n < 40 ? (200LL << n) : INT64_MAX);
    INFO("retry " << n);
    CHECK(BackoffDelay(r, n, 0.0).count() == 0);
    for (double j : {0.001, 0.25, 0.5, 0.999999}) {
      int64_t d = BackoffDelay(r, n, j).count();
      CHECK(d >= 0);
      CHECK(d < cap);
      CHECK(d == static_cast<int64_t>(static_cast<double>(cap) * j));
    }
  }
  // Out-of-range jitter is clamped, never a wait past the cap.
  CHECK(BackoffDelay(r, 3, 7.0).count() == 1600);
  CHECK(BackoffDelay(r, 3, -1.0).count() == 0);
}

TEST_CASE("The production clock's jitter is uniform in 0..1 and not constant") {
  boost::asio::io_context io;
  auto clock = MakeAsioClock(io);
  constexpr int kDraws = 20000;
  double sum = 0;
  int buckets[10] = {};
  std::set<double> distinct;
  for (int i = 0; i < kDraws; ++i) {
    double j = clock->Jitter();
    REQUIRE(j >= 0.0);
    REQUIRE(j < 1.0);
    sum += j;
    ++buckets[static_cast<int>(j * 10)];
    distinct.insert(j);
  }
  CHECK(distinct.size() > kDraws * 9 / 10);
  CHECK(sum / kDraws == Approx(0.5).margin(0.02));
  for (int b : buckets) CHECK(b == Approx(kDraws / 10).epsilon(0.1));  // each decile ~10%
}

TEST_CASE("Retry-After parsing: delta seconds, HTTP dates, junk") {
  SystemTime now = SystemTime(std::chrono::seconds(1702743657));  // Sat, 16 Dec 2023 16:20:57
  auto parse = [&](std::string v) {
    return ParseRetryAfter(http::HeaderList{{"retry-after", std::move(v)}}, now);
  };
  CHECK(parse("0") == ms(0));
  CHECK(parse("3") == ms(3000));
  CHECK(parse("999999999") == ms(86400LL * 1000));  // clamped; the budget bounds it anyway
  CHECK(parse("Sat, 16 Dec 2023 16:21:07 GMT") == ms(10000));
  CHECK(parse("Sat, 16 Dec 2023 16:00:00 GMT") == ms(0));  // in the past
  CHECK_FALSE(parse("soon").has_value());
  CHECK_FALSE(parse("-5").has_value());
  CHECK_FALSE(parse("").has_value());
  CHECK_FALSE(ParseRetryAfter(http::HeaderList{}, now).has_value());
}

TEST_CASE("A Retry-After shorter than the backoff does not shorten the wait") {
  Harness h;
  h.options.retry.base_delay = ms(1000);
  h.clock->jitter = 0.9;  // backoff 900 ms
  h.executor->respond = [](const SeenRequest&, int i) {
    if (i == 0) return FakeReply::Error(503, "SlowDown", {{"Retry-After", "0"}});
    return GoodGet();
  };
  std::vector<char> out;
  GetRequest req;
  req.key = "k";
  REQUIRE(h.Get(req, GetTarget::Growable(&out)).ok());
  CHECK(h.clock->sleeps == std::vector<ms>{ms(900)});
  CHECK(h.Client().retry_stats().retry_after == 0);
}

TEST_CASE("Retry counters: each retry is counted by cause, Retry-After waits and give-ups") {
  Harness h;
  h.options.retry.max_attempts = 6;
  h.executor->respond = [](const SeenRequest&, int i) {
    switch (i) {
      case 0:
        return FakeReply::Error(503, "SlowDown", {{"Retry-After", "2"}});
      case 1:
        return FakeReply::Error(429, "");
      case 2:
        return FakeReply::Transport(ErrorCode::kNetwork);
      case 3:
        return FakeReply::Transport(ErrorCode::kTimeout);
      case 4: {
        FakeReply r = GoodGet();
        r.truncate_at = 3;
        return r;
      }
      default:
        return GoodGet();
    }
  };
  std::vector<char> out;
  GetRequest req;
  req.key = "k";
  REQUIRE(h.Get(req, GetTarget::Growable(&out)).ok());
  RetryStats s = h.Client().retry_stats();
  CHECK(s.retries == 5);
  CHECK(s.throttled == 2);
  CHECK(s.network == 1);
  CHECK(s.timeouts == 1);
  CHECK(s.integrity == 1);
  CHECK(s.server_errors == 0);
  CHECK(s.retry_after == 1);
  CHECK(s.gave_up == 0);
  CHECK(h.clock->sleeps.size() == 5);
  CHECK(h.clock->sleeps[0] == ms(2000));

  // An operation that runs out of attempts counts as given up; one that never retried not.
  h.executor->respond = [](const SeenRequest&, int) { return FakeReply::Error(500, "x"); };
  REQUIRE_FALSE(h.Get(req, GetTarget::Growable(&out)).ok());
  h.executor->respond = [](const SeenRequest&, int) { return FakeReply::Error(404, "NoSuchKey"); };
  REQUIRE_FALSE(h.Get(req, GetTarget::Growable(&out)).ok());
  s = h.Client().retry_stats();
  CHECK(s.retries == 5 + 5);
  CHECK(s.server_errors == 5);
  CHECK(s.gave_up == 1);
}

TEST_CASE("The retry budget ends retries: elapsed waits never pass it") {
  for (int budget_ms : {0, 150, 1000, 5000, 30000}) {
    INFO("budget " << budget_ms);
    Harness h;
    h.options.retry.max_attempts = 1000;
    h.options.retry.base_delay = ms(100);
    h.options.retry.max_delay = ms(2000);
    h.options.retry.total_budget = ms(budget_ms);
    h.clock->jitter = 0.99;
    h.executor->respond = [](const SeenRequest&, int) {
      return FakeReply::Transport(ErrorCode::kNetwork);
    };
    std::vector<char> out;
    GetRequest req;
    req.key = "k";
    auto got = h.Get(req, GetTarget::Growable(&out));
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == ErrorCode::kNetwork);  // EIO for the reader
    CHECK(got.status().ToErrno() == EIO);
    int64_t slept = 0;
    for (ms d : h.clock->sleeps) slept += d.count();
    CHECK(slept <= budget_ms);
    CHECK(h.executor->count() == h.clock->sleeps.size() + 1);
    CHECK(h.Client().retry_stats().gave_up == 1);
  }
}

TEST_CASE("A listing reply over the XML size limit is refused after one attempt") {
  Harness h;
  std::string huge = "<?xml version=\"1.0\"?><ListBucketResult><!--";
  huge.append(17u << 20, 'x');
  huge += "--></ListBucketResult>";
  h.executor->respond = [&](const SeenRequest&, int) { return FakeReply::Ok(huge); };
  ListRequest req;
  auto got = h.List(req);
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kProtocol);
  CHECK(got.status().message().find("larger than") != std::string::npos);
  CHECK(h.executor->count() == 1);
}
