#include "object/response_parsers.h"

#include <charconv>
#include <pugixml.hpp>

#include "common/strings.h"
#include "common/time_util.h"
#include "common/url.h"
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
  const std::string_view meta_prefix =
      dialect.protocol == Protocol::kS3 ? "x-amz-meta-" : "x-oss-meta-";
  for (const auto& [name, value] : headers) {
    const std::string_view n = name;
    if (n.size() > meta_prefix.size() &&
        EqualsIgnoreCase(n.substr(0, meta_prefix.size()), meta_prefix)) {
      info.user_meta.emplace_back(ToLowerAscii(n.substr(meta_prefix.size())), value);
    }
  }
  info.has_user_meta = true;
  if (const std::string* type = FindHeader(headers, "x-oss-object-type")) {
    info.symlink = *type == "Symlink";
    info.appendable = *type == "Appendable";
  }
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

namespace {

// The <Error> document a 200 can carry (S3 sends errors this way for Complete, copies and
// batch deletes once it has started answering); OK when the document is something else.
Status ErrorIn200(const pugi::xml_document& doc, const char* operation) {
  pugi::xml_node error = doc.child("Error");
  if (!error) return Status::Ok();
  std::string code = error.child_value("Code");
  bool retryable =
      code == "InternalError" || IsThrottlingCode(code) || code == "ServiceUnavailable";
  Status status(ErrorCode::kServerError,
                std::string(operation) + " failed after HTTP 200: " + code + ": " +
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

Result<std::string> Decoded(const char* text, bool url_encoded, const char* operation,
                            const char* field) {
  if (!url_encoded) return std::string(text);
  auto decoded = PercentDecode(text, /*plus_as_space=*/true);
  if (!decoded.ok()) {
    return Status(ErrorCode::kProtocol, std::string("malformed ") + operation +
                                            " response: bad url encoding in " + field);
  }
  return decoded;
}

}  // namespace

Result<std::string> ParseCompleteMultipartXml(std::string_view xml) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size())) {
    return Status(ErrorCode::kProtocol, "malformed CompleteMultipartUpload response");
  }
  Status error = ErrorIn200(doc, "CompleteMultipartUpload");
  if (!error.ok()) return error;
  pugi::xml_node root = doc.child("CompleteMultipartUploadResult");
  if (!root) return Status(ErrorCode::kProtocol, "unexpected CompleteMultipartUpload response");
  std::string etag = root.child_value("ETag");
  if (etag.empty()) {
    // A "success" that names no object version cannot be trusted to have stored anything.
    return Status(ErrorCode::kProtocol, "CompleteMultipartUpload response has no ETag");
  }
  return etag;
}

Result<std::string> ParseCopyResultXml(std::string_view xml, const char* root_name) {
  pugi::xml_document doc;
  const std::string what = root_name;
  if (!doc.load_buffer(xml.data(), xml.size())) {
    return Status(ErrorCode::kProtocol, "malformed " + what + " response");
  }
  Status error = ErrorIn200(doc, root_name);
  if (!error.ok()) return error;
  pugi::xml_node root = doc.child(root_name);
  if (!root) return Status(ErrorCode::kProtocol, "unexpected response to a copy (no " + what + ")");
  std::string etag = root.child_value("ETag");
  if (etag.empty()) return Status(ErrorCode::kProtocol, what + " has no ETag");
  return etag;
}

Result<UploadsPage> ParseListMultipartUploadsXml(std::string_view xml) {
  auto malformed = [](const std::string& what) {
    return Status(ErrorCode::kProtocol, "malformed ListMultipartUploads response: " + what);
  };
  pugi::xml_document doc;
  // Keep whitespace-only text (a key of spaces) byte for byte, as listings do.
  unsigned flags = (pugi::parse_default | pugi::parse_ws_pcdata) & ~pugi::parse_eol;
  if (!doc.load_buffer(xml.data(), xml.size(), flags)) return malformed("XML error");
  pugi::xml_node root = doc.child("ListMultipartUploadsResult");
  if (!root) return malformed("no ListMultipartUploadsResult element");
  const bool url_encoded = std::string_view(root.child_value("EncodingType")) == "url";
  UploadsPage page;
  std::string_view truncated = root.child_value("IsTruncated");
  page.truncated = truncated == "true" || truncated == "True" || truncated == "TRUE";
  for (pugi::xml_node u : root.children("Upload")) {
    OpenUpload upload;
    auto key = Decoded(u.child_value("Key"), url_encoded, "ListMultipartUploads", "Key");
    if (!key.ok()) return key.status();
    upload.key = std::move(key.value());
    upload.upload_id = u.child_value("UploadId");
    if (upload.key.empty() || upload.upload_id.empty()) {
      return malformed("an Upload entry has no Key or UploadId");
    }
    std::string_view initiated = u.child_value("Initiated");
    if (!initiated.empty()) {
      auto t = ParseIso8601(initiated);
      if (!t.ok()) return malformed("bad Initiated for key '" + upload.key + "'");
      upload.initiated_sec = t.value();
    }
    page.uploads.push_back(std::move(upload));
  }
  if (page.truncated) {
    auto marker = Decoded(root.child_value("NextKeyMarker"), url_encoded, "ListMultipartUploads",
                          "NextKeyMarker");
    if (!marker.ok()) return marker.status();
    page.next_key_marker = std::move(marker.value());
    page.next_upload_id_marker = root.child_value("NextUploadIdMarker");
    if (page.next_key_marker.empty()) {
      return malformed("IsTruncated is true but NextKeyMarker is missing");
    }
  }
  return page;
}

Result<std::vector<DeleteFailure>> ParseDeleteResultXml(std::string_view xml) {
  std::vector<DeleteFailure> failures;
  if (xml.find_first_not_of(" \t\r\n") == std::string_view::npos) return failures;
  pugi::xml_document doc;
  unsigned flags = (pugi::parse_default | pugi::parse_ws_pcdata) & ~pugi::parse_eol;
  if (!doc.load_buffer(xml.data(), xml.size(), flags)) {
    return Status(ErrorCode::kProtocol, "malformed DeleteMultipleObjects response");
  }
  Status error = ErrorIn200(doc, "DeleteMultipleObjects");
  if (!error.ok()) return error;
  pugi::xml_node root = doc.child("DeleteResult");
  if (!root) return Status(ErrorCode::kProtocol, "unexpected DeleteMultipleObjects response");
  const bool url_encoded = std::string_view(root.child_value("EncodingType")) == "url";
  for (pugi::xml_node e : root.children("Error")) {
    DeleteFailure f;
    auto key = Decoded(e.child_value("Key"), url_encoded, "DeleteMultipleObjects", "Key");
    f.key = key.ok() ? std::move(key.value()) : std::string(e.child_value("Key"));
    f.code = e.child_value("Code");
    f.message = e.child_value("Message");
    if (f.code == "NoSuchKey") continue;
    failures.push_back(std::move(f));
  }
  return failures;
}

}  // namespace ossmount::object
