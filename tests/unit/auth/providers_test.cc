// Credential providers and the precedence of BuildCredentialsProvider: files in a temp dir,
// environment variables set and restored, a fake clock.
#include <catch2/catch.hpp>

#include "unit/auth/provider_test_util.h"

namespace ossmount::auth {
namespace {

using namespace ossmount::auth::testing;  // NOLINT
namespace fs = std::filesystem;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// ---- static, anonymous, environment, precedence of the first sources -----------------------

TEST_CASE("Anonymous wins over every other source") {
  EnvGuard env;
  env.Set("OSS_ACCESS_KEY_ID", "id-env");
  env.Set("OSS_ACCESS_KEY_SECRET", "SECRET-oss-env");
  TempDir dir;
  CredentialSources s;
  s.anonymous = true;
  s.access_key_id = "id";
  s.access_key_secret = "SECRET-explicit";
  auto p = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(p.ok());
  CHECK(MustGet(**p).anonymous);
}

TEST_CASE("An explicit key pair wins over the environment - half a pair is an error") {
  EnvGuard env;
  env.Set("OSS_ACCESS_KEY_ID", "id-env");
  env.Set("OSS_ACCESS_KEY_SECRET", "SECRET-oss-env");
  TempDir dir;
  CredentialSources s;
  s.access_key_id = "id-explicit";
  s.access_key_secret = "SECRET-explicit";
  s.security_token = "tok";
  auto p = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(p.ok());
  Credentials c = MustGet(**p);
  CHECK(c.access_key_id == "id-explicit");
  CHECK(c.access_key_secret == "SECRET-explicit");
  CHECK(c.security_token == "tok");
  CHECK((*p)->Describe().find("SECRET") == std::string::npos);

  s.access_key_id.clear();
  auto half = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(!half.ok());
  CHECK(half.status().code() == ErrorCode::kInvalidArgument);
  CheckNoSecret(half.status());
}

TEST_CASE("Environment: OSS_* before ALIBABA_CLOUD_* before AWS_* (S3 mode only)") {
  EnvGuard env;
  TempDir dir;
  CredentialSources s;
  env.Set("AWS_ACCESS_KEY_ID", "id-aws");
  env.Set("AWS_SECRET_ACCESS_KEY", "SECRET-aws-env");
  {
    auto p = BuildCredentialsProvider(s, NoDefaults(dir));  // OSS mode ignores AWS_*
    REQUIRE(!p.ok());
    CheckNoSecret(p.status());
  }
  s.protocol = Protocol::kS3;
  {
    auto p = BuildCredentialsProvider(s, NoDefaults(dir));
    REQUIRE(p.ok());
    CHECK(MustGet(**p).access_key_id == "id-aws");
    CHECK((*p)->Describe() == "environment AWS_ACCESS_KEY_ID");
  }
  env.Set("ALIBABA_CLOUD_ACCESS_KEY_ID", "id-ali");
  env.Set("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "SECRET-ali-env");
  {
    auto p = BuildCredentialsProvider(s, NoDefaults(dir));
    REQUIRE(p.ok());
    CHECK(MustGet(**p).access_key_id == "id-ali");
  }
  env.Set("OSS_ACCESS_KEY_ID", "id-oss");
  env.Set("OSS_ACCESS_KEY_SECRET", "SECRET-oss-env");
  env.Set("OSS_SESSION_TOKEN", "TOKEN-oss-env");
  {
    auto p = BuildCredentialsProvider(s, NoDefaults(dir));
    REQUIRE(p.ok());
    Credentials c = MustGet(**p);
    CHECK(c.access_key_id == "id-oss");
    CHECK(c.access_key_secret == "SECRET-oss-env");
    CHECK(c.security_token == "TOKEN-oss-env");
    CHECK((*p)->Describe() == "environment OSS_ACCESS_KEY_ID");
  }
  ::unsetenv("OSS_ACCESS_KEY_SECRET");
  {
    auto p = BuildCredentialsProvider(s, NoDefaults(dir));
    REQUIRE(!p.ok());
    CHECK(p.status().code() == ErrorCode::kInvalidArgument);
    CHECK(p.status().message().find("OSS_ACCESS_KEY_SECRET") != std::string::npos);
    CheckNoSecret(p.status());
  }
}

TEST_CASE("Environment beats the credentials file, which beats the passwd file") {
  EnvGuard env;
  TempDir dir;
  DefaultCredentialPaths d = NoDefaults(dir);
  dir.Write("home/.passwd-ossfs", "id-passwd:SECRET-passwd-gen\n");
  CredentialSources s;
  {
    auto p = BuildCredentialsProvider(s, d);
    REQUIRE(p.ok());
    CHECK(MustGet(**p).access_key_id == "id-passwd");
    CHECK((*p)->Describe() == "passwd file " + d.passwd_files[1]);
  }
  dir.Write("etc/passwd-ossfs", "id-etc:SECRET-passwd-other\n");
  {
    auto p = BuildCredentialsProvider(s, d);
    REQUIRE(p.ok());
    CHECK(MustGet(**p).access_key_id == "id-etc");  // /etc/passwd-ossfs comes first
  }
  dir.Write("home/.alibabacloud/credentials", ConnectorJson("id-json", "SECRET-json-A", "", ""));
  {
    auto p = BuildCredentialsProvider(s, d);
    REQUIRE(p.ok());
    CHECK(MustGet(**p).access_key_id == "id-json");
    CHECK((*p)->Describe().find("(JSON)") != std::string::npos);
  }
  env.Set("ALIBABA_CLOUD_ACCESS_KEY_ID", "id-ali");
  env.Set("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "SECRET-ali-env");
  {
    auto p = BuildCredentialsProvider(s, d);
    REQUIRE(p.ok());
    CHECK(MustGet(**p).access_key_id == "id-ali");
  }
}

TEST_CASE("Credentials file: explicit path, then $ALIBABA_CLOUD_CREDENTIALS_FILE, then default") {
  EnvGuard env;
  TempDir dir;
  DefaultCredentialPaths d = NoDefaults(dir);
  dir.Write("home/.alibabacloud/credentials", ConnectorJson("id-default", "SECRET-json-A", "", ""));
  std::string env_file =
      dir.Write("env.json", ConnectorJson("id-envfile", "SECRET-json-A", "", ""));
  std::string explicit_file =
      dir.Write("explicit.json", ConnectorJson("id-explicit", "SECRET-json-B", "", ""));
  CredentialSources s;
  env.Set("ALIBABA_CLOUD_CREDENTIALS_FILE", env_file);
  s.credentials_file = explicit_file;
  CHECK(MustGet(**BuildCredentialsProvider(s, d)).access_key_id == "id-explicit");
  s.credentials_file.clear();
  CHECK(MustGet(**BuildCredentialsProvider(s, d)).access_key_id == "id-envfile");
  ::unsetenv("ALIBABA_CLOUD_CREDENTIALS_FILE");
  CHECK(MustGet(**BuildCredentialsProvider(s, d)).access_key_id == "id-default");

  // An explicitly named file that is missing is an error, not a silent fall-through.
  dir.Write("home/.passwd-ossfs", "id-passwd:SECRET-passwd-gen\n");
  s.credentials_file = dir.Sub("missing.json");
  auto missing = BuildCredentialsProvider(s, d);
  REQUIRE(!missing.ok());
  CHECK(missing.status().message().find("missing.json") != std::string::npos);
  // A missing default file is skipped.
  s.credentials_file.clear();
  fs::remove(d.credentials_file);
  CHECK(MustGet(**BuildCredentialsProvider(s, d)).access_key_id == "id-passwd");
}

TEST_CASE("Credentials file: malformed JSON is an error that quotes no content") {
  EnvGuard env;
  TempDir dir;
  CredentialSources s;
  s.credentials_file =
      dir.Write("bad.json", "{\"AccessKeyId\": \"id\", \"AccessKeySecret\": \"SECRET-broken\",");
  auto p = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(!p.ok());
  CHECK(p.status().code() == ErrorCode::kInvalidArgument);
  CHECK(p.status().message().find("bad.json") != std::string::npos);
  CheckNoSecret(p.status());

  s.credentials_file = dir.Write("nosecret.json", "{\"AccessKeyId\": \"id\"}");
  auto p2 = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(!p2.ok());
  CHECK(p2.status().message().find("AccessKeySecret") != std::string::npos);
}

TEST_CASE("Credentials file JSON: re-read near Expiration picks up the rewritten file") {
  EnvGuard env;
  TempDir dir;
  FakeClock clock;
  SystemTime t0 = *clock.now;
  CredentialSources s;
  s.credentials_file =
      dir.Write("creds.json", ConnectorJson("id-A", "SECRET-json-A", "TOKEN-json-A",
                                            Iso(t0 + minutes(2))));  // inside the 5 min margin
  auto built = BuildCredentialsProvider(s, NoDefaults(dir), clock.fn());
  REQUIRE(built.ok());
  CredentialsProvider& p = **built;
  Credentials a = MustGet(p);
  CHECK(a.access_key_id == "id-A");
  CHECK(a.security_token == "TOKEN-json-A");
  REQUIRE(a.expiration.has_value());
  CHECK(*a.expiration == t0 + minutes(2));

  // The agent rewrites the file; the next Get() after the re-read interval sees it.
  dir.Write("creds.json", ConnectorJson("id-B", "SECRET-json-B", "", Iso(t0 + hours(6))));
  clock.Advance(seconds(11));
  Credentials b = MustGet(p);
  CHECK(b.access_key_id == "id-B");
  CHECK(b.access_key_secret == "SECRET-json-B");
  CHECK(b.security_token.empty());

  // Far from expiry, a rewrite is not noticed until Invalidate().
  dir.Write("creds.json", ConnectorJson("id-C", "SECRET-json-A", "", Iso(t0 + hours(6))));
  clock.Advance(minutes(10));
  CHECK(MustGet(p).access_key_id == "id-B");
  p.Invalidate();
  CHECK(MustGet(p).access_key_id == "id-C");
}

TEST_CASE("Credentials file JSON: an unchanged file keeps credentials until they expire") {
  EnvGuard env;
  TempDir dir;
  FakeClock clock;
  SystemTime t0 = *clock.now;
  CredentialSources s;
  s.credentials_file = dir.Write(
      "creds.json", ConnectorJson("id-A", "SECRET-json-A", "TOKEN-json-A", Iso(t0 + minutes(3))));
  auto built = BuildCredentialsProvider(s, NoDefaults(dir), clock.fn());
  REQUIRE(built.ok());
  clock.Advance(minutes(1));
  CHECK(MustGet(**built).access_key_id == "id-A");
  // The file disappears for a moment: the still-valid credentials stay in use.
  fs::remove(s.credentials_file);
  clock.Advance(seconds(30));
  CHECK(MustGet(**built).access_key_id == "id-A");
  dir.Write("creds.json",
            ConnectorJson("id-A", "SECRET-json-A", "TOKEN-json-A", Iso(t0 + minutes(3))));
  clock.Advance(minutes(2));  // past Expiration, file still the same
  Result<Credentials> expired = (*built)->Get();
  REQUIRE(!expired.ok());
  CHECK(expired.status().code() == ErrorCode::kTokenExpired);
  CHECK(expired.status().message().find(s.credentials_file) != std::string::npos);
  CheckNoSecret(expired.status());
  // A file that is already expired at mount time is refused up front.
  auto late = BuildCredentialsProvider(s, NoDefaults(dir), clock.fn());
  REQUIRE(!late.ok());
  CHECK(late.status().code() == ErrorCode::kTokenExpired);
}

TEST_CASE("Credentials file INI: [default] access_key, profiles, unsupported types") {
  EnvGuard env;
  TempDir dir;
  CredentialSources s;
  s.credentials_file = dir.Write("creds.ini",
                                 "# Alibaba Cloud Credentials tool\n"
                                 "[default]\n"
                                 "type = access_key\n"
                                 "access_key_id = id-ini\n"
                                 "access_key_secret = SECRET-ini\n"
                                 "\n"
                                 "[prof]\n"
                                 "type=access_key\n"
                                 "access_key_id=id-prof\n"
                                 "access_key_secret=SECRET-ini-prof\n"
                                 "[arn]\n"
                                 "type = ram_role_arn\n"
                                 "access_key_id = x\n");
  auto p = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(p.ok());
  Credentials c = MustGet(**p);
  CHECK(c.access_key_id == "id-ini");
  CHECK(c.access_key_secret == "SECRET-ini");
  CHECK((*p)->Describe().find("INI [default]") != std::string::npos);

  env.Set("ALIBABA_CLOUD_PROFILE", "prof");
  CHECK(MustGet(**BuildCredentialsProvider(s, NoDefaults(dir))).access_key_id == "id-prof");

  env.Set("ALIBABA_CLOUD_PROFILE", "arn");
  auto arn = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(!arn.ok());
  CHECK(arn.status().code() == ErrorCode::kNotSupported);
  CHECK(arn.status().message().find("ram_role_arn") != std::string::npos);
  CHECK(arn.status().message().find("not support") != std::string::npos);

  env.Set("ALIBABA_CLOUD_PROFILE", "nope");
  auto nope = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(!nope.ok());
  CHECK(nope.status().message().find("[nope]") != std::string::npos);
  CheckNoSecret(nope.status());
}

TEST_CASE("Credentials file INI: parse errors point at the line, not its content") {
  auto r = ParseCredentialsFile("[default]\naccess_key_id SECRET-broken\n", "default", "/x");
  REQUIRE(!r.ok());
  CHECK(r.status().message().find("line 2") != std::string::npos);
  CheckNoSecret(r.status());
  auto missing =
      ParseCredentialsFile("[default]\ntype = access_key\naccess_key_id = a\n", "default", "/x");
  REQUIRE(!missing.ok());
  CHECK(missing.status().message().find("access_key_secret") != std::string::npos);
  auto empty = ParseCredentialsFile("  \n", "default", "/x");
  CHECK(!empty.ok());
}

// ---- passwd file -----------------------------------------------------------------------------

TEST_CASE("Passwd file: the bucket's own line wins over a general line, in any order") {
  TempDir dir;
  std::string path = dir.Write("passwd",
                               "# ossfs credentials\n"
                               "\n"
                               "id-gen:SECRET-passwd-gen\n"
                               "other-bucket:id-other:SECRET-passwd-other\n"
                               "  my-bucket : id-bkt : SECRET-passwd-bkt  \n");
  Result<Credentials> mine = ReadPasswdFile(path, "my-bucket");
  REQUIRE(mine.ok());
  CHECK(mine->access_key_id == "id-bkt");
  CHECK(mine->access_key_secret == "SECRET-passwd-bkt");
  Result<Credentials> other = ReadPasswdFile(path, "third-bucket");
  REQUIRE(other.ok());
  CHECK(other->access_key_id == "id-gen");

  std::string only_other = dir.Write("passwd2", "other-bucket:id-other:SECRET-passwd-other\n");
  Result<Credentials> none = ReadPasswdFile(only_other, "my-bucket");
  REQUIRE(!none.ok());
  CHECK(none.status().code() == ErrorCode::kNotFound);
  CheckNoSecret(none.status());
}

TEST_CASE("Passwd file: loose permissions are refused with a chmod 600 hint") {
  EnvGuard env;
  TempDir dir;
  for (mode_t mode : {0644, 0640, 0604, 0660, 0602}) {
    INFO("mode " << std::oct << mode);
    std::string path = dir.Write("loose", "id:SECRET-passwd-gen\n", mode);
    Result<Credentials> r = ReadPasswdFile(path, "b");
    REQUIRE(!r.ok());
    CHECK(r.status().code() == ErrorCode::kAccessDenied);
    CHECK(r.status().message().find("chmod 600 " + path) != std::string::npos);
    CheckNoSecret(r.status());
  }
  // Through the builder: a loose default file stops the search rather than being skipped.
  DefaultCredentialPaths d = NoDefaults(dir);
  dir.Write("etc/passwd-ossfs", "id:SECRET-passwd-gen\n", 0644);
  dir.Write("home/.passwd-ossfs", "id2:SECRET-passwd-other\n", 0600);
  CredentialSources s;
  auto p = BuildCredentialsProvider(s, d);
  REQUIRE(!p.ok());
  CHECK(p.status().message().find("chmod 600") != std::string::npos);
  CHECK(ReadPasswdFile(dir.Write("tight", "id:SECRET-passwd-gen\n", 0400), "b").ok());
}

TEST_CASE("Passwd file: malformed lines and explicit paths") {
  EnvGuard env;
  TempDir dir;
  std::string bad = dir.Write("bad", "id-only-SECRET-broken\n");
  Result<Credentials> r = ReadPasswdFile(bad, "b");
  REQUIRE(!r.ok());
  CHECK(r.status().message().find("line 1") != std::string::npos);
  CheckNoSecret(r.status());

  CredentialSources s;
  s.bucket = "my-bucket";
  s.passwd_file = dir.Write("explicit", "my-bucket:id-bkt:SECRET-passwd-bkt\n");
  auto p = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(p.ok());
  CHECK(MustGet(**p).access_key_id == "id-bkt");
  // An explicit passwd file without a usable line is an error, not a fall-through.
  s.bucket = "another";
  auto q = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(!q.ok());
  CHECK(q.status().message().find("another") != std::string::npos);
}

// ---- nothing found -----------------------------------------------------------------------------

TEST_CASE("No credentials found: the message lists every source and how to fix it") {
  EnvGuard env;
  TempDir dir;
  CredentialSources s;
  auto p = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(!p.ok());
  const std::string m = p.status().message();
  CHECK(m.find("no credentials found") != std::string::npos);
  CHECK(m.find("command line") != std::string::npos);
  CHECK(m.find("OSS_ACCESS_KEY_ID") != std::string::npos);
  CHECK(m.find("ALIBABA_CLOUD_ACCESS_KEY_ID") != std::string::npos);
  CHECK(m.find(NoDefaults(dir).credentials_file) != std::string::npos);
  CHECK(m.find("etc/passwd-ossfs") != std::string::npos);
  CHECK(m.find("home/.passwd-ossfs") != std::string::npos);
  CHECK(m.find("ECS RAM role") != std::string::npos);
  CHECK(m.find("anonymous") != std::string::npos);
}

TEST_CASE("Credentials file: loose permissions are refused with a chmod 600 hint") {
  EnvGuard env;
  TempDir dir;
  const std::string json = "{\"AccessKeyId\": \"id\", \"AccessKeySecret\": \"SECRET-json-A\"}";
  const std::string ini = "[default]\naccess_key_id = id\naccess_key_secret = SECRET-ini\n";
  for (const std::string& content : {json, ini}) {
    for (mode_t mode : {0644, 0640, 0604, 0660, 0602, 0620}) {
      INFO("mode " << std::oct << mode);
      std::string path = dir.Write("loose", content, mode);
      Result<CredentialsFileContent> r = ReadCredentialsFile(path, "default");
      REQUIRE(!r.ok());
      CHECK(r.status().code() == ErrorCode::kAccessDenied);
      CHECK(r.status().message().find("chmod 600 " + path) != std::string::npos);
      CheckNoSecret(r.status());
    }
    CHECK(ReadCredentialsFile(dir.Write("tight", content, 0600), "default").ok());
    CHECK(ReadCredentialsFile(dir.Write("tight-ro", content, 0400), "default").ok());
  }
  // Through the builder, an explicit --credentials-file that is too open stops the mount.
  CredentialSources s;
  s.credentials_file = dir.Write("open.json", json, 0644);
  auto p = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(!p.ok());
  CHECK(p.status().message().find("chmod 600") != std::string::npos);
  CheckNoSecret(p.status());
}

TEST_CASE("Credentials file: an Expiration past 2262 is an error, not an overflow") {
  // Regression (fuzz_credentials): converting year-4048 seconds to system_clock nanoseconds
  // overflowed (undefined behaviour under UBSan).
  Result<CredentialsFileContent> r = ParseCredentialsFile(
      "{\"AccessKeyId\": \"id\", \"AccessKeySecret\": \"SECRET-json-A\", "
      "\"Expiration\": \"4048-01-01T00:00:00Z\"}",
      "default", "/f.json");
  REQUIRE(!r.ok());
  CHECK(r.status().message().find("Expiration is out of range") != std::string::npos);
  CheckNoSecret(r.status());
}

TEST_CASE("Credentials files: oversize or over-deep files are refused, naming file and limit") {
  EnvGuard env;
  TempDir dir;
  CredentialSources s;
  const std::string pair = "{\"AccessKeyId\": \"id\", \"AccessKeySecret\": \"SECRET-json-A\"";

  // JSON over 64 KiB: refused by the parser, before any field is read.
  std::string padded = pair + ", \"Pad\": \"" + std::string(kMaxCredentialsJsonBytes, ' ') + "\"}";
  s.credentials_file = dir.Write("big.json", padded);
  auto p = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(!p.ok());
  CHECK(p.status().code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(p.status().message(),
             Catch::Contains("credentials file " + s.credentials_file + " (OSS Connector JSON): " +
                             std::to_string(padded.size()) + " bytes, over the 65536-byte limit"));
  CheckNoSecret(p.status());

  // Nested past 32 levels (60,000 '[', within the size limit).
  s.credentials_file = dir.Write("deep.json", "{\"AccessKeyId\": " + std::string(60'000, '['));
  p = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(!p.ok());
  CHECK_THAT(p.status().message(),
             Catch::Contains("deep.json (OSS Connector JSON): nested deeper than 32 levels"));

  // Any secret file over 1 MiB is refused unread past the limit (INI and passwd files too).
  std::string huge = "[default]\naccess_key_id = id\n" + std::string(kMaxSecretFileBytes, '#');
  s.credentials_file = dir.Write("huge.ini", huge);
  p = BuildCredentialsProvider(s, NoDefaults(dir));
  REQUIRE(!p.ok());
  CHECK(p.status().code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(p.status().message(),
             Catch::Contains("credentials file " + s.credentials_file + " is " +
                             std::to_string(huge.size()) + " bytes, over the 1048576-byte limit"));
  Result<Credentials> passwd = ReadPasswdFile(dir.Write("passwd", huge), "b");
  REQUIRE(!passwd.ok());
  CHECK_THAT(passwd.status().message(), Catch::Contains("over the 1048576-byte limit"));
}

TEST_CASE("Passwd text: parsing is the same with and without a file") {
  Result<Credentials> c = ParsePasswdText(
      "# comment\n\r\nb:id-bkt:SECRET-passwd-bkt\r\nid-gen:SECRET-passwd-gen\n", "b", "mem");
  REQUIRE(c.ok());
  CHECK(c->access_key_id == "id-bkt");
  Result<Credentials> bad = ParsePasswdText("a:b:c:d\n", "b", "mem");
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("line 1") != std::string::npos);
  CHECK(ParsePasswdText("", "b", "mem").status().code() == ErrorCode::kNotFound);
}

}  // namespace
}  // namespace ossmount::auth
