#include "http/curl_errors.h"

#include <cerrno>
#include <string_view>

namespace ossmount::http::internal {
namespace {

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// Short lowercase reason for a connect() failure.
std::string ConnectReason(const TransportFacts& f) {
  switch (f.os_errno) {
    case ECONNREFUSED:
      return "connection refused";
    case ENETUNREACH:
      return "network unreachable";
    case EHOSTUNREACH:
      return "host unreachable";
    case ETIMEDOUT:
      return "connection timed out";
    case ECONNRESET:
      return "connection reset";
    case EADDRNOTAVAIL:
      return "address not available";
    default:
      break;
  }
  if (!f.curl_message.empty()) return f.curl_message;
  return "connect failed";
}

std::string Detail(const TransportFacts& f, const char* fallback) {
  return f.curl_message.empty() ? std::string(fallback) : f.curl_message;
}

}  // namespace

bool ParseHostPort(const std::string& url, std::string* host, std::string* host_port) {
  *host = "the endpoint";
  *host_port = "the endpoint";
  CURLU* u = curl_url();
  if (u == nullptr) return false;
  bool ok = false;
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char* h = nullptr;
    char* p = nullptr;
    if (curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) == CURLUE_OK) {
      *host = h;
      *host_port = std::string(h) + ":" + p;
      ok = true;
    }
    curl_free(h);
    curl_free(p);
  }
  curl_url_cleanup(u);
  return ok;
}

Status MapCurlError(CURLcode code, const TransportFacts& f) {
  const std::string& hp = f.host_port;
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
      return Status(ErrorCode::kNetwork,
                    "could not resolve host '" + f.host + "'; check the endpoint", true);
    case CURLE_COULDNT_RESOLVE_PROXY:
      return Status(ErrorCode::kNetwork, "could not resolve the proxy host; check the proxy", true);
    case CURLE_COULDNT_CONNECT:
      return Status(
          ErrorCode::kNetwork,
          "could not connect to " + hp + " (" + ConnectReason(f) + "); check the endpoint", true);
    case CURLE_OPERATION_TIMEDOUT: {
      const std::string& m = f.curl_message;
      if (Contains(m, "too slow")) {
        return Status(ErrorCode::kTimeout,
                      "transfer from " + hp + " stalled: fewer than " +
                          std::to_string(f.timeouts.low_speed_bytes) + " bytes/s for " +
                          std::to_string(f.timeouts.low_speed_time.count()) + " s (stall deadline)",
                      true);
      }
      // libcurl words it "Connection timed out after N ms" (multi state machine),
      // "Connection timeout after N ms" (connect filter) or "Resolving timed out".
      if (Contains(m, "Connection timed out") || Contains(m, "Connection timeout") ||
          Contains(m, "Failed to connect") || Contains(m, "Resolving timed out")) {
        return Status(ErrorCode::kTimeout,
                      "could not connect to " + hp + " within " +
                          std::to_string(f.timeouts.connect.count()) +
                          " ms (connect timeout); check the endpoint and the network",
                      true);
      }
      if (f.timeouts.request.count() > 0) {
        return Status(ErrorCode::kTimeout,
                      "request to " + hp + " did not finish within " +
                          std::to_string(f.timeouts.request.count()) + " ms (request timeout)",
                      true);
      }
      return Status(ErrorCode::kTimeout,
                    "request to " + hp + " timed out: " + Detail(f, "operation timed out"), true);
    }
    case CURLE_PEER_FAILED_VERIFICATION:
      return Status(ErrorCode::kNetwork,
                    "TLS certificate of " + hp + " could not be verified (" +
                        Detail(f, "untrusted certificate") +
                        "); if the endpoint uses a private CA, pass its certificate with "
                        "--ca-bundle",
                    false);
    case CURLE_SSL_CACERT_BADFILE:
      return Status(ErrorCode::kNetwork,
                    "could not load the CA bundle '" +
                        (f.ca_bundle.empty() ? std::string("system default") : f.ca_bundle) +
                        "' (" + Detail(f, "bad file") + "); check --ca-bundle",
                    false);
    case CURLE_SSL_CONNECT_ERROR:
      return Status(ErrorCode::kNetwork,
                    "TLS handshake with " + hp + " failed (" + Detail(f, "handshake error") +
                        "); check the endpoint scheme and --ca-bundle",
                    true);
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
      return Status(
          ErrorCode::kNetwork,
          "TLS error with " + hp + " (" + Detail(f, "TLS failure") + "); check --ca-bundle", false);
    case CURLE_SEND_ERROR:
      return Status(ErrorCode::kNetwork,
                    "sending to " + hp + " failed (" + Detail(f, "send error") + ")", true);
    case CURLE_RECV_ERROR:
      return Status(ErrorCode::kNetwork,
                    "receiving from " + hp + " failed (" + Detail(f, "connection reset") + ")",
                    true);
    case CURLE_GOT_NOTHING:
      return Status(ErrorCode::kNetwork, hp + " closed the connection without sending a response",
                    true);
    case CURLE_PARTIAL_FILE:
      return Status(ErrorCode::kIntegrity,
                    "response body from " + hp + " was cut short (" +
                        Detail(f, "connection closed early") + ")",
                    true);
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_BAD_CONTENT_ENCODING:
      return Status(ErrorCode::kProtocol,
                    "malformed HTTP response from " + hp + " (" + Detail(f, "bad reply") + ")",
                    true);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Status(ErrorCode::kInvalidArgument,
                    "malformed or unsupported URL for " + hp + " (" + Detail(f, "bad URL") +
                        "); check the endpoint",
                    false);
    case CURLE_OUT_OF_MEMORY:
      return Status(ErrorCode::kInternal, "libcurl ran out of memory", true);
    case CURLE_ABORTED_BY_CALLBACK:
      return Status(ErrorCode::kCancelled, "request cancelled", false);
    default:
      return Status(ErrorCode::kNetwork,
                    "request to " + hp + " failed: " + Detail(f, curl_easy_strerror(code)), true);
  }
}

}  // namespace ossmount::http::internal
