// BuildCredentialsProvider: the precedence of credential_providers.h.
#include <cstdlib>

#include "auth/credential_providers.h"
#include "auth/providers_internal.h"

namespace ossmount::auth {
namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

std::string Profile() {
  const char* p = Env("ALIBABA_CLOUD_PROFILE");
  return p ? p : "default";
}

// Validates a freshly built provider by asking it once, so a broken source fails the build.
Result<std::shared_ptr<CredentialsProvider>> Checked(std::shared_ptr<CredentialsProvider> p) {
  Result<Credentials> c = p->Get();
  if (!c.ok()) return c.status();
  return p;
}

Result<std::shared_ptr<CredentialsProvider>> EcsProvider(const CredentialSources& sources,
                                                         std::string role, Clock clock,
                                                         const std::string& configured_by) {
  if (!sources.fetcher) {
    return Status(ErrorCode::kInvalidArgument,
                  configured_by + " asks for ECS RAM role '" + role +
                      "' but no HTTP fetcher was provided to read the metadata service (a bug)");
  }
  EcsRamRoleOptions o;
  o.metadata_url = sources.ecs_metadata_url;
  o.role = std::move(role);
  o.fetcher = sources.fetcher;
  o.clock = std::move(clock);
  return Checked(MakeEcsRamRoleProvider(std::move(o)));
}

Result<std::shared_ptr<CredentialsProvider>> FileProvider(const CredentialSources& sources,
                                                          const std::string& path, Clock clock) {
  std::string profile = Profile();
  Result<CredentialsFileContent> content = ReadCredentialsFile(path, profile);
  if (!content.ok()) return content.status();
  if (content->format == CredentialsFileContent::Format::kIni &&
      content->ini_type == "ecs_ram_role") {
    return EcsProvider(sources, content->role_name, clock, "credentials file " + path);
  }
  std::string format =
      content->format == CredentialsFileContent::Format::kJson ? "JSON" : "INI [" + profile + "]";
  RefreshPolicy policy;
  policy.clock = std::move(clock);
  auto loader = [path, profile]() -> Result<Credentials> {
    Result<CredentialsFileContent> c = ReadCredentialsFile(path, profile);
    if (!c.ok()) return c.status();
    return c->creds;
  };
  Result<std::shared_ptr<CredentialsProvider>> p = MakeReloadingProvider(
      "credentials file " + path + " (" + format + ")", std::move(loader), std::move(policy));
  if (!p.ok()) return p.status();
  return Checked(*p);
}

std::string Home() {
  const char* h = Env("HOME");
  return h ? h : "";
}

}  // namespace

DefaultCredentialPaths SystemDefaultCredentialPaths() {
  DefaultCredentialPaths d;
  std::string home = Home();
  if (!home.empty()) d.credentials_file = home + "/.alibabacloud/credentials";
  d.passwd_files.push_back("/etc/passwd-ossfs");
  if (!home.empty()) d.passwd_files.push_back(home + "/.passwd-ossfs");
  return d;
}

Result<std::shared_ptr<CredentialsProvider>> BuildCredentialsProvider(
    const CredentialSources& sources, const DefaultCredentialPaths& defaults, Clock clock) {
  // 1. Anonymous.
  if (sources.anonymous) return MakeAnonymousProvider();
  std::vector<std::string> tried;

  // 2. Explicit key pair.
  if (!sources.access_key_id.empty() || !sources.access_key_secret.empty()) {
    if (sources.access_key_id.empty() || sources.access_key_secret.empty()) {
      return Status(
          ErrorCode::kInvalidArgument,
          std::string("the command line / config file gives an access key ") +
              (sources.access_key_id.empty() ? "secret without its id" : "id without its secret") +
              "; give both");
    }
    Credentials c;
    c.access_key_id = sources.access_key_id;
    c.access_key_secret = sources.access_key_secret;
    c.security_token = sources.security_token;
    return MakeStaticProvider(std::move(c), "access key from the command line / config file");
  }
  tried.push_back("access key on the command line / in the config file (not given)");

  // 3. Environment.
  std::string variable;
  Result<Credentials> env = LoadEnvironmentCredentials(sources.protocol, &variable);
  if (env.ok()) {
    Protocol protocol = sources.protocol;
    std::string var = variable;
    auto loader = [protocol, var]() -> Result<Credentials> {
      std::string v;
      Result<Credentials> c = LoadEnvironmentCredentials(protocol, &v);
      if (c.ok() && v != var) return Status(ErrorCode::kNotFound, "environment changed");
      return c;
    };
    return MakeReloadingProvider("environment " + variable, std::move(loader));
  }
  if (env.status().code() != ErrorCode::kNotFound) return env.status();
  tried.push_back(env.status().message());

  // 4. Credentials file.
  std::string file = sources.credentials_file;
  bool explicit_file = !file.empty();
  if (file.empty() && Env("ALIBABA_CLOUD_CREDENTIALS_FILE")) {
    file = Env("ALIBABA_CLOUD_CREDENTIALS_FILE");
    explicit_file = true;
  }
  if (file.empty()) file = defaults.credentials_file;
  if (!file.empty()) {
    Result<std::shared_ptr<CredentialsProvider>> p = FileProvider(sources, file, clock);
    if (p.ok()) return p;
    if (p.status().code() != ErrorCode::kNotFound || explicit_file) return p.status();
    tried.push_back(p.status().message());
  }

  // 5. ossfs passwd file.
  std::vector<std::string> passwd_files = sources.passwd_file.empty()
                                              ? defaults.passwd_files
                                              : std::vector<std::string>{sources.passwd_file};
  for (const std::string& path : passwd_files) {
    Result<Credentials> c = ReadPasswdFile(path, sources.bucket);
    if (c.ok()) {
      std::string bucket = sources.bucket;
      auto loader = [path, bucket]() { return ReadPasswdFile(path, bucket); };
      return MakeReloadingProvider("passwd file " + path, std::move(loader));
    }
    if (c.status().code() != ErrorCode::kNotFound || !sources.passwd_file.empty()) {
      return c.status();
    }
    tried.push_back(c.status().message());
  }

  // 6. ECS RAM role.
  if (!sources.ram_role.empty()) {
    return EcsProvider(sources, sources.ram_role, clock, "the ram_role setting");
  }
  tried.push_back("ECS RAM role (not configured)");

  std::string message = "no credentials found. Tried, in order: ";
  for (size_t i = 0; i < tried.size(); ++i) {
    message += (i ? "; " : "") + std::to_string(i + 1) + ". " + tried[i];
  }
  message +=
      ". Provide an access key (command line or config file), set OSS_ACCESS_KEY_ID and "
      "OSS_ACCESS_KEY_SECRET, write a credentials or passwd file (chmod 600), configure an ECS "
      "RAM role, or mount anonymously for a public bucket";
  return Status(ErrorCode::kAccessDenied, std::move(message));
}

Result<std::shared_ptr<CredentialsProvider>> BuildCredentialsProvider(
    const CredentialSources& sources) {
  return BuildCredentialsProvider(sources, SystemDefaultCredentialPaths(), SystemClockNow);
}

}  // namespace ossmount::auth
