// The retry loop: runs one logical request as a sequence of signed attempts.
//
// Per attempt: read the current credentials from the provider, pick the endpoint, build the
// URL, sign with the clock (plus any learned offset), hand the request to the executor.
// Per response: transport failure -> the transport's Status; 2xx -> the operation's
// `accept` check (size, CRC, parse); anything else -> MapErrorResponse. Then:
//   - a data-endpoint connection error (kNetwork or kTimeout) switches to the main
//     endpoint at once, without using an attempt, and skips the data endpoint for
//     kDataEndpointCooldown;
//   - RequestTimeTooSkewed: the clock offset is taken from the server's Date header and the
//     request retried (not retried when the server sent no usable time);
//   - an expired token: CredentialsProvider::Invalidate(), then retry;
//   - retryable errors: full-jitter backoff (RetryOptions), at least Retry-After, through
//     the injected Clock; the last error is returned once max_attempts are used, or once
//     the next wait would pass total_budget (same code, a message naming the budget), so
//     a read that gives up is bounded by total_budget plus one attempt (connect timeout /
//     stall deadline); every retry is counted in ClientContext::retry_counters;
//   - anything else is returned at once.
// A retry may ask for less than the first attempt (Operation::resume): a GET whose body was
// cut short after some of it was delivered asks only for the bytes still missing.
// `done` is called exactly once, always posted to the io_context.
#pragma once

#include <functional>
#include <memory>

#include "object/client_context.h"
#include "object/error_mapping.h"
#include "object/request_builder.h"

namespace ossmount::object {

struct Operation {
  RequestSpec spec;
  bool data_path = false;  // GET/HEAD: use the data endpoint when one is configured
  Priority priority = Priority::kForeground;
  std::shared_ptr<CancelFlag> cancel;
  ErrorContext error_context;  // operation, key, if_match, upload_id; the rest is filled in
  // Called before every attempt; returns where a 2xx body goes (growable targets are
  // cleared here). Null: the body is discarded.
  std::function<GetTarget()> prepare_target;
  // Called for a 2xx response: checks and parses it, storing the result in the caller's
  // state. OK ends the operation; a retryable error retries; any other error ends it.
  std::function<Status(const http::Response&)> accept;
  // Called for a mapped non-2xx error with the attempt's number (1 = the first); true turns
  // it into success (DELETE of a missing key; a retried Complete answered NoSuchUpload,
  // which the caller then checks with a HEAD).
  std::function<bool(const MappedError&, int attempt)> error_is_success;
  // Called when a 2xx body did not fit a fixed target; a non-OK status replaces the generic
  // kIntegrity error (a pinned whole GET knows the object changed). Never retried.
  std::function<Status(const http::Response&)> explain_overflow;
  // Reports the body's arrival as it comes (fixed targets); shared by every attempt.
  std::shared_ptr<http::BodyProgress> progress;
  // Called before every attempt, before it is signed: how many bytes at the start of the
  // target earlier attempts already delivered that this one need not ask for again (0: the
  // whole request). When it returns more than 0 it has rewritten `spec` to ask for the rest.
  std::function<size_t(RequestSpec* spec)> resume;
};

void RunOperation(std::shared_ptr<ClientContext> context, Operation operation,
                  std::function<void(Status)> done);

}  // namespace ossmount::object
