// The retry matrix: every retryable failure kind on attempts 1..N-1 then success gives the
// right bytes; N failures give the error; non-retryable failures end at once; the budget,
// Retry-After, clock-skew correction and credential refresh behave as promised.
#include <catch2/catch.hpp>

#include "unit/object/harness.h"

using namespace ossmount;
using namespace ossmount::object;
using namespace ossmount::object::testing;

namespace {

struct Failure {
  const char* name;
  std::function<FakeReply()> reply;
  ErrorCode final_code;  // what the caller sees once attempts run out
};

std::vector<Failure> RetryableFailures() {
  return {
      {"connection refused", [] { return FakeReply::Transport(ErrorCode::kNetwork); },
       ErrorCode::kNetwork},
      {"stall timeout", [] { return FakeReply::Transport(ErrorCode::kTimeout); },
       ErrorCode::kTimeout},
      {"HTTP 500", [] { return FakeReply::Error(500, "InternalError"); }, ErrorCode::kServerError},
      {"HTTP 502 no body", [] { return FakeReply::Error(502, ""); }, ErrorCode::kServerError},
      {"HTTP 503 SlowDown", [] { return FakeReply::Error(503, "SlowDown"); },
       ErrorCode::kThrottled},
      {"QpsLimitExceeded", [] { return FakeReply::Error(503, "QpsLimitExceeded"); },
       ErrorCode::kThrottled},
      {"HTTP 429", [] { return FakeReply::Error(429, ""); }, ErrorCode::kThrottled},
      {"HTTP 408", [] { return FakeReply::Error(408, ""); }, ErrorCode::kTimeout},
      {"short body",
       [] {
         FakeReply r = GoodGet();
         r.truncate_at = 10;
         return r;
       },
       ErrorCode::kIntegrity},
      {"short body with a clean close",
       [] {
         FakeReply r = GoodGet();
         r.body.resize(10);  // Content-Length says more than arrived
         return r;
       },
       ErrorCode::kIntegrity},
      {"CRC mismatch",
       [] {
         FakeReply r = GoodGet();
         r.body[3] ^= 0x20;  // same length, one flipped bit
         return r;
       },
       ErrorCode::kIntegrity},
  };
}

}  // namespace

TEST_CASE("Retry matrix: k failures then success returns the right bytes") {
  for (const Failure& f : RetryableFailures()) {
    for (int failures = 0; failures < 5; ++failures) {
      INFO(f.name << ", failures " << failures);
      Harness h;
      h.executor->respond = [&](const SeenRequest&, int i) {
        return i < failures ? f.reply() : GoodGet();
      };
      std::vector<char> out;
      GetRequest req;
      req.key = "k";
      auto got = h.Get(req, GetTarget::Growable(&out));
      REQUIRE(got.ok());
      CHECK(std::string(out.begin(), out.end()) == kGoodBody);
      CHECK(got->bytes == kGoodBody.size());
      CHECK(got->object_size == kGoodBody.size());
      CHECK(got->etag == "\"e1\"");
      CHECK(got->mtime_sec == 1646361985);
      CHECK(h.executor->count() == static_cast<size_t>(failures + 1));
      CHECK(h.clock->sleeps.size() == static_cast<size_t>(failures));
      CHECK(h.creds->gets == failures + 1);  // fresh credentials for every attempt
    }
  }
}

TEST_CASE("Retry matrix: failing every attempt returns the error, no bytes") {
  for (const Failure& f : RetryableFailures()) {
    INFO(f.name);
    Harness h;
    h.executor->respond = [&](const SeenRequest&, int) { return f.reply(); };
    std::vector<char> out;
    GetRequest req;
    req.key = "k";
    auto got = h.Get(req, GetTarget::Growable(&out));
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == f.final_code);
    CHECK(got.status().retryable());
    CHECK(got.status().message().find("after 5 attempts") != std::string::npos);
    CHECK(h.executor->count() == 5);
    CHECK(out.empty());
  }
}

TEST_CASE("Backoff: full jitter, doubling from base_delay, capped at max_delay") {
  Harness h;
  h.options.retry.max_attempts = 6;
  h.options.retry.base_delay = std::chrono::milliseconds(100);
  h.options.retry.max_delay = std::chrono::milliseconds(500);
  h.clock->jitter = 0.5;
  h.executor->respond = [](const SeenRequest&, int) { return FakeReply::Error(500, ""); };
  std::vector<char> out;
  GetRequest req;
  req.key = "k";
  REQUIRE_FALSE(h.Get(req, GetTarget::Growable(&out)).ok());
  using ms = std::chrono::milliseconds;
  CHECK(h.clock->sleeps == std::vector<ms>{ms(50), ms(100), ms(200), ms(250), ms(250)});
}

TEST_CASE("Non-retryable errors end after one attempt") {
  struct Case {
    long status;
    const char* code;
    ErrorCode expect;
  } cases[] = {{404, "NoSuchKey", ErrorCode::kNotFound},
               {404, "NoSuchBucket", ErrorCode::kNoSuchBucket},
               {403, "AccessDenied", ErrorCode::kAccessDenied},
               {403, "SignatureDoesNotMatch", ErrorCode::kSignatureDoesNotMatch},
               {403, "InvalidAccessKeyId", ErrorCode::kInvalidAccessKeyId},
               {412, "PreconditionFailed", ErrorCode::kPreconditionFailed},
               {416, "InvalidRange", ErrorCode::kInvalidRange},
               {400, "InvalidArgument", ErrorCode::kInvalidArgument}};
  for (const auto& c : cases) {
    INFO(c.code);
    Harness h;
    h.executor->respond = [&](const SeenRequest&, int) {
      return FakeReply::Error(c.status, c.code);
    };
    std::vector<char> out;
    GetRequest req;
    req.key = "k";
    auto got = h.Get(req, GetTarget::Growable(&out));
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == c.expect);
    CHECK_FALSE(got.status().retryable());
    CHECK(h.executor->count() == 1);
    CHECK(h.clock->sleeps.empty());
    CHECK(got.status().service().request_id == "RID-1");
  }
}

TEST_CASE("The total budget stops retries before max_attempts, keeping the last error") {
  Harness h;
  h.options.retry.max_attempts = 10;
  h.options.retry.base_delay = std::chrono::milliseconds(1000);
  h.options.retry.max_delay = std::chrono::milliseconds(1000);
  h.options.retry.total_budget = std::chrono::milliseconds(2500);
  h.clock->jitter = 0.9;  // 900 ms per wait: two waits fit, the third does not
  h.executor->respond = [](const SeenRequest&, int) { return FakeReply::Error(503, "SlowDown"); };
  std::vector<char> out;
  GetRequest req;
  req.key = "k";
  auto got = h.Get(req, GetTarget::Growable(&out));
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kThrottled);
  CHECK(got.status().retryable());
  CHECK(got.status().message().find("retry budget") != std::string::npos);
  CHECK(got.status().message().find("SlowDown") != std::string::npos);
  CHECK(got.status().service().code == "SlowDown");
  CHECK(h.executor->count() == 3);
  CHECK(h.clock->sleeps.size() == 2);
}

TEST_CASE("Retry-After is honoured through the sleeper") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int i) {
    if (i == 0) return FakeReply::Error(503, "SlowDown", {{"Retry-After", "7"}});
    return GoodGet();
  };
  std::vector<char> out;
  GetRequest req;
  req.key = "k";
  REQUIRE(h.Get(req, GetTarget::Growable(&out)).ok());
  REQUIRE(h.clock->sleeps.size() == 1);
  CHECK(h.clock->sleeps[0] == std::chrono::milliseconds(7000));
}

TEST_CASE("A Retry-After past the budget gives up instead of waiting") {
  Harness h;
  h.options.retry.total_budget = std::chrono::milliseconds(5000);
  h.executor->respond = [](const SeenRequest&, int) {
    return FakeReply::Error(429, "", {{"Retry-After", "60"}});
  };
  std::vector<char> out;
  GetRequest req;
  req.key = "k";
  auto got = h.Get(req, GetTarget::Growable(&out));
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kThrottled);
  CHECK(got.status().message().find("retry budget") != std::string::npos);
  CHECK(h.executor->count() == 1);
  CHECK(h.clock->sleeps.empty());
}

TEST_CASE("RequestTimeTooSkewed: the server's Date sets a clock offset, then success") {
  Harness h;
  // Local fake time is 2023-12-16T16:20:57Z; the server is one hour ahead.
  h.executor->respond = [](const SeenRequest&, int i) {
    if (i == 0) {
      return FakeReply::Error(403, "RequestTimeTooSkewed",
                              {{"Date", "Sat, 16 Dec 2023 17:20:57 GMT"}});
    }
    return GoodGet();
  };
  std::vector<char> out;
  GetRequest req;
  req.key = "k";
  REQUIRE(h.Get(req, GetTarget::Growable(&out)).ok());
  auto signed_requests = h.signer->signed_requests();
  REQUIRE(signed_requests.size() == 2);
  int64_t t0 = signed_requests[0].unix_time;
  CHECK(signed_requests[1].unix_time - t0 >= 3600);
  CHECK(signed_requests[1].unix_time - t0 < 3660);
  // Later requests keep the correction.
  REQUIRE(h.Get(req, GetTarget::Growable(&out)).ok());
  CHECK(h.signer->signed_requests()[2].unix_time - t0 >= 3600);
}

TEST_CASE("RequestTimeTooSkewed without a server time is not retried") {
  Harness h;
  h.executor->respond = [](const SeenRequest&, int) {
    return FakeReply::Error(403, "RequestTimeTooSkewed");
  };
  std::vector<char> out;
  GetRequest req;
  req.key = "k";
  auto got = h.Get(req, GetTarget::Growable(&out));
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kRequestTimeTooSkewed);
  CHECK(got.status().message().find("sync it with NTP") != std::string::npos);
  CHECK(h.executor->count() == 1);
}

TEST_CASE("An expired token invalidates the credentials and retries with new ones") {
  Harness h;
  h.creds->token = "STS-TOKEN";
  h.executor->respond = [](const SeenRequest& r, int) {
    if (r.Header("authorization")->find(" AK0 ") != std::string::npos) {
      return FakeReply::Error(403, "SecurityTokenExpired");
    }
    return GoodGet();
  };
  std::vector<char> out;
  GetRequest req;
  req.key = "k";
  REQUIRE(h.Get(req, GetTarget::Growable(&out)).ok());
  CHECK(h.creds->invalidations == 1);
  auto s = h.signer->signed_requests();
  REQUIRE(s.size() == 2);
  CHECK(s[0].access_key_id == "AK0");
  CHECK(s[1].access_key_id == "AK1");
}

TEST_CASE("InvalidAccessKeyId with STS credentials re-reads them and retries once") {
  Harness h;
  h.creds->token = "STS-TOKEN";
  h.executor->respond = [](const SeenRequest&, int) {
    return FakeReply::Error(403, "InvalidAccessKeyId");
  };
  std::vector<char> out;
  GetRequest req;
  req.key = "k";
  auto got = h.Get(req, GetTarget::Growable(&out));
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kInvalidAccessKeyId);
  CHECK(h.executor->count() == 2);
  CHECK(h.creds->invalidations >= 1);
}

TEST_CASE("A transient credentials failure is retried like a network error") {
  Harness h;
  h.creds->fail_next = 2;
  h.executor->respond = [](const SeenRequest&, int) { return GoodGet(); };
  std::vector<char> out;
  GetRequest req;
  req.key = "k";
  REQUIRE(h.Get(req, GetTarget::Growable(&out)).ok());
  CHECK(h.executor->count() == 1);
  CHECK(h.clock->sleeps.size() == 2);
  CHECK(h.creds->gets == 3);
}

TEST_CASE("Cancellation: before the first attempt and between retries") {
  {
    Harness h;
    GetRequest req;
    req.key = "k";
    req.cancel = std::make_shared<CancelFlag>();
    req.cancel->cancelled = true;
    std::vector<char> out;
    auto got = h.Get(req, GetTarget::Growable(&out));
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == ErrorCode::kCancelled);
    CHECK(h.executor->count() == 0);
  }
  {
    Harness h;
    GetRequest req;
    req.key = "k";
    req.cancel = std::make_shared<CancelFlag>();
    h.executor->respond = [&](const SeenRequest&, int) {
      req.cancel->cancelled = true;
      return FakeReply::Error(500, "InternalError");
    };
    std::vector<char> out;
    auto got = h.Get(req, GetTarget::Growable(&out));
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == ErrorCode::kCancelled);
    CHECK(h.executor->count() == 1);
  }
  {
    Harness h;
    h.executor->respond = [](const SeenRequest&, int) {
      return FakeReply::Transport(ErrorCode::kCancelled);
    };
    GetRequest req;
    req.key = "k";
    std::vector<char> out;
    auto got = h.Get(req, GetTarget::Growable(&out));
    CHECK(got.status().code() == ErrorCode::kCancelled);
    CHECK(h.executor->count() == 1);
  }
}

TEST_CASE("Retries of writes and listings go through the same loop") {
  Harness h;
  h.executor->respond = [](const SeenRequest& r, int i) {
    if (i < 2) return FakeReply::Error(503, "ServiceUnavailable");
    if (r.method == "PUT") return FakeReply::Ok("", {{"ETag", "\"p\""}});
    return FakeReply::Ok("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
  };
  auto body = SharedBytes::Copy("abc");
  auto put = h.Call<Result<PutResult>>([&](auto cb) { h.Client().Put("k", body, {}, cb); });
  REQUIRE(put.ok());
  CHECK(put->etag == "\"p\"");
  CHECK(h.executor->count() == 3);
  for (const auto& seen : h.executor->seen()) CHECK(seen.body == "abc");
}

TEST_CASE(
    "Every attempt of an upload sends the caller's bytes in place, kept alive until it ends") {
  Harness h;
  auto released = std::make_shared<bool>(false);
  std::shared_ptr<const std::string> owner(new std::string(300 * 1024, 'p'),
                                           [released](const std::string* s) {
                                             *released = true;
                                             delete s;
                                           });
  const char* bytes = owner->data();
  SharedBytes body(owner, owner->data(), owner->size());
  owner.reset();
  h.executor->respond = [&](const SeenRequest& r, int i) {
    CHECK_FALSE(*released);  // the caller let go, the attempts did not
    CHECK(r.body_data == bytes);
    if (i < 2) return FakeReply::Error(503, "ServiceUnavailable");
    return FakeReply::Ok("", {{"ETag", "\"u\""}});
  };
  auto part = h.Call<Result<PartInfo>>(
      [&](auto cb) { h.Client().UploadPart("k", "u", 1, std::move(body), cb); });
  REQUIRE(part.ok());
  CHECK(h.executor->count() == 3);
  CHECK(*released);
}
