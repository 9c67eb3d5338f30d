#include "object/error_mapping.h"

#include <pugixml.hpp>

#include "object/headers.h"

namespace ossmount::object {
namespace {

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

// "GET 'a/b' in bucket 'x'" or "LIST of bucket 'x'".
std::string What(const ErrorContext& c) {
  if (c.key.empty()) return c.operation + " of bucket " + Quoted(c.bucket);
  return c.operation + " " + Quoted(c.key) + " in bucket " + Quoted(c.bucket);
}

std::string FromSource(const ErrorContext& c) {
  return c.credentials_source.empty() ? std::string()
                                      : " (credentials from " + c.credentials_source + ")";
}

std::string ServerSays(const ServiceErrorBody& e) {
  if (e.message.empty()) return "";
  return " (server says: " + e.message + ")";
}

}  // namespace

std::optional<ServiceErrorBody> ParseErrorXml(std::string_view body) {
  if (body.empty()) return std::nullopt;
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size())) return std::nullopt;
  pugi::xml_node root = doc.child("Error");
  if (!root) return std::nullopt;
  ServiceErrorBody e;
  e.code = root.child_value("Code");
  e.message = root.child_value("Message");
  e.request_id = root.child_value("RequestId");
  e.host_id = root.child_value("HostId");
  e.ec = root.child_value("EC");
  e.server_time = root.child_value("ServerTime");
  return e;
}

bool IsTokenExpiryCode(std::string_view code) {
  return code == "SecurityTokenExpired" || code == "InvalidSecurityToken" ||
         code == "ExpiredToken" || code == "InvalidToken" || code == "TokenRefreshRequired" ||
         code == "SecurityTokenNotValid";
}

bool IsThrottlingCode(std::string_view code) {
  return code == "SlowDown" || code.find("QpsLimitExceeded") != std::string_view::npos ||
         code == "Throttling" || code == "ThrottlingException" || code == "RequestThrottled" ||
         code == "TooManyRequests" || code == "RequestLimitExceeded";
}

MappedError MapErrorResponse(long http_status, const http::HeaderList& headers,
                             std::string_view body, const Dialect& dialect, const ErrorContext& c) {
  ServiceErrorBody e = ParseErrorXml(body).value_or(ServiceErrorBody{});
  ServiceErrorDetails details;
  details.http_status = static_cast<int>(http_status);
  details.code = e.code;
  details.server_message = e.message;
  details.request_id = e.request_id;
  if (details.request_id.empty()) {
    if (const std::string* id = FindHeader(headers, dialect.request_id_header)) {
      details.request_id = *id;
    }
  }
  details.ec = e.ec;
  if (details.ec.empty()) {
    if (const std::string* ec = FindHeader(headers, "x-oss-ec")) details.ec = *ec;
  }

  MappedError out;
  auto make = [&](ErrorCode code, std::string message, bool retryable) {
    out.status = Status(code, std::move(message), retryable);
    out.status.WithService(details);
  };
  const std::string& code = e.code;
  const bool s3 = dialect.protocol == Protocol::kS3;
  std::string status_text = "HTTP " + std::to_string(http_status);
  if (!code.empty()) status_text += " " + code;

  if (!c.source_key.empty() &&
      (code == "NoSuchKey" || (code.empty() && http_status == 404 && !c.key.empty()))) {
    make(
        ErrorCode::kNotFound,
        "the copy source " + Quoted(c.source_key) + " does not exist in bucket " + Quoted(c.bucket),
        false);
  } else if (code == "NoSuchKey" || (code.empty() && http_status == 404 && !c.key.empty())) {
    make(ErrorCode::kNotFound,
         "object " + Quoted(c.key) + " does not exist in bucket " + Quoted(c.bucket), false);
  } else if (code == "NoSuchBucket" || (code.empty() && http_status == 404)) {
    make(ErrorCode::kNoSuchBucket,
         "bucket " + Quoted(c.bucket) + " does not exist at endpoint " + c.endpoint +
             ": check the bucket name and --endpoint/--region",
         false);
  } else if (code == "NoSuchUpload") {
    make(ErrorCode::kNotFound,
         "multipart upload " + Quoted(c.upload_id) + " of " + Quoted(c.key) +
             " does not exist (it was completed or aborted)",
         false);
  } else if (code == "RequestTimeTooSkewed") {
    make(ErrorCode::kRequestTimeTooSkewed,
         "the local clock is off by more than 15 minutes: sync it with NTP", true);
    out.recovery = Recovery::kCorrectClock;
  } else if (IsTokenExpiryCode(code)) {
    make(ErrorCode::kTokenExpired,
         "the STS security token" + FromSource(c) +
             " has expired or is invalid: refresh the credentials" + ServerSays(e),
         true);
    out.recovery = Recovery::kRefreshCredentials;
  } else if (code == "InvalidAccessKeyId") {
    make(ErrorCode::kInvalidAccessKeyId,
         "the server does not know the access key id" + FromSource(c) +
             ", or it is disabled: check the access key id and that the endpoint belongs to "
             "the right cloud and account",
         false);
  } else if (code == "SignatureDoesNotMatch") {
    make(ErrorCode::kSignatureDoesNotMatch,
         "the server computed a different request signature for " + What(c) +
             ": check the access key secret" + FromSource(c),
         false);
  } else if (code == "AccessDenied" || code == "AllAccessDisabled") {
    make(ErrorCode::kAccessDenied,
         "access denied for " + What(c) + ServerSays(e) +
             ": check the RAM or bucket policy of these credentials" + FromSource(c) +
             ", and that --region matches the bucket's region",
         false);
  } else if (code == "FileAlreadyExists" ||
             (http_status == 412 && s3 && c.forbid_overwrite && c.if_match.empty())) {
    make(ErrorCode::kAlreadyExists,
         "object " + Quoted(c.key) + " already exists in bucket " + Quoted(c.bucket) +
             " and the write must not replace it",
         false);
  } else if (http_status == 412 && s3 && c.forbid_overwrite) {
    // S3 answers both conditions of a copy with the same 412.
    make(ErrorCode::kPreconditionFailed,
         "copy to " + Quoted(c.key) + " refused: the source " + Quoted(c.source_key) +
             " changed (If-Match " + c.if_match + ") or the destination already exists",
         false);
  } else if ((code == "PreconditionFailed" || http_status == 412) && !c.source_key.empty()) {
    make(ErrorCode::kPreconditionFailed,
         "the copy source " + Quoted(c.source_key) + " changed on the server (If-Match " +
             c.if_match + " failed)",
         false);
  } else if (code == "PreconditionFailed" || http_status == 412) {
    make(ErrorCode::kPreconditionFailed,
         "object " + Quoted(c.key) + " changed on the server (If-Match " + c.if_match +
             " failed): reopen the file",
         false);
  } else if (code == "PositionNotEqualToLength") {
    make(ErrorCode::kPreconditionFailed,
         "append to " + Quoted(c.key) +
             " refused: the object's length is not where this writer left it (another writer "
             "appended to it, or it was replaced)",
         false);
  } else if (code == "ObjectNotAppendable") {
    make(ErrorCode::kNotSupported,
         "object " + Quoted(c.key) +
             " is not appendable (it was written by PutObject or a "
             "multipart upload)",
         false);
  } else if (code == "EntityTooSmall" || code == "InvalidPart" || code == "InvalidPartOrder") {
    // The upload pipeline's bug (a short middle part, a wrong ETag, parts out of order): a
    // retry sends the same list.
    make(ErrorCode::kInvalidArgument,
         "the server refused the parts of " + What(c) + " (" + status_text + ")" + ServerSays(e),
         false);
  } else if (code == "BadDigest") {
    // The body arrived different from its Content-MD5: damaged on the way, so resend it.
    make(ErrorCode::kIntegrity,
         "the body of " + What(c) + " arrived damaged (Content-MD5 mismatch)", true);
  } else if (code == "IncompleteBody") {
    // Fewer bytes arrived than Content-Length said (a connection cut mid-body): the server
    // kept nothing, so the request is sent again.
    make(ErrorCode::kNetwork, "the body of " + What(c) + " arrived cut short (" + status_text + ")",
         true);
  } else if (code == "EntityTooLarge") {
    make(ErrorCode::kTooBig,
         What(c) + " is larger than the service accepts in one request" + ServerSays(e), false);
  } else if (code == "InvalidRange" || http_status == 416) {
    make(ErrorCode::kInvalidRange,
         "the requested range starts at or past the end of object " + Quoted(c.key), false);
  } else if (IsThrottlingCode(code) || http_status == 429) {
    make(ErrorCode::kThrottled,
         "the server is throttling requests (" + status_text + ") for " + What(c), true);
  } else if (code == "RequestTimeout" || http_status == 408) {
    make(ErrorCode::kTimeout,
         "the server timed out waiting for " + What(c) + " (" + status_text + ")", true);
  } else if (http_status == 405 || http_status == 501 || code == "NotImplemented") {
    make(ErrorCode::kNotSupported,
         "the server does not support " + What(c) + " (" + status_text + ")" + ServerSays(e),
         false);
  } else if (http_status >= 500) {
    make(ErrorCode::kServerError,
         "server error for " + What(c) + " (" + status_text + ")" + ServerSays(e), true);
  } else if (http_status == 401 || http_status == 403) {
    make(ErrorCode::kAccessDenied,
         What(c) + " was refused (" + status_text + ")" + ServerSays(e) +
             ": the access key, its secret, the clock, --region or a policy is wrong" +
             FromSource(c),
         false);
  } else if (http_status == 400) {
    make(ErrorCode::kInvalidArgument,
         "the server rejected " + What(c) + " (" + status_text + ")" + ServerSays(e), false);
  } else {
    make(ErrorCode::kProtocol,
         "unexpected response to " + What(c) + " (" + status_text + ")" + ServerSays(e), false);
  }
  return out;
}

}  // namespace ossmount::object
