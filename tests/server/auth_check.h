// RequestAuthenticator: checks a request's signature the way OSS (V1, V4) and S3 (SigV4)
// would, using the verifiers of src/auth (auth/signer.h), with one configured key pair and an
// optional STS token with an expiry.
//
// Thread-safety: immutable after construction; Check() may run concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "request_info.h"

namespace ossmount::testserver {

struct AuthSettings {
  bool enabled = true;
  std::string access_key_id;
  std::string access_key_secret;          // secret: never logged
  std::string sts_token;                  // secret: never logged; empty = no token expected
  std::optional<int64_t> sts_expires_at;  // unix seconds
  std::string region;  // when set, V4/SigV4 scopes naming another region are denied
};

// An authentication failure as the service reports it.
struct AuthFailure {
  unsigned status = 403;
  std::string code;     // AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch, ...
  std::string message;  // never contains the secret or the token
};

class RequestAuthenticator {
 public:
  explicit RequestAuthenticator(AuthSettings settings) : settings_(std::move(settings)) {}
  bool enabled() const { return settings_.enabled; }
  // nullopt when the request is acceptable.
  std::optional<AuthFailure> Check(const RequestInfo& info, const HttpRequest& req) const;

 private:
  AuthSettings settings_;
};

}  // namespace ossmount::testserver
