// Request building: what each ObjectClient operation sends, and how a request becomes a
// URL plus the SignableRequest the signer sees.
//
// Two steps, both pure functions (no clock, no credentials, no I/O):
//   1. An operation builder (ListSpec, GetSpec, ...) says what to send: method, key,
//      decoded query parameters, operation headers, body.
//   2. BuildWireRequest() places it on an endpoint: virtual-hosted
//      (scheme://bucket.host/key) or path style (scheme://host/bucket/key), the key
//      percent-encoded with '/' kept, the query encoded, and a Host header set (AWS SigV4
//      signs it). The signer then adds date, token and Authorization headers.
#pragma once

#include "common/xml_escape.h"

#include <memory>
#include <string>
#include <vector>

#include "auth/signer.h"
#include "http/fetch_engine.h"
#include "object/dialect.h"
#include "object/endpoint.h"
#include "ossmount/object_client.h"

namespace ossmount::object {

struct RequestSpec {
  std::string method;
  std::string key;     // raw key, "" for bucket-level requests
  auth::Params query;  // decoded; a "" value sends the bare name ("?uploads")
  http::HeaderList headers;
  SharedBytes body;  // PUT/POST body; empty for none
  // Headers to sign beyond the ones each scheme signs anyway (x-oss-*, x-amz-*, Content-MD5,
  // Content-Type): lowercase names, passed as SignableRequest::additional_headers.
  std::vector<std::string> signed_headers;
};

struct WireRequest {
  std::string url;                 // fully encoded
  auth::SignableRequest signable;  // method, bucket, key, path, query, headers (with Host)
};

WireRequest BuildWireRequest(const RequestSpec& spec, const Endpoint& endpoint,
                             const std::string& bucket, bool path_style);

// "a=1&b=x%2Fy&uploads": names and values percent-encoded, bare names for "" values.
std::string EncodeQuery(const auth::Params& query);

// ---- operations --------------------------------------------------------------------------
// ListObjectsV2: list-type=2, prefix, delimiter, max-keys, continuation-token (each only
// when non-empty), encoding-type=url.
RequestSpec ListSpec(const ListRequest& request);
// GET with Range when offset > 0 or a length is set ("bytes=a-b" or "bytes=a-"), If-Match
// when set, and x-oss-range-behavior: standard on OSS. REQUIRES: length, if set, is > 0.
RequestSpec GetSpec(const GetRequest& request, const Dialect& dialect);
// The Range header value GetSpec sends, or "" for a whole-object GET.
std::string RangeHeaderValue(uint64_t offset, std::optional<uint64_t> length);
RequestSpec HeadSpec(const std::string& key);
// Content-MD5 on dialects that send it (S3); the forbid-overwrite header when asked
// (x-oss-forbid-overwrite: true; S3 If-None-Match: *, signed so no proxy can drop it).
RequestSpec PutSpec(const std::string& key, SharedBytes body, const WriteOptions& options,
                    const Dialect& dialect);
RequestSpec InitiateMultipartSpec(const std::string& key, const WriteOptions& options,
                                  const Dialect& dialect);
RequestSpec UploadPartSpec(const std::string& key, const std::string& upload_id, int part_number,
                           SharedBytes body, const Dialect& dialect);

// The source of a server-side copy: /bucket/key (the key percent-encoded, '/' kept) in the
// dialect's copy-source header, plus <header>-if-match when etag is set.
struct CopySource {
  std::string bucket;
  std::string key;
  std::string etag;  // quoted; "" = any version
};
// The copy-source header value: "/bucket/percent-encoded-key".
std::string CopySourceValue(const std::string& bucket, const std::string& key);
// UploadPartCopy of bytes [offset, offset + length). REQUIRES: length > 0.
RequestSpec UploadPartCopySpec(const std::string& key, const std::string& upload_id,
                               int part_number, const CopySource& source, uint64_t offset,
                               uint64_t length, const Dialect& dialect);
// The body lists the parts in the order given (callers pass ascending part numbers).
RequestSpec CompleteMultipartSpec(const std::string& key, const std::string& upload_id,
                                  const std::vector<PartInfo>& parts, const WriteOptions& options,
                                  const Dialect& dialect);
RequestSpec AbortMultipartSpec(const std::string& key, const std::string& upload_id);
// GET /?uploads with prefix, key-marker and upload-id-marker (each only when non-empty),
// max-uploads=1000 and encoding-type=url.
RequestSpec ListMultipartUploadsSpec(const std::string& prefix, const std::string& key_marker,
                                     const std::string& upload_id_marker);
RequestSpec CopyObjectSpec(const CopySource& source, const std::string& dest_key,
                           const WriteOptions& options, const Dialect& dialect);
// A link at `key` to `target`. OSS: PUT ?symlink with x-oss-symlink-target (escaped). S3: the
// target as the object's bytes with x-amz-meta-mode S_IFLNK | 0777 (decimal), as s3fs writes.
RequestSpec PutSymlinkSpec(const std::string& key, const std::string& target,
                           const WriteOptions& options, const Dialect& dialect);
// OSS AppendObject: POST ?append&position=N with the body; the first append's Content-Type
// is the object's.
RequestSpec AppendSpec(const std::string& key, uint64_t position, SharedBytes body,
                       const Dialect& dialect);
// OSS: GET ?symlink (the target comes back in x-oss-symlink-target). S3: GET of the object.
RequestSpec GetSymlinkSpec(const std::string& key, const Dialect& dialect);
RequestSpec DeleteSpec(const std::string& key);
// POST /?delete with <Delete><Quiet>true</Quiet><Object><Key>..</Key></Object>..</Delete>
// (keys XML-escaped) and Content-MD5, which both services require here.
RequestSpec DeleteMultipleSpec(const std::vector<std::string>& keys);

}  // namespace ossmount::object
