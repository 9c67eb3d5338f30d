// Credential providers and the precedence of BuildCredentialsProvider: files in a temp dir,
// environment variables set and restored, a fake clock and a fake metadata service.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "auth/credential_providers.h"
#include "auth/providers_internal.h"

namespace ossmount::auth {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// Every secret a test writes anywhere. No error message may ever contain one of them.
const std::vector<std::string> kAllSecrets = {
    "SECRET-explicit",     "SECRET-oss-env",  "TOKEN-oss-env",     "SECRET-ali-env",
    "SECRET-aws-env",      "SECRET-json-A",   "TOKEN-json-A",      "SECRET-json-B",
    "SECRET-ini",          "SECRET-ini-prof", "SECRET-passwd-gen", "SECRET-passwd-bkt",
    "SECRET-passwd-other", "SECRET-ecs-1",    "TOKEN-ecs-1",       "SECRET-ecs-2",
    "TOKEN-ecs-2",         "MDTOKEN-imds",    "SECRET-broken",
};

void CheckNoSecret(const Status& s) {
  for (const std::string& secret : kAllSecrets) {
    INFO("message: " << s.ToString());
    CHECK(s.ToString().find(secret) == std::string::npos);
  }
}

const char* kEnvVars[] = {
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

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ossmount-auth-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& content, mode_t mode = 0600) {
    std::string p = (path_ / name).string();
    fs::create_directories(fs::path(p).parent_path());
    {
      std::ofstream out(p, std::ios::trunc);
      out << content;
    }
    REQUIRE(::chmod(p.c_str(), mode) == 0);
    return p;
  }
  std::string Path(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

struct FakeClock {
  std::shared_ptr<SystemTime> now = std::make_shared<SystemTime>(seconds(1702743657));
  Clock fn() const {
    auto n = now;
    return [n] { return *n; };
  }
  void Advance(std::chrono::seconds d) { *now += d; }
};

std::string Iso(SystemTime t) { return FormatIso8601(t); }

std::string ConnectorJson(const std::string& id, const std::string& secret,
                          const std::string& token, const std::string& expiration) {
  std::string j = "{\"AccessKeyId\": \"" + id + "\", \"AccessKeySecret\": \"" + secret + "\"";
  if (!token.empty()) j += ", \"SecurityToken\": \"" + token + "\"";
  if (!expiration.empty()) j += ", \"Expiration\": \"" + expiration + "\"";
  return j + "}\n";
}

// Defaults that point into the temp dir, so the machine's own files never leak in.
DefaultCredentialPaths NoDefaults(const TempDir& dir) {
  DefaultCredentialPaths d;
  d.credentials_file = dir.Path("home/.alibabacloud/credentials");
  d.passwd_files = {dir.Path("etc/passwd-ossfs"), dir.Path("home/.passwd-ossfs")};
  return d;
}

Credentials MustGet(CredentialsProvider& p) {
  Result<Credentials> c = p.Get();
  if (!c.ok()) FAIL("Get() failed: " << c.status().ToString());
  return *c;
}

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
  s.credentials_file = dir.Path("missing.json");
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

// ---- ECS RAM role ------------------------------------------------------------------------------

struct FakeMetadata {
  struct Call {
    std::string method, url;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string Header(const std::string& name) const {
      for (const auto& [n, v] : headers) {
        if (n == name) return v;
      }
      return "<absent>";
    }
  };
  std::mutex mu;
  std::map<std::string, Result<HttpFetchResult>> responses;  // "METHOD url"
  std::vector<Call> calls;

  void Respond(const std::string& method, const std::string& url, long status, std::string body) {
    std::lock_guard<std::mutex> l(mu);
    responses.insert_or_assign(method + " " + url, HttpFetchResult{status, std::move(body)});
  }
  void Fail(const std::string& method, const std::string& url) {
    std::lock_guard<std::mutex> l(mu);
    responses.insert_or_assign(method + " " + url,
                               Status(ErrorCode::kNetwork, "connection refused"));
  }
  size_t CountOf(const std::string& url) {
    std::lock_guard<std::mutex> l(mu);
    size_t n = 0;
    for (const Call& c : calls) n += c.url == url;
    return n;
  }
  HttpFetcher Fetcher() {
    return [this](const std::string& method, const std::string& url,
                  const std::vector<std::pair<std::string, std::string>>& headers)
               -> Result<HttpFetchResult> {
      std::lock_guard<std::mutex> l(mu);
      calls.push_back({method, url, headers});
      auto it = responses.find(method + " " + url);
      if (it == responses.end()) return HttpFetchResult{404, "not found"};
      return it->second;
    };
  }
};

const std::string kBase = "http://100.100.100.200";
const std::string kTokenUrl = kBase + "/latest/api/token";
const std::string kRolesUrl = kBase + "/latest/meta-data/ram/security-credentials/";

std::string EcsJson(const std::string& id, const std::string& secret, const std::string& token,
                    SystemTime expiration, const std::string& code = "Success") {
  return "{\"AccessKeyId\":\"" + id + "\",\"AccessKeySecret\":\"" + secret +
         "\",\"SecurityToken\":\"" + token + "\",\"Expiration\":\"" + Iso(expiration) +
         "\",\"LastUpdated\":\"2023-12-16T10:00:00Z\",\"Code\":\"" + code + "\"}";
}

TEST_CASE("ECS RAM role: token, discovery, credentials, caching and refresh") {
  EnvGuard env;
  TempDir dir;
  FakeClock clock;
  SystemTime t0 = *clock.now;
  FakeMetadata md;
  md.Respond("PUT", kTokenUrl, 200, "MDTOKEN-imds");
  md.Respond("GET", kRolesUrl, 200, "TrainingRole\n");
  md.Respond("GET", kRolesUrl + "TrainingRole", 200,
             EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", t0 + hours(6)));
  CredentialSources s;
  s.ram_role = "auto";
  s.fetcher = md.Fetcher();
  auto built = BuildCredentialsProvider(s, NoDefaults(dir), clock.fn());
  REQUIRE(built.ok());
  CredentialsProvider& p = **built;
  REQUIRE(md.calls.size() == 3);
  CHECK(md.calls[0].method == "PUT");
  CHECK(md.calls[0].url == kTokenUrl);
  CHECK(md.calls[0].Header("X-aliyun-ecs-metadata-token-ttl-seconds") == "21600");
  CHECK(md.calls[1].url == kRolesUrl);
  CHECK(md.calls[1].Header("X-aliyun-ecs-metadata-token") == "MDTOKEN-imds");
  CHECK(md.calls[2].url == kRolesUrl + "TrainingRole");
  CHECK(md.calls[2].Header("X-aliyun-ecs-metadata-token") == "MDTOKEN-imds");

  Credentials c = MustGet(p);
  CHECK(c.access_key_id == "STS.id1");
  CHECK(c.access_key_secret == "SECRET-ecs-1");
  CHECK(c.security_token == "TOKEN-ecs-1");
  CHECK(*c.expiration == t0 + hours(6));
  // Cached: many Get() calls, no more requests.
  for (int i = 0; i < 100; ++i) MustGet(p);
  clock.Advance(hours(5));
  MustGet(p);
  CHECK(md.calls.size() == 3);

  // Within the refresh margin: new credentials; the discovered role is remembered.
  md.Respond("GET", kRolesUrl + "TrainingRole", 200,
             EcsJson("STS.id2", "SECRET-ecs-2", "TOKEN-ecs-2", t0 + hours(12)));
  clock.Advance(minutes(50));
  CHECK(MustGet(p).access_key_id == "STS.id2");
  CHECK(md.CountOf(kRolesUrl) == 1);
  CHECK(md.CountOf(kRolesUrl + "TrainingRole") == 2);
  CHECK(p.Describe().find("SECRET") == std::string::npos);
}

TEST_CASE("ECS RAM role: continues without a metadata token when the token call fails") {
  for (bool network_error : {true, false}) {
    FakeClock clock;
    FakeMetadata md;
    if (network_error) {
      md.Fail("PUT", kTokenUrl);
    } else {
      md.Respond("PUT", kTokenUrl, 403, "forbidden");
    }
    md.Respond("GET", kRolesUrl + "named", 200,
               EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", *clock.now + hours(6)));
    EcsRamRoleOptions o;
    o.role = "named";
    o.fetcher = md.Fetcher();
    o.clock = clock.fn();
    auto p = MakeEcsRamRoleProvider(o);
    CHECK(MustGet(*p).access_key_id == "STS.id1");
    REQUIRE(md.calls.size() == 2);  // no discovery for a named role
    CHECK(md.calls[1].Header("X-aliyun-ecs-metadata-token") == "<absent>");
  }
}

TEST_CASE("ECS RAM role: failures say what failed and never quote the response") {
  FakeClock clock;
  FakeMetadata md;
  md.Respond("PUT", kTokenUrl, 200, "MDTOKEN-imds");
  EcsRamRoleOptions o;
  o.role = "auto";
  o.fetcher = md.Fetcher();
  o.clock = clock.fn();

  {  // no role attached
    auto p = MakeEcsRamRoleProvider(o);
    Result<Credentials> r = p->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("no RAM role") != std::string::npos);
    CheckNoSecret(r.status());
  }
  md.Respond("GET", kRolesUrl, 200, "role1");
  {  // Code is not Success
    md.Respond("GET", kRolesUrl + "role1", 200,
               EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", *clock.now + hours(1), "Failed"));
    Result<Credentials> r = MakeEcsRamRoleProvider(o)->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("'Failed'") != std::string::npos);
    CheckNoSecret(r.status());
  }
  {  // not JSON
    md.Respond("GET", kRolesUrl + "role1", 200, "<html>SECRET-ecs-1</html>");
    Result<Credentials> r = MakeEcsRamRoleProvider(o)->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().code() == ErrorCode::kProtocol);
    CheckNoSecret(r.status());
  }
  {  // network failure
    md.Fail("GET", kRolesUrl + "role1");
    Result<Credentials> r = MakeEcsRamRoleProvider(o)->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().code() == ErrorCode::kNetwork);
    CHECK(r.status().message().find(kRolesUrl + "role1") != std::string::npos);
    CHECK(r.status().message().find("role1") != std::string::npos);
  }
  {  // server error
    md.Respond("GET", kRolesUrl + "role1", 500, "SECRET-ecs-1");
    Result<Credentials> r = MakeEcsRamRoleProvider(o)->Get();
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("HTTP 500") != std::string::npos);
    CheckNoSecret(r.status());
  }
  {  // the builder reports it too, and a missing fetcher is a clear error
    CredentialSources s;
    s.ram_role = "role1";
    TempDir dir;
    EnvGuard env;
    auto p = BuildCredentialsProvider(s, NoDefaults(dir), clock.fn());
    REQUIRE(!p.ok());
    CHECK(p.status().message().find("fetcher") != std::string::npos);
  }
}

TEST_CASE("ECS RAM role: a failed refresh keeps valid credentials - expiry then fails") {
  FakeClock clock;
  SystemTime t0 = *clock.now;
  FakeMetadata md;
  md.Respond("PUT", kTokenUrl, 200, "MDTOKEN-imds");
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", t0 + hours(1)));
  EcsRamRoleOptions o;
  o.role = "r";
  o.fetcher = md.Fetcher();
  o.clock = clock.fn();
  auto p = MakeEcsRamRoleProvider(o);
  CHECK(MustGet(*p).access_key_id == "STS.id1");
  md.Fail("GET", kRolesUrl + "r");
  clock.Advance(minutes(50));  // within the refresh margin
  CHECK(MustGet(*p).access_key_id == "STS.id1");
  size_t calls = md.CountOf(kRolesUrl + "r");
  MustGet(*p);  // inside the retry interval: no new attempt
  CHECK(md.CountOf(kRolesUrl + "r") == calls);
  clock.Advance(minutes(11));  // expired
  Result<Credentials> r = p->Get();
  REQUIRE(!r.ok());
  CHECK(r.status().code() == ErrorCode::kNetwork);
  // The service recovers; Invalidate() forces a fetch even with time left.
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id2", "SECRET-ecs-2", "TOKEN-ecs-2", t0 + hours(8)));
  CHECK(MustGet(*p).access_key_id == "STS.id2");
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id3", "SECRET-ecs-2", "TOKEN-ecs-2", t0 + hours(9)));
  CHECK(MustGet(*p).access_key_id == "STS.id2");
  p->Invalidate();
  CHECK(MustGet(*p).access_key_id == "STS.id3");
}

TEST_CASE("ECS RAM role: concurrent Get() calls all succeed and share one fetch") {
  FakeClock clock;
  FakeMetadata md;
  md.Respond("PUT", kTokenUrl, 200, "MDTOKEN-imds");
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", *clock.now + hours(6)));
  EcsRamRoleOptions o;
  o.role = "r";
  o.fetcher = md.Fetcher();
  o.clock = clock.fn();
  auto p = MakeEcsRamRoleProvider(o);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 50; ++j) ok += p->Get().ok();
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == 400);
  CHECK(md.CountOf(kRolesUrl + "r") == 1);
}

TEST_CASE("ECS RAM role: callers with valid credentials do not wait for a slow refresh") {
  FakeClock clock;
  SystemTime t0 = *clock.now;
  FakeMetadata md;
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id1", "SECRET-ecs-1", "TOKEN-ecs-1", t0 + hours(1)));
  std::promise<void> entered, release;
  std::shared_future<void> release_f = release.get_future().share();
  std::atomic<bool> block{false};
  HttpFetcher inner = md.Fetcher();
  EcsRamRoleOptions o;
  o.role = "r";
  o.clock = clock.fn();
  o.fetcher = [&](const std::string& method, const std::string& url,
                  const std::vector<std::pair<std::string, std::string>>& headers) {
    if (block.exchange(false)) {
      entered.set_value();
      release_f.wait();
    }
    return inner(method, url, headers);
  };
  auto p = MakeEcsRamRoleProvider(o);
  CHECK(MustGet(*p).access_key_id == "STS.id1");
  md.Respond("GET", kRolesUrl + "r", 200,
             EcsJson("STS.id2", "SECRET-ecs-2", "TOKEN-ecs-2", t0 + hours(8)));
  clock.Advance(minutes(50));  // inside the refresh margin, still valid
  block = true;
  std::thread refresher([&] { CHECK(MustGet(*p).access_key_id == "STS.id2"); });
  entered.get_future().wait();  // the refresher is now inside the fetch
  auto other = std::async(std::launch::async, [&] { return p->Get(); });
  bool finished = other.wait_for(seconds(60)) == std::future_status::ready;
  CHECK(finished);  // generous: only guards against a hang
  release.set_value();
  refresher.join();
  Result<Credentials> c = other.get();
  REQUIRE(c.ok());
  CHECK(c->access_key_id == "STS.id1");
  CHECK(MustGet(*p).access_key_id == "STS.id2");
}

TEST_CASE("ECS RAM role configured through an INI credentials file") {
  EnvGuard env;
  TempDir dir;
  FakeClock clock;
  FakeMetadata md;
  md.Respond("GET", kRolesUrl + "IniRole", 200,
             EcsJson("STS.ini", "SECRET-ecs-1", "TOKEN-ecs-1", *clock.now + hours(6)));
  CredentialSources s;
  s.fetcher = md.Fetcher();
  s.credentials_file =
      dir.Write("creds.ini", "[default]\ntype = ecs_ram_role\nrole_name = IniRole\n");
  auto p = BuildCredentialsProvider(s, NoDefaults(dir), clock.fn());
  REQUIRE(p.ok());
  CHECK(MustGet(**p).access_key_id == "STS.ini");
  CHECK((*p)->Describe().find("IniRole") != std::string::npos);
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

}  // namespace
}  // namespace ossmount::auth
