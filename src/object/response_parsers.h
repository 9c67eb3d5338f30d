// Parsing successful responses: Content-Range, HEAD headers, the CRC-64 header and the
// multipart-upload XML bodies. Limits: headers come at most 256 lines and 64 KiB per
// response (http/fetch_engine.h), XML bodies at most 16 MiB (object_client_impl.cc), parsed
// by pugixml without recursion. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/fetch_engine.h"
#include "object/dialect.h"
#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace ossmount::object {

struct ContentRange {
  uint64_t first = 0;
  uint64_t last = 0;  // inclusive
  uint64_t total = 0;
};
// "bytes 0-99/1000". kProtocol when malformed, when last < first, or when the total is "*"
// or not past `last`.
Result<ContentRange> ParseContentRange(std::string_view value);

// A decimal unsigned 64-bit number, the whole string. nullopt otherwise.
std::optional<uint64_t> ParseUint64(std::string_view text);

// The dialect's CRC-64 header as a number: nullopt when the dialect has none, the header is
// absent, or it is not a decimal uint64 (a garbled header is not trusted).
std::optional<uint64_t> ResponseCrc64(const http::HeaderList& headers, const Dialect& dialect);

// HEAD: Content-Length (required), ETag, Last-Modified (RFC 1123), CRC-64, storage class,
// Content-Type. kProtocol when Content-Length is missing or not a number.
Result<ObjectInfo> ParseHeadResponse(const std::string& key, const http::HeaderList& headers,
                                     const Dialect& dialect);

// <InitiateMultipartUploadResult><UploadId>: kProtocol when absent or empty.
Result<std::string> ParseInitiateMultipartXml(std::string_view xml);

// <CompleteMultipartUploadResult><ETag>. A 200 whose body is an <Error> document (S3 sends
// errors this way once it has started answering) is returned as kServerError with the
// code, retryable for InternalError/SlowDown-type codes. kProtocol for other bodies,
// including a CompleteMultipartUploadResult without an ETag (or with an empty one).
Result<std::string> ParseCompleteMultipartXml(std::string_view xml);

// <CopyObjectResult><ETag> (CopyObject) or <CopyPartResult><ETag> (UploadPartCopy), `root`
// naming which. A 200 carrying an <Error> document (a copy can fail after S3 has started
// answering) is handled as ParseCompleteMultipartXml does; kProtocol for other bodies or a
// missing ETag.
Result<std::string> ParseCopyResultXml(std::string_view xml, const char* root);

// One page of ListMultipartUploads. Keys and markers are url-decoded when the reply says
// <EncodingType>url</EncodingType>. kProtocol for malformed XML, an upload without Key or
// UploadId, or IsTruncated=true without a NextKeyMarker (the caller would loop forever).
struct UploadsPage {
  std::vector<OpenUpload> uploads;
  bool truncated = false;
  std::string next_key_marker;
  std::string next_upload_id_marker;
};
Result<UploadsPage> ParseListMultipartUploadsXml(std::string_view xml);

// The keys a DeleteMultipleObjects reply lists under <Error>, except NoSuchKey (deleting a
// missing key succeeds). An empty body is a quiet reply with nothing to report. A 200
// carrying an <Error> document is handled as ParseCompleteMultipartXml does.
struct DeleteFailure {
  std::string key;
  std::string code;
  std::string message;
};
Result<std::vector<DeleteFailure>> ParseDeleteResultXml(std::string_view xml);

}  // namespace ossmount::object
