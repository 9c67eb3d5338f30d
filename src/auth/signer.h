// Request signers (OSS V1, OSS V4, AWS SigV4) and, for the test server, their verifiers.
//
// Signers are pure functions of (request, credentials, time): no clock, no I/O, so they are
// tested byte for byte against the official vectors of the OSS and AWS documentation
// (tests/unit/auth/signer_vectors_test.cc).
//
// Thread-safety: a Signer is immutable after construction; Sign() may run concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auth/credentials.h"
#include "common/time_util.h"
#include "ossmount/status.h"

namespace ossmount::auth {

using Params = std::vector<std::pair<std::string, std::string>>;

// A request as signers see it. Bucket and key are separate inputs: OSS signs "/bucket/key"
// whatever the addressing style.
struct SignableRequest {
  std::string method;  // "GET", "PUT", ...
  std::string bucket;  // "" for service-level requests
  std::string key;     // raw UTF-8 key, "" for bucket-level requests
  // The decoded URL path as sent: "/bucket/key" (path style) or "/key" (virtual-hosted).
  // Only AWS SigV4 uses it (its canonical URI is the wire path).
  std::string path;
  Params query;    // decoded names and values, any order; "" value for a bare name ("?uploads")
  Params headers;  // names as sent (any case); the signer appends the headers it sets
  // Headers to sign in addition to the mandatory ones (OSS V4 AdditionalHeaders; SigV4
  // always signs host and every x-amz-* header).
  std::vector<std::string> additional_headers;

  // Case-insensitive header lookup; nullptr when absent.
  const std::string* Header(std::string_view name) const;
  void SetHeader(std::string name, std::string value);  // replaces an existing one
};

class Signer {
 public:
  virtual ~Signer() = default;
  // Adds the date header(s), the security-token header when creds has a token, the
  // payload-hash header where the scheme needs one, and Authorization. With anonymous
  // credentials nothing is added.
  virtual void Sign(SignableRequest& request, const Credentials& creds, SystemTime now) const = 0;
};

// OSS V1 (HMAC-SHA1): signs Date; only sub-resources go into the canonical resource.
std::unique_ptr<Signer> MakeOssV1Signer();
// OSS V4 (OSS4-HMAC-SHA256) for a region ("cn-hangzhou") and product ("oss").
std::unique_ptr<Signer> MakeOssV4Signer(std::string region, std::string product = "oss");
// AWS SigV4 for a region and service ("s3"); sends x-amz-content-sha256: UNSIGNED-PAYLOAD
// unless the request already carries that header.
std::unique_ptr<Signer> MakeAwsSigV4Signer(std::string region, std::string service = "s3");

// Presigned URLs (query-string authentication). Each returns the complete query to send:
// request.query plus the authentication parameters. With anonymous credentials the query is
// returned unchanged.
// OSS V1: adds Expires, OSSAccessKeyId, Signature and, with a token,
// security-token. `expires_epoch` is the Unix time at which the URL stops being valid.
Params PresignOssV1(const SignableRequest& request, const Credentials& creds,
                    int64_t expires_epoch);
// OSS V4 (§3.3, §3.5): adds x-oss-signature-version, x-oss-date, x-oss-expires,
// x-oss-credential, x-oss-additional-headers (when request.additional_headers names present
// headers), x-oss-security-token (with a token), then x-oss-signature.
Params PresignOssV4(const SignableRequest& request, const Credentials& creds, SystemTime now,
                    std::chrono::seconds expires, const std::string& region,
                    const std::string& product = "oss");
// The query string of a presigned URL: params sorted by name, names and values
// percent-encoded (RFC 3986 unreserved kept), "name=value", a bare name for an empty value.
std::string EncodePresignedQuery(const Params& params);

// Server-side verification (used by the project's test server). `secret_for` returns the
// secret of an access key id, or nullopt if the id is unknown. `now` is the server clock;
// a request more than 15 minutes away from it is kRequestTimeTooSkewed. `valid_token`, when
// set, decides whether a presented security token is acceptable (expired tokens fail with
// kTokenExpired). Errors use the codes the real service would send:
// kInvalidAccessKeyId, kSignatureDoesNotMatch, kRequestTimeTooSkewed, kAccessDenied
// (missing Authorization), kTokenExpired.
//
// The verifiers also accept presigned (query-string) OSS requests: V1 (OSSAccessKeyId,
// Expires, Signature) and V4 (x-oss-signature-version=OSS4-HMAC-SHA256 ...); an expired URL is
// kAccessDenied. Only headers a signer signs are compared, so the server passes the request
// as received: method, bucket, decoded key, decoded path (SigV4), decoded query, headers.
struct VerifyOptions {
  std::function<std::optional<std::string>(std::string_view access_key_id)> secret_for;
  // Called only when the request presents a token; unset = any token is accepted.
  std::function<Status(std::string_view access_key_id, std::string_view token)> check_token;
  SystemTime now;
  // Allowed distance between the request time and `now`. Default: 15 minutes.
  std::chrono::seconds max_skew{15 * 60};
  // When set, a V4/SigV4 credential scope with another region is kAccessDenied.
  std::string expected_region;
};
// Accepts OSS V1 ("OSS ak:sig") and OSS V4 ("OSS4-HMAC-SHA256 Credential=...") headers.
Status VerifyOssRequest(const SignableRequest& request, const VerifyOptions& options);
// Accepts "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...".
Status VerifyAwsSigV4Request(const SignableRequest& request, const VerifyOptions& options);

}  // namespace ossmount::auth
