#include "object/request_runner.h"

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>

#include <boost/asio/post.hpp>

#include "auth/credentials.h"
#include "object/request_metrics.h"
#include "object/retry_policy.h"

namespace ossmount::object {
namespace {

using std::chrono::milliseconds;

class RunningOperation : public std::enable_shared_from_this<RunningOperation> {
 public:
  RunningOperation(std::shared_ptr<ClientContext> context, Operation operation,
                   std::function<void(Status)> done)
      : ctx_(std::move(context)), op_(std::move(operation)), done_(std::move(done)) {
    start_ = ctx_->clock->Steady();
    type_ = ClassifyRequest(op_.spec);
    wall_start_ = std::chrono::steady_clock::now();
    use_data_endpoint_ = op_.data_path && ctx_->data_endpoint && !DataEndpointCoolingDown();
    if (ctx_->options.credentials) {
      op_.error_context.credentials_source = ctx_->options.credentials->Describe();
    }
    op_.error_context.bucket = ctx_->options.bucket;
  }

  void StartAttempt() {
    if (Cancelled()) return Finish(Status(ErrorCode::kCancelled, What() + ": cancelled"));
    ++attempts_;
    auth::Credentials creds;
    if (ctx_->options.credentials) {
      auto got = ctx_->options.credentials->Get();
      if (!got.ok()) {
        Status status = got.status();
        status.Prefix("getting credentials from " + ctx_->options.credentials->Describe());
        return OnFailure(status, nullptr);
      }
      creds = std::move(got.value());
    } else {
      creds.anonymous = true;
    }
    had_token_ = !creds.security_token.empty();

    const size_t resume_from = op_.resume ? op_.resume(&op_.spec) : 0;
    if (resume_from > 0) {
      ctx_->retry_counters.resumed.fetch_add(1, std::memory_order_relaxed);
      ctx_->retry_counters.resumed_bytes.fetch_add(resume_from, std::memory_order_relaxed);
      RecordResume(type_, resume_from);
    }
    const Endpoint& endpoint = use_data_endpoint_ ? *ctx_->data_endpoint : ctx_->endpoint;
    op_.error_context.endpoint = endpoint.Display();
    WireRequest wire = BuildWireRequest(op_.spec, endpoint, ctx_->options.bucket,
                                        ctx_->path_style || endpoint.ip_literal);
    const auth::Signer& signer = use_data_endpoint_ ? *ctx_->data_signer : *ctx_->signer;
    SystemTime now = ctx_->clock->Now() + std::chrono::seconds(ctx_->clock_offset_sec.load());
    if (!creds.anonymous) signer.Sign(wire.signable, creds, now);

    http::Request request;
    request.method = op_.spec.method;
    request.url = std::move(wire.url);
    request.headers = std::move(wire.signable.headers);
    request.body = op_.spec.body;
    if (op_.prepare_target) request.target = op_.prepare_target();
    growable_limit_ = request.target.growable ? request.target.growable_limit : 0;
    request.priority = op_.priority;
    request.cancel = op_.cancel;
    request.progress = op_.progress;
    request.resume_from = resume_from;
    ctx_->executor->Execute(std::move(request), [self = shared_from_this()](http::Response r) {
      self->OnResponse(std::move(r));
    });
  }

 private:
  bool Cancelled() const { return op_.cancel && op_.cancel->cancelled.load(); }

  bool DataEndpointCoolingDown() const {
    int64_t until = ctx_->data_endpoint_down_until.load();
    return until != 0 && ctx_->clock->Steady().time_since_epoch().count() < until;
  }

  void OnResponse(http::Response r) {
    if (!r.transport.ok()) {
      if (r.transport.code() == ErrorCode::kCancelled) return Finish(r.transport);
      if (use_data_endpoint_ && (r.transport.code() == ErrorCode::kNetwork ||
                                 r.transport.code() == ErrorCode::kTimeout)) {
        // The accelerator is unreachable: go to the origin now, and for a while.
        auto until = ctx_->clock->Steady() + kDataEndpointCooldown;
        ctx_->data_endpoint_down_until.store(until.time_since_epoch().count());
        use_data_endpoint_ = false;
        --attempts_;  // the fallback does not use up an attempt
        return StartAttempt();
      }
      Status status = r.transport;
      if (r.body_overflow && growable_limit_ > 0) {
        // A reply (listing page) far larger than any real one: a broken or hostile server.
        status = Status(ErrorCode::kProtocol,
                        What() + ": the response body is larger than " +
                            std::to_string(growable_limit_) +
                            " bytes, far more than a valid reply; refused",
                        false);
      } else if (r.body_overflow) {
        // The body did not fit the caller's buffer: the object is not the size the caller
        // expected, or the server ignored the Range header. A retry returns the same.
        Status explained = op_.explain_overflow ? op_.explain_overflow(r) : Status::Ok();
        status = !explained.ok()
                     ? explained
                     : Status(ErrorCode::kIntegrity,
                              What() +
                                  ": the response body is larger than the buffer (the object "
                                  "changed size, or the server ignored the Range header)",
                              false);
        status.SetRetryable(false);
      }
      return OnFailure(status, &r);
    }
    if (r.status >= 200 && r.status < 300) {
      RecordReceivedBytes(type_, r.body_bytes);
      Status status = op_.accept ? op_.accept(r) : Status::Ok();
      if (status.ok()) return Finish(status);
      return OnFailure(status, &r);
    }
    MappedError mapped =
        MapErrorResponse(r.status, r.headers, r.error_body, ctx_->dialect, op_.error_context);
    if (op_.error_is_success && op_.error_is_success(mapped, attempts_)) {
      return Finish(Status::Ok());
    }
    Status status = mapped.status;
    switch (mapped.recovery) {
      case Recovery::kCorrectClock: {
        auto body = ParseErrorXml(r.error_body);
        auto offset = ServerClockOffset(r.headers, body ? body->server_time : std::string(),
                                        ctx_->clock->Now());
        if (offset) {
          ctx_->clock_offset_sec.store(offset->count());
        } else {
          status.SetRetryable(false);  // without the server's time a retry fails the same way
        }
        break;
      }
      case Recovery::kRefreshCredentials:
        if (ctx_->options.credentials) ctx_->options.credentials->Invalidate();
        break;
      case Recovery::kNone:
        if (status.code() == ErrorCode::kInvalidAccessKeyId && ctx_->options.credentials) {
          // Rotated STS credentials: the old key id is gone. Re-read the source and retry
          // once; a static key that is wrong fails again and is reported.
          ctx_->options.credentials->Invalidate();
          if (had_token_ && !retried_invalid_key_) {
            retried_invalid_key_ = true;
            status.SetRetryable(true);
          }
        }
        break;
    }
    OnFailure(status, &r);
  }

  void OnFailure(Status status, const http::Response* response) {
    if (!status.retryable()) return Finish(status);
    auto& counters = ctx_->retry_counters;
    int max_attempts = std::max(1, ctx_->options.retry.max_attempts);
    if (attempts_ >= max_attempts) {
      if (attempts_ > 1) counters.gave_up.fetch_add(1, std::memory_order_relaxed);
      status.Prefix(What() + " failed after " + std::to_string(attempts_) + " attempts");
      return Finish(status);
    }
    milliseconds delay = BackoffDelay(ctx_->options.retry, attempts_ - 1, ctx_->clock->Jitter());
    bool lengthened = false;
    if (response) {
      if (auto after = ParseRetryAfter(response->headers, ctx_->clock->Now())) {
        lengthened = *after > delay;
        delay = std::max(delay, *after);
      }
    }
    auto elapsed = std::chrono::duration_cast<milliseconds>(ctx_->clock->Steady() - start_);
    if (elapsed + delay > ctx_->options.retry.total_budget) {
      // The last error keeps its code (and so its errno: a refused connection stays EIO);
      // the message says the budget ended the retries.
      counters.gave_up.fetch_add(1, std::memory_order_relaxed);
      status.Prefix(What() + " gave up after " + std::to_string(attempts_) +
                    " attempts: the retry budget of " +
                    std::to_string(ctx_->options.retry.total_budget.count()) +
                    " ms is spent; last error");
      return Finish(status);
    }
    // Counted here, where a retry is scheduled, not at every attempt's start: the fallback
    // from an unreachable data endpoint is another attempt but not a retry.
    counters.retries.fetch_add(1, std::memory_order_relaxed);
    RecordRetry(type_);
    if (lengthened) counters.retry_after.fetch_add(1, std::memory_order_relaxed);
    CountCause(status.code());
    ctx_->clock->SleepThen(delay, [self = shared_from_this()] { self->StartAttempt(); });
  }

  void CountCause(ErrorCode code) {
    auto& c = ctx_->retry_counters;
    std::atomic<uint64_t>* counter = &c.other;
    switch (code) {
      case ErrorCode::kThrottled:
        counter = &c.throttled;
        break;
      case ErrorCode::kServerError:
        counter = &c.server_errors;
        break;
      case ErrorCode::kNetwork:
        counter = &c.network;
        break;
      case ErrorCode::kTimeout:
        counter = &c.timeouts;
        break;
      case ErrorCode::kIntegrity:
        counter = &c.integrity;
        break;
      default:
        break;
    }
    counter->fetch_add(1, std::memory_order_relaxed);
  }

  std::string What() const {
    const ErrorContext& c = op_.error_context;
    return c.operation + (c.key.empty() ? " of bucket '" + c.bucket + "'" : " '" + c.key + "'");
  }

  void Finish(Status status) {
    auto done = std::move(done_);
    done_ = nullptr;
    if (!done) return;  // unreachable: every path finishes once
    auto elapsed = std::chrono::steady_clock::now() - wall_start_;
    RecordFinished(type_, status, elapsed);
    if (spdlog::should_log(spdlog::level::debug)) {
      spdlog::debug("{} '{}': {} in {:.1f} ms, {} attempt{}", RequestTypeName(type_), op_.spec.key,
                    status.ok() ? "ok" : ErrorCodeName(status.code()),
                    std::chrono::duration<double, std::milli>(elapsed).count(), attempts_,
                    attempts_ == 1 ? "" : "s");
    }
    boost::asio::post(ctx_->io, [done = std::move(done), status = std::move(status)]() mutable {
      done(std::move(status));
    });
  }

  std::shared_ptr<ClientContext> ctx_;
  Operation op_;
  std::function<void(Status)> done_;
  Clock::SteadyTime start_;
  RequestType type_ = RequestType::kOther;
  std::chrono::steady_clock::time_point wall_start_;  // metrics: real time, not the test clock
  bool use_data_endpoint_ = false;
  bool had_token_ = false;
  bool retried_invalid_key_ = false;
  int attempts_ = 0;
  size_t growable_limit_ = 0;  // of the current attempt's target; 0 = fixed or no limit
};

}  // namespace

void RunOperation(std::shared_ptr<ClientContext> context, Operation operation,
                  std::function<void(Status)> done) {
  auto running =
      std::make_shared<RunningOperation>(std::move(context), std::move(operation), std::move(done));
  running->StartAttempt();
}

}  // namespace ossmount::object
