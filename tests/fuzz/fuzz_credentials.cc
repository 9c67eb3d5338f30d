// Fuzz target: credentials files, the OSS Connector JSON / Credentials-tool INI file
// (auth::ParseCredentialsFile) and the ossfs passwd file (auth::ParsePasswdText).
//
// Input layout: byte 0 picks the profile ("default" or "p") and the bucket, the rest is the
// file content, fed to both parsers.
//
// Invariants: a parsed access_key or sts profile has a non-empty id and secret, an sts one a
// token; a parsed passwd line has a non-empty id and secret; an error has a message.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "auth/providers_internal.h"
#include "fuzz/fuzz_check.h"

using namespace ossmount;
using namespace ossmount::auth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view profile = (data[0] & 1) ? "p" : "default";
  std::string_view bucket = (data[0] & 2) ? "b" : "bucket";
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);

  auto file = ParseCredentialsFile(text, profile, "/fuzz/credentials");
  if (file.ok()) {
    if (file->format == CredentialsFileContent::Format::kJson || file->ini_type == "access_key" ||
        file->ini_type == "sts") {
      FUZZ_CHECK(!file->creds.access_key_id.empty());
      FUZZ_CHECK(!file->creds.access_key_secret.empty());
    }
    if (file->ini_type == "sts") FUZZ_CHECK(!file->creds.security_token.empty());
    if (file->ini_type == "ecs_ram_role") FUZZ_CHECK(!file->role_name.empty());
  } else {
    FUZZ_CHECK(!file.status().message().empty());
  }

  auto passwd = ParsePasswdText(text, bucket, "/fuzz/passwd");
  if (passwd.ok()) {
    FUZZ_CHECK(!passwd->access_key_id.empty());
    FUZZ_CHECK(!passwd->access_key_secret.empty());
    FUZZ_CHECK(passwd->access_key_id.find(':') == std::string::npos);
    FUZZ_CHECK(passwd->access_key_secret.find(':') == std::string::npos);
  } else {
    FUZZ_CHECK(!passwd.status().message().empty());
  }
  return 0;
}
