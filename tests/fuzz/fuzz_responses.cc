// Fuzz target: everything else the client parses from a server response: the <Error> XML
// body (object::ParseErrorXml) and its mapping to a Status (MapErrorResponse), HEAD headers
// (ParseHeadResponse), Content-Range, the CRC-64 header, the multipart-upload XML bodies
// (Initiate, Complete, ListMultipartUploads), the copy results and DeleteMultiple's reply.
//
// Input layout: byte 0 picks the HTTP status (300..599), byte 1 the dialect (OSS or S3), then
// "name: value" header lines up to a blank line, then the body.
//
// Invariants: an error response always maps to a non-OK Status with a message; a parsed
// Content-Range satisfies first <= last < total; a parsed HEAD response's size is the
// Content-Length header; a parsed multipart upload id or ETag is never empty; a listed open
// upload has a key and an id, and a truncated page a marker to go on from.
#include <strings.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "object/dialect.h"
#include "object/error_mapping.h"
#include "object/response_parsers.h"

using namespace ossmount;
using namespace ossmount::object;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  long http_status = 300 + data[0] % 200 + (data[0] >= 200 ? 100 : 0);
  const Dialect& dialect = Dialect::For(data[1] % 2 == 0 ? Protocol::kOss : Protocol::kS3);
  std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);

  http::HeaderList headers;
  while (!rest.empty()) {
    size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  std::string_view body = rest;

  (void)ParseErrorXml(body);
  ErrorContext context{"GET", "bucket", "key", "https://127.0.0.1", "test", "\"etag\"",
                       "",    "",       false};
  MappedError mapped = MapErrorResponse(http_status, headers, body, dialect, context);
  FUZZ_CHECK(!mapped.status.ok());
  FUZZ_CHECK(!mapped.status.message().empty());

  for (const auto& [name, value] : headers) {
    auto range = ParseContentRange(value);
    if (range.ok()) FUZZ_CHECK(range->first <= range->last && range->last < range->total);
    auto number = ParseUint64(value);
    if (number) FUZZ_CHECK(!value.empty());
  }
  (void)ResponseCrc64(headers, dialect);
  auto head = ParseHeadResponse("key", headers, dialect);
  if (head.ok()) {
    const std::string* length = nullptr;
    for (const auto& [name, value] : headers) {
      if (name.size() == 14 && strncasecmp(name.c_str(), "content-length", 14) == 0) {
        length = &value;
        break;
      }
    }
    FUZZ_CHECK(length != nullptr && ParseUint64(*length) == head->size);
  }
  auto upload = ParseInitiateMultipartXml(body);
  if (upload.ok()) FUZZ_CHECK(!upload->empty());
  auto etag = ParseCompleteMultipartXml(body);
  if (etag.ok()) FUZZ_CHECK(!etag->empty());
  for (const char* root : {"CopyObjectResult", "CopyPartResult"}) {
    auto copied = ParseCopyResultXml(body, root);
    if (copied.ok()) FUZZ_CHECK(!copied->empty());
  }
  auto uploads = ParseListMultipartUploadsXml(body);
  if (uploads.ok()) {
    for (const auto& u : uploads->uploads) FUZZ_CHECK(!u.key.empty() && !u.upload_id.empty());
    if (uploads->truncated) FUZZ_CHECK(!uploads->next_key_marker.empty());
  }
  (void)ParseDeleteResultXml(body);
  return 0;
}
