#include "object/response_parsers.h"

#include <charconv>
#include <pugixml.hpp>

#include "common/time_util.h"
#include "object/error_mapping.h"
#include "object/headers.h"

namespace ossmount::object {

std::optional<uint64_t> ParseUint64(std::string_view text) {
  uint64_t value = 0;
  if (text.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

Result<ContentRange> ParseContentRange(std::string_view value) {
  auto bad = [&] {
    return Status(ErrorCode::kProtocol, "malformed Content-Range '" + std::string(value) + "'");
  };
  constexpr std::string_view kPrefix = "bytes ";
  if (value.substr(0, kPrefix.size()) != kPrefix) return bad();
  std::string_view rest = value.substr(kPrefix.size());
  size_t dash = rest.find('-');
  size_t slash = rest.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
    return bad();
  }
  auto first = ParseUint64(rest.substr(0, dash));
  auto last = ParseUint64(rest.substr(dash + 1, slash - dash - 1));
  auto total = ParseUint64(rest.substr(slash + 1));
  if (!first || !last || !total || *last < *first || *total <= *last) return bad();
  return ContentRange{*first, *last, *total};
}

std::optional<uint64_t> ResponseCrc64(const http::HeaderList& headers, const Dialect& dialect) {
  if (!dialect.crc64_header) return std::nullopt;
  const std::string* value = FindHeader(headers, dialect.crc64_header);
  if (!value) return std::nullopt;
  return ParseUint64(*value);
}

Result<ObjectInfo> ParseHeadResponse(const std::string& key, const http::HeaderList& headers,
                                     const Dialect& dialect) {
  ObjectInfo info;
  info.key = key;
  const std::string* length = FindHeader(headers, "content-length");
  if (!length) return Status(ErrorCode::kProtocol, "HEAD response has no Content-Length");
  auto size = ParseUint64(*length);
  if (!size) {
    return Status(ErrorCode::kProtocol, "HEAD response has a bad Content-Length '" + *length + "'");
  }
  info.size = *size;
  if (const std::string* etag = FindHeader(headers, "etag")) info.etag = *etag;
  if (const std::string* modified = FindHeader(headers, "last-modified")) {
    auto t = ParseRfc1123(*modified);
    if (t.ok()) info.mtime_sec = t.value();
  }
  info.crc64 = ResponseCrc64(headers, dialect);
  if (const std::string* sc = FindHeader(headers, dialect.storage_class_header)) {
    info.storage_class = *sc;
  }
  if (const std::string* ct = FindHeader(headers, "content-type")) info.content_type = *ct;
  return info;
}

Result<std::string> ParseInitiateMultipartXml(std::string_view xml) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size())) {
    return Status(ErrorCode::kProtocol, "malformed InitiateMultipartUpload response");
  }
  std::string id = doc.child("InitiateMultipartUploadResult").child_value("UploadId");
  if (id.empty()) {
    return Status(ErrorCode::kProtocol, "InitiateMultipartUpload response has no UploadId");
  }
  return id;
}

Result<std::string> ParseCompleteMultipartXml(std::string_view xml) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size())) {
    return Status(ErrorCode::kProtocol, "malformed CompleteMultipartUpload response");
  }
  if (pugi::xml_node error = doc.child("Error")) {
    std::string code = error.child_value("Code");
    bool retryable =
        code == "InternalError" || IsThrottlingCode(code) || code == "ServiceUnavailable";
    Status status(ErrorCode::kServerError,
                  "CompleteMultipartUpload failed after HTTP 200: " + code + ": " +
                      error.child_value("Message"),
                  retryable);
    ServiceErrorDetails details;
    details.http_status = 200;
    details.code = code;
    details.request_id = error.child_value("RequestId");
    details.server_message = error.child_value("Message");
    status.WithService(details);
    return status;
  }
  pugi::xml_node root = doc.child("CompleteMultipartUploadResult");
  if (!root) return Status(ErrorCode::kProtocol, "unexpected CompleteMultipartUpload response");
  std::string etag = root.child_value("ETag");
  if (etag.empty()) {
    // A "success" that names no object version cannot be trusted to have stored anything.
    return Status(ErrorCode::kProtocol, "CompleteMultipartUpload response has no ETag");
  }
  return etag;
}

}  // namespace ossmount::object
