// Shared fixtures for the credential provider tests: an environment guard, a temp dir, a fake
// clock, and the list of every secret the tests use (no message may contain one).
#pragma once

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "auth/credential_providers.h"
#include "auth/providers_internal.h"
#include "support/temp_dir.h"

namespace ossmount::auth::testing {

namespace fs = std::filesystem;

// Every secret a test writes anywhere. No error message may ever contain one of them.
inline const std::vector<std::string> kAllSecrets = {
    "SECRET-explicit",     "SECRET-oss-env",  "TOKEN-oss-env",     "SECRET-ali-env",
    "SECRET-aws-env",      "SECRET-json-A",   "TOKEN-json-A",      "SECRET-json-B",
    "SECRET-ini",          "SECRET-ini-prof", "SECRET-passwd-gen", "SECRET-passwd-bkt",
    "SECRET-passwd-other", "SECRET-ecs-1",    "TOKEN-ecs-1",       "SECRET-ecs-2",
    "TOKEN-ecs-2",         "MDTOKEN-imds",    "SECRET-broken",
};

inline void CheckNoSecret(const Status& s) {
  for (const std::string& secret : kAllSecrets) {
    INFO("message: " << s.ToString());
    CHECK(s.ToString().find(secret) == std::string::npos);
  }
}

inline const char* const kEnvVars[] = {
    "OSS_ACCESS_KEY_ID",
    "OSS_ACCESS_KEY_SECRET",
    "OSS_SESSION_TOKEN",
    "ALIBABA_CLOUD_ACCESS_KEY_ID",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
    "ALIBABA_CLOUD_SECURITY_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "ALIBABA_CLOUD_CREDENTIALS_FILE",
    "ALIBABA_CLOUD_PROFILE",
};

// Clears the credential variables for the test and restores the previous values after.
class EnvGuard {
 public:
  EnvGuard() {
    for (const char* name : kEnvVars) {
      const char* v = std::getenv(name);
      if (v) saved_[name] = v;
      ::unsetenv(name);
    }
  }
  ~EnvGuard() {
    for (const char* name : kEnvVars) {
      auto it = saved_.find(name);
      if (it != saved_.end()) {
        ::setenv(name, it->second.c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
  }
  void Set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

 private:
  std::map<std::string, std::string> saved_;
};

using ::ossmount::testing::TempDir;

struct FakeClock {
  std::shared_ptr<SystemTime> now = std::make_shared<SystemTime>(std::chrono::seconds(1702743657));
  Clock fn() const {
    auto n = now;
    return [n] { return *n; };
  }
  void Advance(std::chrono::seconds d) { *now += d; }
};

inline std::string Iso(SystemTime t) { return FormatIso8601(t); }

inline std::string ConnectorJson(const std::string& id, const std::string& secret,
                                 const std::string& token, const std::string& expiration) {
  std::string j = "{\"AccessKeyId\": \"" + id + "\", \"AccessKeySecret\": \"" + secret + "\"";
  if (!token.empty()) j += ", \"SecurityToken\": \"" + token + "\"";
  if (!expiration.empty()) j += ", \"Expiration\": \"" + expiration + "\"";
  return j + "}\n";
}

// Defaults that point into the temp dir, so the machine's own files never leak in.
inline DefaultCredentialPaths NoDefaults(const TempDir& dir) {
  DefaultCredentialPaths d;
  d.credentials_file = dir.Sub("home/.alibabacloud/credentials");
  d.passwd_files = {dir.Sub("etc/passwd-ossfs"), dir.Sub("home/.passwd-ossfs")};
  return d;
}

inline Credentials MustGet(CredentialsProvider& p) {
  Result<Credentials> c = p.Get();
  if (!c.ok()) FAIL("Get() failed: " << c.status().ToString());
  return *c;
}

}  // namespace ossmount::auth::testing
