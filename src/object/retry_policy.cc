#include "object/retry_policy.h"

#include <algorithm>

#include "object/headers.h"
#include "object/response_parsers.h"

namespace ossmount::object {

std::chrono::milliseconds BackoffDelay(const RetryOptions& options, int retry_index,
                                       double jitter) {
  using std::chrono::milliseconds;
  double cap = static_cast<double>(options.max_delay.count());
  double delay = static_cast<double>(options.base_delay.count());
  for (int i = 0; i < retry_index && delay < cap; ++i) delay *= 2;
  delay = std::min(delay, cap);
  jitter = std::clamp(jitter, 0.0, 1.0);
  return milliseconds(static_cast<int64_t>(delay * jitter));
}

std::optional<std::chrono::milliseconds> ParseRetryAfter(const http::HeaderList& headers,
                                                         SystemTime now) {
  const std::string* value = FindHeader(headers, "retry-after");
  if (!value) return std::nullopt;
  if (auto seconds = ParseUint64(*value)) {
    // Clamp absurd values; the retry budget bounds the wait anyway.
    return std::chrono::milliseconds(std::min<uint64_t>(*seconds, 86400) * 1000);
  }
  auto when = ParseRfc1123(*value);
  if (!when.ok()) return std::nullopt;
  int64_t now_sec =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  return std::chrono::milliseconds(std::max<int64_t>(0, when.value() - now_sec) * 1000);
}

std::optional<std::chrono::seconds> ServerClockOffset(const http::HeaderList& headers,
                                                      std::string_view body_server_time,
                                                      SystemTime local_now) {
  std::optional<int64_t> server;
  if (const std::string* date = FindHeader(headers, "date")) {
    auto t = ParseRfc1123(*date);
    if (t.ok()) server = t.value();
  }
  if (!server && !body_server_time.empty()) {
    auto t = ParseIso8601(body_server_time);
    if (t.ok()) server = t.value();
  }
  if (!server) return std::nullopt;
  int64_t local =
      std::chrono::duration_cast<std::chrono::seconds>(local_now.time_since_epoch()).count();
  return std::chrono::seconds(*server - local);
}

}  // namespace ossmount::object
