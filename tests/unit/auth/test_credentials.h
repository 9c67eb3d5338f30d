// Credentials built from literals, for the signing tests (shared so that the test files of
// one binary, compiled together as a unity build, define it once).
#pragma once

#include <string>
#include <utility>

#include "auth/credentials.h"

namespace ossmount::auth::testing {

inline Credentials Creds(std::string ak, std::string sk, std::string token = "") {
  Credentials c;
  c.access_key_id = std::move(ak);
  c.access_key_secret = std::move(sk);
  c.security_token = std::move(token);
  return c;
}

}  // namespace ossmount::auth::testing
