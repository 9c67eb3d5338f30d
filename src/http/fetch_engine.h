// FetchEngine: libcurl multi handles driven by a Boost.Asio io_context.
//
// One attempt per Execute(): no retries here (those need re-signing and live in the retry
// loop, src/object/request_runner.h). What the engine does:
//   - curl socket callbacks map to async_wait on the io_context, the curl timer to a
//     steady_timer: there is no polling loop and no thread of its own.
//   - keep-alive connection reuse per host (one multi handle, its connection cache);
//   - a cap on transfers in flight; beyond it requests queue by Priority (kForeground
//     first), FIFO within a priority;
//   - a 2xx body is written straight into the request's GetTarget, and its arrival can be
//     reported as it comes (BodyProgress); any other status's body is kept (up to 64 KiB) in
//     Response::error_body for error parsing;
//   - bounds on what a server can make it hold: a response with over 256 header lines or
//     64 KiB of headers, or a body over a growable target's limit, is aborted (kProtocol);
//   - per-request connect timeout and low-speed (stall) deadline; TLS verification on by
//     default against the system CAs or a CA bundle.
//
// Thread-safety: Execute() may be called from any thread. Handlers run on the io_context.
// Every handler is called exactly once, never inline from inside Execute().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ossmount/client_options.h"
#include "ossmount/status.h"
#include "ossmount/transfer.h"

namespace boost::asio {
class io_context;
}

namespace ossmount::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// Reports a 2xx body while it arrives in a fixed target, so that a reader can use the first
// bytes of a large GET before the rest are here. One BodyProgress is shared by every attempt
// of one operation (a retry is a new Request with the same BodyProgress).
struct BodyProgress {
  // Asked once per response, before its first body byte is written (its headers are
  // complete): whether its bytes may be reported, i.e. it is the range and the version the
  // caller asked for. Never asked for a non-2xx response.
  std::function<bool(long status, const HeaderList& headers)> vouch;
  // Called on the engine's thread after body bytes were written, with the number of bytes in
  // place from the target's start; only for a vouched response and only when that number
  // grew past every earlier report, of this attempt or an earlier one.
  std::function<void(size_t bytes)> arrived;
  // The most bytes reported so far. Readers may be using them, so a later attempt never
  // writes them again: it checks that its body begins with the same bytes and is aborted
  // (kIntegrity, retryable) if they differ or if it is not vouched.
  std::atomic<size_t> reported{0};
};

struct Request {
  std::string method = "GET";  // "HEAD" sends no body and expects none
  std::string url;             // fully encoded
  HeaderList headers;
  // The body of a PUT or POST (empty: none). Read in place by libcurl, never copied; the
  // Transfer holds it until the transfer ends, and a retry (a new Request) shares the bytes.
  SharedBytes body;
  GetTarget target;  // where a 2xx response body goes; a default GetTarget discards it
  Priority priority = Priority::kForeground;
  std::shared_ptr<CancelFlag> cancel;      // optional
  std::shared_ptr<BodyProgress> progress;  // optional; fixed targets only
  // Fixed targets only: the first resume_from bytes of the target already hold the start of
  // the body (an earlier attempt delivered and reported them), and this attempt asked only for
  // the rest. Its body is written from target.data + resume_from on; progress counts stay
  // measured from the target's start. Response::body_bytes counts this attempt's bytes only.
  size_t resume_from = 0;
};

struct Response {
  // OK when an HTTP response arrived (whatever its status). Otherwise kNetwork (refused,
  // reset, DNS, TLS), kTimeout (connect timeout, stall) or kCancelled; retryable set
  // for the first two. A body cut short is kIntegrity (retryable).
  Status transport;
  long status = 0;
  HeaderList headers;     // names lowercased, in arrival order
  size_t body_bytes = 0;  // bytes written to the target (2xx only)
  // 2xx body larger than a fixed target (transport is kIntegrity) or over a growable
  // target's limit (kProtocol).
  bool body_overflow = false;
  std::string error_body;  // non-2xx body, first 64 KiB
  double seconds = 0;      // wall time of the transfer

  // Case-insensitive lookup of the first header with this name; nullptr when absent.
  const std::string* Header(std::string_view name) const;
};

using ResponseHandler = std::function<void(Response)>;

struct EngineOptions {
  TimeoutOptions timeouts;
  int max_in_flight = 256;
  int max_connections_per_host = 256;
  bool verify_tls = true;
  std::string ca_bundle;  // "" = system CAs
};

struct EngineStats {
  uint64_t started = 0;
  uint64_t completed = 0;
  uint64_t transport_errors = 0;
  int in_flight = 0;
  int queued = 0;
};

class FetchEngine {
 public:
  // The engine runs on `io`, which the caller runs (on any number of threads).
  FetchEngine(boost::asio::io_context& io, EngineOptions options);
  // Aborts queued and in-flight transfers; their handlers run with kCancelled.
  // REQUIRES: the io_context is still alive (destroy the engine first).
  ~FetchEngine();
  FetchEngine(const FetchEngine&) = delete;
  FetchEngine& operator=(const FetchEngine&) = delete;

  void Execute(Request request, ResponseHandler done);
  EngineStats Stats() const;

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

// A blocking single request on its own easy handle, for code that must not run on the
// io_context: start-up probes and the ECS metadata credentials service.
Response FetchBlocking(const Request& request, const EngineOptions& options);

}  // namespace ossmount::http
