// Retry timing: full-jitter exponential backoff, Retry-After, and the server clock offset
// used to recover from RequestTimeTooSkewed. Which failures are retryable is decided where
// the failure is recognised (the transport for connection errors, MapErrorResponse for
// HTTP errors, the response checks for short bodies and CRC mismatches); the retry loop in
// request_runner.h only reads Status::retryable(). Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "common/time_util.h"
#include "http/fetch_engine.h"
#include "ossmount/client_options.h"

namespace ossmount::object {

// Delay before retry number `retry_index` (0 = the first retry):
// jitter * min(base_delay * 2^retry_index, max_delay), jitter in [0, 1).
std::chrono::milliseconds BackoffDelay(const RetryOptions& options, int retry_index, double jitter);

// The Retry-After header as a delay: delta-seconds, or an HTTP date relative to `now`.
// nullopt when absent or unparsable; a date in the past is 0.
std::optional<std::chrono::milliseconds> ParseRetryAfter(const http::HeaderList& headers,
                                                         SystemTime now);

// Server time minus local time, from the Date header (or, failing that, an ISO 8601
// ServerTime from the error body). nullopt when neither is usable.
std::optional<std::chrono::seconds> ServerClockOffset(const http::HeaderList& headers,
                                                      std::string_view body_server_time,
                                                      SystemTime local_now);

}  // namespace ossmount::object
