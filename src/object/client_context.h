// ClientContext: what every request of one object client shares: the resolved options,
// endpoints, signers, executor, clock, and the little mutable state learned from the
// server (clock offset, data-endpoint health).
//
// Ownership: held by shared_ptr by the client and by every operation in flight, so an
// operation can outlive the ObjectClient that started it. The io_context and whatever the
// executor wraps (the FetchEngine) must outlive all of them.
// Thread-safety: immutable after construction except the atomics below.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>

#include "auth/signer.h"
#include "object/clock.h"
#include "object/dialect.h"
#include "object/endpoint.h"
#include "object/http_executor.h"
#include "ossmount/client_options.h"
#include "ossmount/object_client.h"

namespace boost::asio {
class io_context;
}

namespace ossmount::object {

// The largest XML reply (listing page, multipart and copy replies) accepted. A 1,000-key page
// of 1,023-byte keys, URL-encoded, is under 8 MiB; anything far larger is a broken or hostile
// server, refused before it takes the memory.
inline constexpr size_t kMaxXmlResponseBytes = 16u << 20;

// How long GET/HEAD skip the data endpoint after it failed with a connection error.
inline constexpr std::chrono::seconds kDataEndpointCooldown{30};

struct ClientContext {
  ClientContext(boost::asio::io_context& io_context, const Dialect& d)
      : io(io_context), dialect(d) {}

  boost::asio::io_context& io;
  const Dialect& dialect;
  ClientOptions options;
  Endpoint endpoint;
  std::optional<Endpoint> data_endpoint;
  bool path_style = false;
  std::shared_ptr<HttpExecutor> executor;
  std::shared_ptr<Clock> clock;
  std::shared_ptr<const auth::Signer> signer;       // for `endpoint`
  std::shared_ptr<const auth::Signer> data_signer;  // for `data_endpoint`

  // Server time minus local time, learned from a RequestTimeTooSkewed reply; added to the
  // signing time of every later request.
  std::atomic<int64_t> clock_offset_sec{0};
  // Steady-clock ticks until which the data endpoint is skipped (0 = healthy).
  std::atomic<int64_t> data_endpoint_down_until{0};

  // What the retry loop did (RetryStats, field by field); relaxed counters.
  struct RetryCounters {
    std::atomic<uint64_t> retries{0}, throttled{0}, server_errors{0}, network{0}, timeouts{0},
        integrity{0}, other{0}, retry_after{0}, gave_up{0}, resumed{0}, resumed_bytes{0};
    RetryStats Snapshot() const {
      RetryStats s;
      s.retries = retries.load();
      s.throttled = throttled.load();
      s.server_errors = server_errors.load();
      s.network = network.load();
      s.timeouts = timeouts.load();
      s.integrity = integrity.load();
      s.other = other.load();
      s.retry_after = retry_after.load();
      s.gave_up = gave_up.load();
      s.resumed = resumed.load();
      s.resumed_bytes = resumed_bytes.load();
      return s;
    }
  } retry_counters;
};

}  // namespace ossmount::object
