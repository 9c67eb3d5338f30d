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
  std::shared_ptr<const std::string> body;  // PUT/POST body, or null
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
RequestSpec PutSpec(const std::string& key, std::shared_ptr<const std::string> body);
RequestSpec InitiateMultipartSpec(const std::string& key);
RequestSpec UploadPartSpec(const std::string& key, const std::string& upload_id, int part_number,
                           std::shared_ptr<const std::string> body);
// The body lists the parts in the order given (callers pass ascending part numbers).
RequestSpec CompleteMultipartSpec(const std::string& key, const std::string& upload_id,
                                  const std::vector<PartInfo>& parts);
RequestSpec AbortMultipartSpec(const std::string& key, const std::string& upload_id);
RequestSpec DeleteSpec(const std::string& key);

}  // namespace ossmount::object
