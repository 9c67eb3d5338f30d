// Test doubles for the object client: a scripted HttpExecutor that behaves like the
// FetchEngine (writes 2xx bodies into the request's target, reports overflow and short
// bodies, posts every completion), a fake Clock whose sleeps advance time instantly, a
// recording signer and a rotating credentials provider.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "auth/credentials.h"
#include "auth/signer.h"
#include "object/clock.h"
#include "object/headers.h"
#include "object/http_executor.h"

namespace ossmount::object::testing {

struct FakeReply {
  Status transport;  // non-OK: a transport failure, no HTTP response
  long status = 200;
  http::HeaderList headers;
  std::string body;
  // When set, only this many body bytes arrive and the transfer ends as a short body
  // (kIntegrity, retryable), as the engine reports a connection dropped mid-body.
  std::optional<size_t> truncate_at;

  static FakeReply Ok(std::string body, http::HeaderList headers = {}) {
    FakeReply r;
    r.body = std::move(body);
    r.headers = std::move(headers);
    return r;
  }
  static FakeReply Error(long status, std::string code, http::HeaderList headers = {}) {
    FakeReply r;
    r.status = status;
    r.headers = std::move(headers);
    if (!code.empty()) {
      r.body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + code +
               "</Code><Message>msg for " + code +
               "</Message><RequestId>RID-1</RequestId><EC>0026-00000001</EC></Error>";
    }
    return r;
  }
  static FakeReply Transport(ErrorCode code) {
    FakeReply r;
    r.transport = Status(code, "fake transport failure", code != ErrorCode::kCancelled);
    return r;
  }
};

// A recorded request (the target is not kept).
struct SeenRequest {
  std::string method;
  std::string url;
  http::HeaderList headers;
  std::string body;
  Priority priority;
  size_t resume_from = 0;
  const char* body_data = nullptr;  // where the sent bytes were: the caller's own, or a copy
  const std::string* Header(std::string_view name) const { return FindHeader(headers, name); }
};

class FakeExecutor final : public HttpExecutor {
 public:
  explicit FakeExecutor(boost::asio::io_context& io) : io_(io) {}

  std::function<FakeReply(const SeenRequest&, int index)> respond;

  void Execute(http::Request request, http::ResponseHandler done) override {
    SeenRequest seen{
        request.method,   request.url,         request.headers,    std::string(request.body.view()),
        request.priority, request.resume_from, request.body.data()};
    int index;
    {
      std::lock_guard<std::mutex> lock(mu_);
      index = static_cast<int>(seen_.size());
      seen_.push_back(seen);
    }
    FakeReply reply = respond(seen, index);
    http::Response response;
    response.transport = reply.transport;
    if (reply.transport.ok()) {
      response.status = reply.status;
      for (auto& [n, v] : reply.headers) {
        std::string lower = n;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        response.headers.emplace_back(lower, v);
      }
      if (request.method == "HEAD") reply.body.clear();
      std::string body = reply.body;
      if (reply.truncate_at) body.resize(std::min(body.size(), *reply.truncate_at));
      if (reply.status >= 200 && reply.status < 300) {
        GetTarget& t = request.target;
        if (t.growable && t.growable_limit > 0 && body.size() > t.growable_limit) {
          // As the engine does: the transfer is abandoned at the limit.
          response.body_overflow = true;
          response.transport = Status(ErrorCode::kIntegrity, "body overflow", false);
        } else if (t.growable) {
          t.growable->insert(t.growable->end(), body.begin(), body.end());
          response.body_bytes = body.size();
        } else if (t.data) {
          // As the engine does: a resumed attempt writes after the bytes it keeps.
          const size_t kept = request.resume_from;
          const size_t room = t.capacity - std::min(kept, t.capacity);
          size_t n = std::min(body.size(), room);
          std::memcpy(t.data + kept, body.data(), n);
          response.body_bytes = n;
          // As the engine does, in one write: report the body if the client vouches for it.
          if (request.progress && n > 0 &&
              request.progress->vouch(reply.status, response.headers)) {
            request.progress->reported = kept + n;
            request.progress->arrived(kept + n);
          }
          if (body.size() > room) {
            response.body_overflow = true;
            response.transport = Status(ErrorCode::kIntegrity, "body overflow", false);
          }
        }
      } else {
        response.error_body = body;
      }
      if (reply.truncate_at && response.transport.ok()) {
        response.transport = Status(ErrorCode::kIntegrity, "short body", true);
      }
    }
    boost::asio::post(io_, [done = std::move(done), response = std::move(response)]() mutable {
      done(std::move(response));
    });
  }

  std::vector<SeenRequest> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  size_t count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_.size();
  }

 private:
  boost::asio::io_context& io_;
  mutable std::mutex mu_;
  std::vector<SeenRequest> seen_;
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(boost::asio::io_context& io) : io_(io) {}

  // Wall time moves with the sleeps too.
  SystemTime Now() override {
    std::lock_guard<std::mutex> lock(mu_);
    return wall_ +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(elapsed_ - kStart);
  }
  SteadyTime Steady() override {
    std::lock_guard<std::mutex> lock(mu_);
    return SteadyTime(elapsed_);
  }
  void SleepThen(std::chrono::milliseconds delay, std::function<void()> then) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      sleeps.push_back(delay);
      elapsed_ += delay;
    }
    boost::asio::post(io_, std::move(then));
  }
  double Jitter() override { return jitter; }

  void Advance(std::chrono::milliseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    elapsed_ += d;
  }

  double jitter = 0.5;
  std::vector<std::chrono::milliseconds> sleeps;  // read only after the io_context stopped
  // 2023-12-16T16:20:57Z
  SystemTime wall_ = SystemTime(std::chrono::seconds(1702743657));

 private:
  static constexpr std::chrono::steady_clock::duration kStart = std::chrono::seconds(1000);
  boost::asio::io_context& io_;
  std::mutex mu_;
  std::chrono::steady_clock::duration elapsed_ = kStart;
};

// Adds "Authorization: FAKE <ak> <unix time>" and remembers what it signed with.
class RecordingSigner final : public auth::Signer {
 public:
  explicit RecordingSigner(std::string name = "main") : name_(std::move(name)) {}
  void Sign(auth::SignableRequest& request, const auth::Credentials& creds,
            SystemTime now) const override {
    int64_t t = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    request.headers.emplace_back(
        "Authorization", "FAKE " + name_ + " " + creds.access_key_id + " " + std::to_string(t));
    std::lock_guard<std::mutex> lock(mu_);
    signed_.push_back({creds.access_key_id, t, request.path, request.bucket, request.key});
  }
  struct Signed {
    std::string access_key_id;
    int64_t unix_time;
    std::string path, bucket, key;
  };
  std::vector<Signed> signed_requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return signed_;
  }

 private:
  std::string name_;
  mutable std::mutex mu_;
  mutable std::vector<Signed> signed_;
};

// Hands out "AK<n>" where n counts Invalidate() calls, so tests see re-reads.
class FakeCredentials final : public auth::CredentialsProvider {
 public:
  Result<auth::Credentials> Get() override {
    ++gets;
    if (fail_next > 0) {
      --fail_next;
      return Status(ErrorCode::kNetwork, "metadata service unreachable", true);
    }
    auth::Credentials c;
    c.access_key_id = "AK" + std::to_string(invalidations);
    c.access_key_secret = "SECRET-DO-NOT-LOG";
    c.security_token = token;
    return c;
  }
  std::string Describe() const override { return "fake test credentials"; }
  void Invalidate() override { ++invalidations; }

  // Atomic: Get() runs on several io threads at once in the concurrency tests (a plain int
  // was a data race, found by TSan). `token` is set before any request and only read after.
  std::atomic<int> gets{0};
  std::atomic<int> invalidations{0};
  std::atomic<int> fail_next{0};
  std::string token;
};

}  // namespace ossmount::object::testing
