// Helpers shared by the ObjectApi handler files (object_api.cc, copy_api.cc, multipart_api.cc,
// bucket_api.cc): header access, ETag matching, user metadata, and the write-request checks
// every dialect applies the same way (Content-MD5, forbid-overwrite).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/time_util.h"
#include "object_store.h"
#include "request_info.h"
#include "response.h"

namespace ossmount::testserver {

inline constexpr const char* kXmlDecl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

std::string HeaderValue(const HttpRequest& req, std::string_view name);
bool HasHeader(const HttpRequest& req, std::string_view name);
// The first of the OSS and S3 spellings of a header that is present ("" when neither is).
std::string DialectHeader(const HttpRequest& req, std::string_view oss_name,
                          std::string_view amz_name);
// A query value, or `fallback` when absent.
std::string QueryOr(const RequestInfo& info, std::string_view name, std::string fallback = "");
// A query integer in [min, max]; `fallback` when absent; nullopt when malformed or outside.
std::optional<int> QueryInt(const RequestInfo& info, std::string_view name, int fallback, int min,
                            int max);
inline std::string Quoted(const std::string& etag) { return "\"" + etag + "\""; }
// "2023-12-16T16:20:57.000Z", as listings carry times.
std::string IsoMillis(SystemTime t);

// If-Match / If-None-Match lists: "*" or comma-separated (quoted or bare) etags; case-blind.
bool EtagListMatches(std::string_view list, const std::string& etag);

// x-oss-meta-* and x-amz-meta-* headers, names lowercased without the prefix.
MetaList CollectUserMeta(const HttpRequest& req);

// Checks Content-MD5 against the body. Absent: fine unless `required` (DeleteMultipleObjects),
// where S3 also accepts a correct x-amz-checksum-sha256 or x-amz-checksum-crc32 instead.
// Returns the error response: malformed digest 400 InvalidDigest; mismatch 400 InvalidDigest
// (OSS) or BadDigest (S3); missing 400 MissingArgument (OSS) or InvalidRequest (S3).
std::optional<Response> CheckContentDigest(const RequestInfo& info, const HttpRequest& req,
                                           bool required);

// True when the request must not replace an existing object: x-oss-forbid-overwrite: true
// (either dialect), or on S3 If-None-Match: * when `if_none_match_star` (PutObject and
// CompleteMultipartUpload).
bool OverwriteForbidden(const RequestInfo& info, const HttpRequest& req, bool if_none_match_star);
// What the dialect answers when it was forbidden and the key exists: OSS 409
// FileAlreadyExists, S3 412 PreconditionFailed.
Response OverwriteRefused(const RequestInfo& info);

}  // namespace ossmount::testserver
