// Error responses: parsing the <Error> XML body and turning an HTTP error into a Status
// whose message says what went wrong and what to do.
//
// Only Code, Message, RequestId, HostId, EC and ServerTime are read from the body. Fields
// such as StringToSign, SignatureProvided or AWSAccessKeyId never reach a Status: a
// message must not carry anything derived from a secret.
// Limits: an error body is at most its first 64 KiB (the fetch engine keeps no more), parsed
// by pugixml without recursion, so its nesting depth costs no stack.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "http/fetch_engine.h"
#include "object/dialect.h"
#include "ossmount/status.h"

namespace ossmount::object {

struct ServiceErrorBody {
  std::string code;
  std::string message;
  std::string request_id;
  std::string host_id;
  std::string ec;
  std::string server_time;  // some servers include it with RequestTimeTooSkewed
};

// nullopt when the body is empty or not an <Error> document.
std::optional<ServiceErrorBody> ParseErrorXml(std::string_view body);

// Who was asking, for the message.
struct ErrorContext {
  std::string operation;  // "GET", "HEAD", "LIST", "PUT", ...
  std::string bucket;
  std::string key;                 // "" for bucket-level operations
  std::string endpoint;            // as the user configured it, e.g. "https://oss-cn-hangzhou..."
  std::string credentials_source;  // CredentialsProvider::Describe(); never a secret
  std::string if_match;            // the If-Match etag sent, for the 412 message
  std::string upload_id;           // multipart operations
  std::string source_key;          // copies: the object copied from (its 404/412 are about it)
  // The request asked not to replace an existing object: an S3 412 without If-Match then
  // means "it exists" (kAlreadyExists), not "it changed".
  bool forbid_overwrite = false;
};

// What the retry loop must do before a retry can succeed.
enum class Recovery {
  kNone,
  kCorrectClock,        // RequestTimeTooSkewed: take the offset from the server's Date
  kRefreshCredentials,  // token expired: CredentialsProvider::Invalidate(), then retry
};

struct MappedError {
  Status status;  // non-OK; retryable() per the retry classification
  Recovery recovery = Recovery::kNone;
};

// Maps a non-2xx response (HTTP status, headers, possibly empty body) to a Status with
// service details (HTTP status, code, request id from the body or the request-id header,
// EC from the body or x-oss-ec).
MappedError MapErrorResponse(long http_status, const http::HeaderList& headers,
                             std::string_view body, const Dialect& dialect,
                             const ErrorContext& context);

// True for codes that mean "the STS token is expired or invalid".
bool IsTokenExpiryCode(std::string_view code);
// True for throttling codes (SlowDown, QpsLimitExceeded, ...).
bool IsThrottlingCode(std::string_view code);

}  // namespace ossmount::object
