// RequestAuthenticator: checks a request's signature the way OSS (V1, V4) and S3 (SigV4)
// would, using the verifiers of src/auth (auth/signer.h), with one configured key pair and an
// optional STS token with an expiry.
//
// STS rotation: AddStsToken() (the control API's POST /_ossmount/sts) adds another accepted
// token with its own expiry, as STS does when a new token is issued: the old one stays valid
// until its own expiry, then requests carrying it get SecurityTokenExpired.
//
// Thread-safety: Check() and AddStsToken() may run concurrently (the token list is guarded).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

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
  explicit RequestAuthenticator(AuthSettings settings);
  bool enabled() const { return settings_.enabled; }
  // Accept `token` too, until `expires_at` (unix seconds; nullopt = never). Re-adding a known
  // token updates its expiry.
  void AddStsToken(std::string token, std::optional<int64_t> expires_at);
  // nullopt when the request is acceptable.
  std::optional<AuthFailure> Check(const RequestInfo& info, const HttpRequest& req) const;

 private:
  struct Token {
    std::string value;
    std::optional<int64_t> expires_at;
  };
  // The accepted token the request presented, if any (copied under the lock).
  std::optional<Token> FindToken(std::string_view presented) const;

  AuthSettings settings_;  // immutable; sts_token/sts_expires_at seed tokens_
  mutable std::mutex mu_;
  std::vector<Token> tokens_;  // guarded by mu_; empty = no token expected
};

}  // namespace ossmount::testserver
