#include "object/get_response.h"

#include <cstring>

#include "common/crc64.h"
#include "common/time_util.h"
#include "object/headers.h"
#include "object/response_parsers.h"

namespace ossmount::object {
namespace {

char* TargetData(const GetTarget& target) {
  return target.growable ? target.growable->data() : target.data;
}

Status ShortBody(const GetRequest& request, uint64_t got, uint64_t expected) {
  return Status(ErrorCode::kIntegrity,
                "GET '" + request.key + "': short body, " + std::to_string(got) + " of " +
                    std::to_string(expected) + " bytes",
                true);
}

// What a GET pinned by If-Match gets when the object is no longer the pinned one; `why`
// says how the reply showed it.
Status ChangedSinceOpen(const GetRequest& request, const std::string& why) {
  return Status(ErrorCode::kPreconditionFailed,
                "GET '" + request.key + "': the object changed since it was opened (" + why + ")");
}

Status OtherVersion(const GetRequest& request, const std::string& etag) {
  return ChangedSinceOpen(request, "If-Match " + request.if_match + ", the reply has ETag " + etag);
}

}  // namespace

Status CheckGetResponse(const GetRequest& request, const GetTarget& target, const http::Response& r,
                        const Dialect& dialect, bool verify_crc64, GetResult* result) {
  const bool ranged = request.offset > 0 || request.length.has_value();
  uint64_t bytes = target.growable ? target.growable->size() : r.body_bytes;
  GetResult out;
  if (const std::string* etag = FindHeader(r.headers, "etag")) out.etag = *etag;
  if (const std::string* modified = FindHeader(r.headers, "last-modified")) {
    auto t = ParseRfc1123(*modified);
    if (t.ok()) out.mtime_sec = t.value();
  }
  out.crc64 = ResponseCrc64(r.headers, dialect);
  bool whole_object_in_target = false;
  if (r.status == 206) {
    const std::string* header = FindHeader(r.headers, "content-range");
    if (!header)
      return Status(ErrorCode::kProtocol, "GET '" + request.key + "': 206 without Content-Range");
    auto range = ParseContentRange(*header);
    if (!range.ok()) return range.status().Prefix("GET '" + request.key + "'");
    if (range->first != request.offset) {
      return Status(ErrorCode::kProtocol, "GET '" + request.key + "': asked for offset " +
                                              std::to_string(request.offset) +
                                              ", got Content-Range '" + *header + "'");
    }
    uint64_t expected = range->last - range->first + 1;
    if (request.length && expected > *request.length) {
      return Status(ErrorCode::kProtocol,
                    "GET '" + request.key + "': the server sent more than the range asked for");
    }
    if (bytes != expected) return ShortBody(request, bytes, expected);
    out.object_size = range->total;
    whole_object_in_target = range->first == 0 && expected == range->total;
  } else if (r.status == 200) {
    if (const std::string* length = FindHeader(r.headers, "content-length")) {
      auto expected = ParseUint64(*length);
      if (expected && *expected != bytes) return ShortBody(request, bytes, *expected);
    }
    out.object_size = bytes;
    whole_object_in_target = true;
  } else {
    return Status(ErrorCode::kProtocol,
                  "GET '" + request.key + "': unexpected HTTP " + std::to_string(r.status));
  }

  // OSS and S3 send an ETag with every object body. A 2xx reply without one is not an
  // object (a proxy's error page sent as 200, a broken cache): its bytes must not reach the
  // reader. A reply to If-Match with another ETag is another version of the object.
  if (out.etag.empty()) {
    return Status(ErrorCode::kProtocol,
                  "GET '" + request.key +
                      "': the response has no ETag, so it is not an object (a proxy's error "
                      "page?)",
                  true);
  }
  if (!request.if_match.empty() && out.etag != request.if_match) {
    return OtherVersion(request, out.etag);
  }

  if (whole_object_in_target && verify_crc64 && out.crc64) {
    uint64_t crc = Crc64(0, TargetData(target), bytes);
    if (crc != *out.crc64) {
      return Status(ErrorCode::kIntegrity,
                    "GET '" + request.key + "': CRC-64 mismatch (computed " + std::to_string(crc) +
                        ", server says " + std::to_string(*out.crc64) + ")",
                    true);
    }
  }

  if (r.status == 200 && ranged) {
    // The server ignored the Range header: keep only the part that was asked for.
    if (request.offset >= bytes) {
      return Status(ErrorCode::kInvalidRange,
                    "the requested range starts at or past the end of "
                    "object '" +
                        request.key + "'");
    }
    uint64_t want = bytes - request.offset;
    if (request.length && *request.length < want) want = *request.length;
    char* data = TargetData(target);
    std::memmove(data, data + request.offset, want);
    if (target.growable) target.growable->resize(want);
    bytes = want;
  }
  out.bytes = bytes;
  *result = std::move(out);
  return Status::Ok();
}

Status ExplainGetOverflow(const GetRequest& request, const http::Response& r) {
  if (request.if_match.empty()) return Status::Ok();
  const std::string* etag = FindHeader(r.headers, "etag");
  if (etag && *etag != request.if_match) return OtherVersion(request, *etag);
  const bool ranged = request.offset > 0 || request.length.has_value();
  if (ranged || r.status != 200) return Status::Ok();
  return ChangedSinceOpen(request, "its body is larger than the size pinned at open");
}

bool MayUseBodyEarly(const GetRequest& request, long status, const http::HeaderList& headers,
                     const Dialect& dialect, bool verify_crc64) {
  if (request.if_match.empty() || status != 206) return false;
  const std::string* etag = FindHeader(headers, "etag");
  if (etag == nullptr || *etag != request.if_match) return false;
  const std::string* header = FindHeader(headers, "content-range");
  if (header == nullptr) return false;
  auto range = ParseContentRange(*header);
  if (!range.ok() || range->first != request.offset) return false;
  if (request.length && range->last - range->first + 1 > *request.length) return false;
  const bool whole_object = range->first == 0 && range->last + 1 == range->total;
  return !(whole_object && verify_crc64 && ResponseCrc64(headers, dialect));
}

uint64_t ResumableBytes(const GetRequest& request, uint64_t reported) {
  if (request.if_match.empty() || !request.length || reported >= *request.length) return 0;
  return reported;
}

GetRequest RemainderOf(const GetRequest& request, uint64_t kept) {
  GetRequest rest = request;
  rest.offset += kept;
  rest.length = *request.length - kept;
  return rest;
}

}  // namespace ossmount::object
