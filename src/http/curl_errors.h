// Turning a failed libcurl transfer into a Status a user can act on. Internal to src/http.
//
// The messages name the host and port (never the full URL: presigned URLs carry
// signatures in their query string) and say what to check:
//   "could not connect to 127.0.0.1:1 (connection refused); check the endpoint"
//   "could not resolve host 'x'; check the endpoint"
//   TLS verification failures point at --ca-bundle.
// Codes: kNetwork (refused, reset, DNS, TLS), kTimeout (connect timeout, stall deadline,
// request cap), kInvalidArgument (malformed URL), kInternal (libcurl misuse or OOM).
// Network errors and timeouts are retryable; a TLS verification failure or a malformed URL
// is not.
#pragma once

#include <curl/curl.h>

#include <string>

#include "http/fetch_engine.h"
#include "ossmount/status.h"

namespace ossmount::http::internal {

// What is known about the failed transfer besides its CURLcode.
struct TransportFacts {
  std::string host;          // "127.0.0.1", "oss-cn-beijing.aliyuncs.com"
  std::string host_port;     // "127.0.0.1:1"
  long os_errno = 0;         // CURLINFO_OS_ERRNO
  std::string curl_message;  // CURLOPT_ERRORBUFFER text; may be empty
  TimeoutOptions timeouts;
  std::string ca_bundle;
};

// REQUIRES: code != CURLE_OK. Callers handle cancellation and body overflow themselves.
Status MapCurlError(CURLcode code, const TransportFacts& facts);

// Fills host and "host:port" (default port filled in) from a URL using libcurl's parser.
// Returns false when the URL cannot be parsed; the outputs then say "the endpoint".
bool ParseHostPort(const std::string& url, std::string* host, std::string* host_port);

}  // namespace ossmount::http::internal
