// The intermediate strings of each signature scheme (canonical request, string to sign,
// signing key), exposed so tests can compare them byte for byte with the official vectors and
// so the verifiers recompute exactly what the signers computed.
//
// Internal to src/auth and its tests. Pure functions of their inputs; thread-safe.
// None of these functions set headers: callers pass the request as it will be (or was) sent.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/signer.h"

namespace ossmount::auth::internal {

// ASCII lowercase.
std::string ToLower(std::string_view s);
// Strips leading and trailing spaces and tabs.
std::string_view Trim(std::string_view s);
// Every header whose lowercased name satisfies `want`, as (lowercase name, trimmed value),
// sorted by name; repeated names are joined with ',' in the order they appear.
std::vector<std::pair<std::string, std::string>> CollectHeaders(
    const SignableRequest& request, const std::function<bool(const std::string&)>& want);

// ---- OSS V1 ------------------------------------------------------------------------------
// True for the query names that OSS V1 signs: the go-sdk-v2 and python-sdk sub-resource
// lists, plus every name starting with "x-oss-".
bool IsOssV1SubResource(std::string_view name);
// "/bucket/key[?sub&sub=v]" with the raw key. `extra_subresources`
// are further query names to treat as sub-resources.
std::string OssV1CanonicalResource(const SignableRequest& request,
                                   const std::vector<std::string>& extra_subresources = {});
// The full string to sign. `date_slot` is the Date header value (header signing) or the
// Expires epoch seconds (presigned URLs).
std::string OssV1StringToSign(const SignableRequest& request, std::string_view date_slot,
                              const std::vector<std::string>& extra_subresources = {});
// Base64(HMAC-SHA1(secret, string_to_sign)).
std::string OssV1Signature(std::string_view secret, std::string_view string_to_sign);

// ---- OSS V4 ------------------------------------------------------------------------------
struct OssV4Parts {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signing_key_hex;
  std::string signature;           // lowercase hex
  std::string additional_headers;  // "abc;zabc" after filtering, "" when none
  std::string scope;               // "20231216/cn-hangzhou/oss/aliyun_v4_request"
};
// "/bucket/key" percent-encoded with '/' kept.
std::string OssV4CanonicalUri(std::string_view bucket, std::string_view key);
// All params encoded, sorted by encoded name (then value), bare name for empty values.
std::string OssV4CanonicalQuery(const Params& query);
// request.additional_headers lowercased, sorted, de-duplicated, without names signed anyway
// (x-oss-*, content-type, content-md5) and without names absent from the request.
std::vector<std::string> OssV4FilteredAdditionalHeaders(const SignableRequest& request);
// The derived key HMAC chain of §3.3 (raw bytes).
std::string OssV4SigningKey(std::string_view secret, std::string_view yyyymmdd,
                            std::string_view region, std::string_view product);
// Everything from the request as sent. `iso_datetime` is "20231216T162057Z" (the value of
// x-oss-date, in the header or the query). The hashed-payload line is UNSIGNED-PAYLOAD
// unless the request carries another x-oss-content-sha256 value.
OssV4Parts ComputeOssV4(const SignableRequest& request, std::string_view secret,
                        std::string_view iso_datetime, std::string_view region,
                        std::string_view product);

// "OSS4-HMAC-SHA256 Credential=<ak>/<scope>[,AdditionalHeaders=<h>],Signature=<hex>"
std::string OssV4Authorization(std::string_view access_key_id, const OssV4Parts& parts);

// ---- AWS SigV4 -----------------------------------------------------------------------------
struct AwsSigV4Parts {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signing_key_hex;
  std::string signature;       // lowercase hex
  std::string signed_headers;  // "host;x-amz-date"
  std::string scope;           // "20150830/us-east-1/service/aws4_request"
};
// SignableRequest::path encoded once, '/' kept; "/" when empty.
std::string AwsSigV4CanonicalUri(std::string_view path);
// All params encoded, sorted by encoded name (then value), "name=" for empty values.
std::string AwsSigV4CanonicalQuery(const Params& query);
// The headers a signer signs: host, every x-amz-*, content-type, content-md5, and the
// request's additional_headers; lowercased, sorted, only those present.
std::vector<std::string> AwsSigV4DefaultSignedHeaders(const SignableRequest& request);
std::string AwsSigV4SigningKey(std::string_view secret, std::string_view yyyymmdd,
                               std::string_view region, std::string_view service);
// Signs exactly `signed_headers` (lowercase names; missing ones are signed with an empty
// value, which only a tampered request produces). `payload_hash` is the last line of the
// canonical request.
AwsSigV4Parts ComputeAwsSigV4(const SignableRequest& request, std::string_view secret,
                              std::string_view amz_date, std::string_view region,
                              std::string_view service,
                              const std::vector<std::string>& signed_headers,
                              std::string_view payload_hash);

// "AWS4-HMAC-SHA256 Credential=<ak>/<scope>, SignedHeaders=<h>, Signature=<hex>"
std::string AwsSigV4Authorization(std::string_view access_key_id, const AwsSigV4Parts& parts);

inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
inline constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

}  // namespace ossmount::auth::internal
