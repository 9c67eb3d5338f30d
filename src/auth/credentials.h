// Credentials and the providers that produce them.
//
// A CredentialsProvider hands out the key pair (and STS token) current at the moment of
// the call; every request is signed with what Get() returns at that time, so rotated
// credentials are picked up without a restart.
//
// Thread-safety: Get() may be called concurrently from any thread. Implementations keep
// Get() cheap (a copy under a mutex); refreshing from a file or the ECS metadata service
// happens ahead of expiry and never on every call.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "ossmount/status.h"

namespace ossmount::auth {

struct Credentials {
  std::string access_key_id;
  std::string access_key_secret;  // secret: never log, never put in a message
  std::string security_token;     // secret: STS token, empty when none
  std::optional<std::chrono::system_clock::time_point> expiration;
  bool anonymous = false;  // send requests unsigned
};

class CredentialsProvider {
 public:
  virtual ~CredentialsProvider() = default;
  // The credentials to sign the next request with.
  virtual Result<Credentials> Get() = 0;
  // Where the credentials come from, for logs and errors ("environment OSS_ACCESS_KEY_ID",
  // "file /root/.alibabacloud/credentials"). Never contains a secret.
  virtual std::string Describe() const = 0;
  // Called after the server rejected the credentials as expired or invalid: the next
  // Get() re-reads the source instead of using a cached copy.
  virtual void Invalidate() {}
};

}  // namespace ossmount::auth
