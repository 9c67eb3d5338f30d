// Transfer: one Request on one libcurl easy handle. Internal to src/http.
//
// It sets the easy handle's options for the request (method, headers, body, timeouts, TLS),
// receives the response through libcurl's header/write callbacks (a 2xx body straight
// into the request's GetTarget, any other body into error_body), and turns the outcome
// into a Response. Used by FetchEngine (many transfers on one multi handle) and by
// FetchBlocking (curl_easy_perform).
//
// Ownership: the Transfer owns the Request (and so keeps its body alive) and the header
// list it hands to libcurl; it must outlive the easy handle's use of them, i.e. until the
// handle is removed from the multi handle or curl_easy_perform returns.
// Thread-safety: none; one thread (or one strand) at a time.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstddef>
#include <optional>

#include "http/fetch_engine.h"
#include "ossmount/status.h"

namespace ossmount::http::internal {

// Non-2xx bodies beyond this are read and discarded (the connection stays reusable).
inline constexpr size_t kMaxErrorBody = 64 * 1024;
// Headers kept per response (the one after any 1xx): a response with more header lines, or
// more bytes of them, is aborted as kProtocol. libcurl caps one line at 100 KiB
// (CURL_MAX_HTTP_HEADER) but not their number; real ones are a few dozen lines, and user
// metadata is at most 8 KiB on OSS (2 KiB on S3).
inline constexpr size_t kMaxResponseHeaders = 256;
inline constexpr size_t kMaxResponseHeaderBytes = 64 * 1024;

class Transfer {
 public:
  Transfer(Request request, ResponseHandler done);
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // Configures `easy` (fresh or curl_easy_reset) for this request and starts the clock.
  // A growable target is cleared here, so every attempt starts empty. Returns non-OK for a
  // request libcurl refuses (the handle must then not be used for it).
  Status Configure(CURL* easy, const EngineOptions& options);

  // The response after libcurl finished with `code`. Call once, before the easy handle is
  // reset or cleaned up (it reads CURLINFO values from it).
  Response Finish(CURLcode code);

  // The response for a transfer that ends without libcurl's verdict: never started
  // (queued and cancelled, engine shut down) or aborted by the engine.
  Response Fail(Status status);

  bool cancel_requested() const {
    return request_.cancel && request_.cancel->cancelled.load(std::memory_order_relaxed);
  }
  bool has_cancel_flag() const { return request_.cancel != nullptr; }
  Priority priority() const { return request_.priority; }
  ResponseHandler TakeHandler() { return std::move(done_); }

  // Bookkeeping for FetchEngine: whether this transfer is counted among those it must
  // poll for cancellation.
  bool counted_for_cancel = false;

 private:
  static size_t OnHeader(char* data, size_t size, size_t n, void* self);
  static size_t OnWrite(char* data, size_t size, size_t n, void* self);
  static size_t OnRead(char* buffer, size_t size, size_t n, void* self);
  static int OnSeek(void* self, curl_off_t offset, int origin);
  static int OnProgress(void* self, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

  // Writes a 2xx body's bytes into the fixed target, continuing bytes an earlier attempt
  // reported (BodyProgress) instead of rewriting them; false aborts the transfer.
  bool WriteFixed(const char* data, size_t len);

  bool Is2xx() const { return status_ >= 200 && status_ < 300; }
  bool IsHead() const { return request_.method == "HEAD"; }
  double Elapsed() const;

  Request request_;
  ResponseHandler done_;
  EngineOptions options_;
  CURL* easy_ = nullptr;
  curl_slist* header_list_ = nullptr;
  char error_buffer_[CURL_ERROR_SIZE] = {0};
  std::chrono::steady_clock::time_point start_;

  // Response under construction.
  Response response_;
  long status_ = 0;  // from the latest status line (1xx responses are replaced)
  std::optional<uint64_t> content_length_;
  size_t body_bytes_ = 0;
  bool overflow_ = false;
  size_t header_lines_ = 0;  // of the current response, status line and blank line included
  size_t header_bytes_ = 0;
  bool headers_overflow_ = false;  // over kMaxResponseHeaders or kMaxResponseHeaderBytes
  int vouched_ = -1;               // BodyProgress::vouch's answer for this response; -1 unasked
  bool differs_from_reported_ = false;  // this attempt could not continue the reported bytes
  size_t upload_offset_ = 0;
};

}  // namespace ossmount::http::internal
