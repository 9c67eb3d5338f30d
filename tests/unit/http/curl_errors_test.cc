// The mapping from libcurl failures to Status: codes, retryability and messages.
#include <catch2/catch.hpp>

#include <cerrno>

#include "http/curl_errors.h"

namespace ossmount::http::internal {
namespace {

TransportFacts Facts() {
  TransportFacts f;
  f.host = "oss.example.com";
  f.host_port = "oss.example.com:443";
  f.timeouts.connect = std::chrono::milliseconds(5000);
  f.timeouts.low_speed_time = std::chrono::seconds(15);
  f.timeouts.low_speed_bytes = 1024;
  return f;
}

TEST_CASE("curl errors map to codes, retryability and actionable messages", "[curl_errors]") {
  struct Case {
    CURLcode code;
    long os_errno;
    const char* curl_message;
    ErrorCode expected;
    bool retryable;
    const char* message_part;
  };
  const Case cases[] = {
      {CURLE_COULDNT_CONNECT, ECONNREFUSED, "", ErrorCode::kNetwork, true,
       "could not connect to oss.example.com:443 (connection refused); check the endpoint"},
      {CURLE_COULDNT_CONNECT, ENETUNREACH, "", ErrorCode::kNetwork, true, "(network unreachable)"},
      {CURLE_COULDNT_RESOLVE_HOST, 0, "", ErrorCode::kNetwork, true,
       "could not resolve host 'oss.example.com'; check the endpoint"},
      {CURLE_OPERATION_TIMEDOUT, 0,
       "Operation too slow. Less than 1024 bytes/sec transferred the last 15 seconds",
       ErrorCode::kTimeout, true, "stalled: fewer than 1024 bytes/s for 15 s"},
      {CURLE_OPERATION_TIMEDOUT, 0, "Connection timed out after 5001 milliseconds",
       ErrorCode::kTimeout, true, "within 5000 ms (connect timeout)"},
      {CURLE_OPERATION_TIMEDOUT, 0, "Connection timeout after 5001 ms", ErrorCode::kTimeout, true,
       "within 5000 ms (connect timeout)"},
      {CURLE_OPERATION_TIMEDOUT, 0, "Resolving timed out after 5001 milliseconds",
       ErrorCode::kTimeout, true, "within 5000 ms (connect timeout)"},
      {CURLE_OPERATION_TIMEDOUT, 0, "Operation timed out after 9 ms", ErrorCode::kTimeout, true,
       "timed out"},
      {CURLE_PEER_FAILED_VERIFICATION, 0, "SSL certificate problem", ErrorCode::kNetwork, false,
       "--ca-bundle"},
      {CURLE_SSL_CACERT_BADFILE, 0, "", ErrorCode::kNetwork, false, "--ca-bundle"},
      {CURLE_SSL_CONNECT_ERROR, 0, "", ErrorCode::kNetwork, true, "TLS handshake"},
      {CURLE_RECV_ERROR, 0, "Connection reset by peer", ErrorCode::kNetwork, true,
       "receiving from oss.example.com:443 failed"},
      {CURLE_SEND_ERROR, 0, "", ErrorCode::kNetwork, true, "sending to"},
      {CURLE_GOT_NOTHING, 0, "", ErrorCode::kNetwork, true, "without sending a response"},
      {CURLE_PARTIAL_FILE, 0, "", ErrorCode::kIntegrity, true, "cut short"},
      {CURLE_WEIRD_SERVER_REPLY, 0, "", ErrorCode::kProtocol, true, "malformed HTTP response"},
      {CURLE_URL_MALFORMAT, 0, "", ErrorCode::kInvalidArgument, false, "check the endpoint"},
      {CURLE_ABORTED_BY_CALLBACK, 0, "", ErrorCode::kCancelled, false, "cancelled"},
  };
  for (const Case& c : cases) {
    TransportFacts f = Facts();
    f.os_errno = c.os_errno;
    f.curl_message = c.curl_message;
    Status s = MapCurlError(c.code, f);
    INFO("curl code " << c.code << ": " << s.message());
    CHECK(s.code() == c.expected);
    CHECK(s.retryable() == c.retryable);
    CHECK(s.message().find(c.message_part) != std::string::npos);
  }
}

TEST_CASE("a request timeout names its limit", "[curl_errors]") {
  TransportFacts f = Facts();
  f.timeouts.request = std::chrono::milliseconds(1500);
  f.curl_message = "Operation timed out after 1501 milliseconds with 0 bytes received";
  Status s = MapCurlError(CURLE_OPERATION_TIMEDOUT, f);
  CHECK(s.code() == ErrorCode::kTimeout);
  CHECK(s.message() ==
        "request to oss.example.com:443 did not finish within 1500 ms (request "
        "timeout)");
}

TEST_CASE("ParseHostPort fills in default ports and never returns the query", "[curl_errors]") {
  std::string host, host_port;
  REQUIRE(ParseHostPort("https://bucket.oss-cn-beijing.aliyuncs.com/key?Signature=secret", &host,
                        &host_port));
  CHECK(host == "bucket.oss-cn-beijing.aliyuncs.com");
  CHECK(host_port == "bucket.oss-cn-beijing.aliyuncs.com:443");
  REQUIRE(ParseHostPort("http://127.0.0.1:9000/b/k", &host, &host_port));
  CHECK(host_port == "127.0.0.1:9000");
  REQUIRE(ParseHostPort("http://[::1]/b", &host, &host_port));
  CHECK(host_port == "[::1]:80");
  CHECK_FALSE(ParseHostPort("::not a url", &host, &host_port));
  CHECK(host_port == "the endpoint");
}

}  // namespace
}  // namespace ossmount::http::internal
