// The individual credential sources behind BuildCredentialsProvider, exposed for tests and
// for callers that want one source directly.
//
// Conventions: a loader returns ErrorCode::kNotFound when its source is simply absent (no
// such file, variables unset) so the builder moves on to the next source; any other error
// means the source exists but is broken, and the builder stops with that error. No message
// ever contains a secret, a token or file content.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "auth/credential_providers.h"
#include "auth/credentials.h"
#include "common/time_util.h"

namespace ossmount::auth {

// The clock providers consult for expiry; injectable so tests need no waiting.
using Clock = std::function<SystemTime()>;
inline SystemTime SystemClockNow() { return std::chrono::system_clock::now(); }

// ---- Providers ------------------------------------------------------------------------------

std::shared_ptr<CredentialsProvider> MakeAnonymousProvider();
std::shared_ptr<CredentialsProvider> MakeStaticProvider(Credentials creds, std::string description);

using CredentialsLoader = std::function<Result<Credentials>()>;
struct RefreshPolicy {
  Clock clock = SystemClockNow;
  // Re-read the source when the credentials expire within this margin (or have expired).
  std::chrono::seconds margin{5 * 60};
  // While the source keeps returning the same (soon to expire) credentials, re-read it at
  // most this often, so Get() stays cheap.
  std::chrono::seconds min_reread_interval{10};
};
// A provider over a local source (file, environment) that is cheap to re-read. Loads once
// now (returning that error if it fails); afterwards re-reads when the credentials come
// within `margin` of their Expiration and after Invalidate(). Unchanged or unreadable
// re-reads keep the current credentials until they really expire; after that Get() fails
// with kTokenExpired and says which source to refresh.
// Thread-safety: Get() takes a mutex; a re-read (a local file read) happens under it.
Result<std::shared_ptr<CredentialsProvider>> MakeReloadingProvider(std::string description,
                                                                   CredentialsLoader loader,
                                                                   RefreshPolicy policy = {});

struct EcsRamRoleOptions {
  std::string metadata_url = "http://100.100.100.200";  // no trailing slash needed
  std::string role;                                     // a role name, or "auto"
  HttpFetcher fetcher;
  Clock clock = SystemClockNow;
  // Fetch new credentials this long before Expiration.
  std::chrono::seconds refresh_margin{15 * 60};
  // After a failed refresh while the old credentials are still valid, wait this long before
  // trying again (Get() returns the old ones meanwhile).
  std::chrono::seconds retry_interval{10};
};
// Credentials of an ECS instance RAM role from the metadata service:
// PUT /latest/api/token (TTL 21600 s; on failure continue without a token), discover the
// role when "auto", GET /latest/meta-data/ram/security-credentials/<role>. Fetches lazily on
// the first Get(). A credentials reply over kMaxEcsResponseBytes or nested deeper than 32
// levels is refused (kProtocol; common/bounded_json.h). Thread-safety: network calls happen
// outside the credentials mutex; while one thread refreshes, others keep getting the
// still-valid credentials without waiting.
inline constexpr size_t kMaxEcsResponseBytes = 64u << 10;  // the real reply is under 2 KiB
std::shared_ptr<CredentialsProvider> MakeEcsRamRoleProvider(EcsRamRoleOptions options);

// ---- Sources --------------------------------------------------------------------------------

// The first complete set of OSS_*, then ALIBABA_CLOUD_*, then (kS3 only) AWS_* variables.
// `*variable` names the id variable used. kNotFound when none is set; kInvalidArgument when
// an id is set without its secret (or the reverse).
Result<Credentials> LoadEnvironmentCredentials(Protocol protocol, std::string* variable);

struct CredentialsFileContent {
  enum class Format { kJson, kIni } format = Format::kJson;
  std::string ini_type;   // INI "type" ("access_key", "sts", "ecs_ram_role")
  std::string role_name;  // INI ecs_ram_role profiles
  Credentials creds;      // empty for ecs_ram_role
};
// Credentials and passwd files hold a few key pairs: one over kMaxSecretFileBytes is refused
// unread (kInvalidArgument, naming the file and the limit), and the JSON form must be at most
// kMaxCredentialsJsonBytes and nested at most 32 levels (common/bounded_json.h).
inline constexpr size_t kMaxSecretFileBytes = 1u << 20;
inline constexpr size_t kMaxCredentialsJsonBytes = 64u << 10;
// Sniffs the format (first non-space char '{' = OSS Connector JSON, else Credentials-tool
// INI) and parses it. `profile` selects the INI section ("default"). `path` is for messages.
Result<CredentialsFileContent> ParseCredentialsFile(std::string_view text, std::string_view profile,
                                                    const std::string& path);
// Reads and parses a credentials file; kNotFound when it does not exist. Like a passwd file,
// a credentials file that group or others may read or write (mode & 077) is refused
// (kAccessDenied, with a chmod 600 hint): it holds a secret.
Result<CredentialsFileContent> ReadCredentialsFile(const std::string& path,
                                                   std::string_view profile);
// Reads an ossfs passwd file: the "bucket:id:secret" line for `bucket` wins, else the first
// "id:secret" line. kNotFound when the file does not exist or has no usable line; a file
// that group or others may read or write (mode & 077) is refused (kAccessDenied).
Result<Credentials> ReadPasswdFile(const std::string& path, std::string_view bucket);
// The parsing half of ReadPasswdFile, over the file's content (`path` is for messages).
Result<Credentials> ParsePasswdText(std::string_view text, std::string_view bucket,
                                    const std::string& path);

// ---- Builder --------------------------------------------------------------------------------

// The default locations BuildCredentialsProvider consults, overridable for tests.
struct DefaultCredentialPaths {
  std::string credentials_file;           // "" = none
  std::vector<std::string> passwd_files;  // in order
};
// ~/.alibabacloud/credentials; /etc/passwd-ossfs then ~/.passwd-ossfs ($HOME based).
DefaultCredentialPaths SystemDefaultCredentialPaths();
Result<std::shared_ptr<CredentialsProvider>> BuildCredentialsProvider(
    const CredentialSources& sources, const DefaultCredentialPaths& defaults,
    Clock clock = SystemClockNow);

}  // namespace ossmount::auth
