// Reading credentials from the environment, credentials files (OSS Connector JSON or the
// Credentials tool's INI) and ossfs passwd files. Messages name the source and the fix;
// they never quote file content, which may hold secrets.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include <rapidjson/document.h>

#include "auth/providers_internal.h"
#include "auth/signing_internal.h"
#include "common/bounded_json.h"

namespace ossmount::auth {
namespace {

using internal::Trim;

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

// Reads a file that holds secrets. It must be private to its owner: a file that group or
// others may read or write (mode & 077) is refused, checked with fstat on the opened file so
// the check and the read are about the same file. `what` names the kind of file for messages.
Result<std::string> ReadSecretFile(const std::string& path, const char* what) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    int err = errno;
    if (err == ENOENT) {
      return Status(ErrorCode::kNotFound, std::string(what) + " " + path + " does not exist");
    }
    return Status(ErrorCode::kAccessDenied, "cannot read " + std::string(what) + " " + path + ": " +
                                                std::strerror(err) + "; check its permissions");
  }
  struct stat st {};
  if (::fstat(fileno(f), &st) != 0) {
    int err = errno;
    std::fclose(f);
    return Status(ErrorCode::kAccessDenied,
                  "cannot stat " + std::string(what) + " " + path + ": " + std::strerror(err));
  }
  if ((st.st_mode & 077) != 0) {
    std::fclose(f);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status(ErrorCode::kAccessDenied,
                  std::string(what) + " " + path + " has mode " + mode +
                      ", readable or writable by group or others; refusing to use it. Run: "
                      "chmod 600 " +
                      path);
  }
  std::string out;
  char buf[4096];
  size_t n;
  // One byte past the limit is enough to refuse the file; reading on would hold it all.
  while (out.size() <= kMaxSecretFileBytes && (n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    out.append(buf, n);
  }
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed)
    return Status(ErrorCode::kAccessDenied, "error reading " + std::string(what) + " " + path);
  if (out.size() > kMaxSecretFileBytes) {
    const std::string limit = std::to_string(kMaxSecretFileBytes);
    return Status(ErrorCode::kInvalidArgument,
                  std::string(what) + " " + path + " is " +
                      (S_ISREG(st.st_mode) ? std::to_string(st.st_size) : "more than " + limit) +
                      " bytes, over the " + limit +
                      "-byte limit; it should hold a few key pairs (is this the right file?)");
  }
  return out;
}

Result<CredentialsFileContent> ParseJson(std::string_view text, const std::string& path) {
  auto bad = [&](const std::string& why) {
    return Status(ErrorCode::kInvalidArgument,
                  "credentials file " + path + " (OSS Connector JSON): " + why +
                      "; expected {\"AccessKeyId\": ..., \"AccessKeySecret\": ..., optional "
                      "\"SecurityToken\" and \"Expiration\" (ISO 8601)}");
  };
  rapidjson::Document doc;
  Status parsed = ParseBoundedJson(text, {kMaxCredentialsJsonBytes}, &doc);
  if (!parsed.ok()) return bad(parsed.message());
  if (!doc.IsObject()) return bad("the top level is not an object");
  auto field = [&](const char* name, std::string* out) -> bool {
    auto it = doc.FindMember(name);
    if (it == doc.MemberEnd() || it->value.IsNull()) return true;
    if (!it->value.IsString()) return false;
    *out = std::string(it->value.GetString(), it->value.GetStringLength());
    return true;
  };
  CredentialsFileContent content;
  content.format = CredentialsFileContent::Format::kJson;
  Credentials& c = content.creds;
  std::string expiration;
  if (!field("AccessKeyId", &c.access_key_id) || !field("AccessKeySecret", &c.access_key_secret) ||
      !field("SecurityToken", &c.security_token) || !field("Expiration", &expiration)) {
    return bad("a field is not a string");
  }
  if (c.access_key_id.empty()) return bad("AccessKeyId is missing or empty");
  if (c.access_key_secret.empty()) return bad("AccessKeySecret is missing or empty");
  if (!expiration.empty()) {
    Result<int64_t> t = ParseIso8601(expiration);
    if (!t.ok()) return bad("Expiration is not an ISO 8601 time");
    Result<SystemTime> when = SystemTimeFromUnix(*t);
    if (!when.ok()) return bad("Expiration is out of range (after the year 2262)");
    c.expiration = *when;
  }
  return content;
}

Result<CredentialsFileContent> ParseIni(std::string_view text, std::string_view profile,
                                        const std::string& path) {
  std::map<std::string, std::map<std::string, std::string>> sections;
  std::string section;
  int line_no = 0;
  std::istringstream in{std::string(text)};
  std::string raw;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string_view line = Trim(raw);
    if (!line.empty() && line.back() == '\r') line = Trim(line.substr(0, line.size() - 1));
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      if (line.back() != ']') {
        return Status(ErrorCode::kInvalidArgument, "credentials file " + path + " (INI): line " +
                                                       std::to_string(line_no) +
                                                       " opens a section without closing ']'");
      }
      section = std::string(Trim(line.substr(1, line.size() - 2)));
      sections[section];
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || section.empty()) {
      return Status(ErrorCode::kInvalidArgument,
                    "credentials file " + path + " (INI): line " + std::to_string(line_no) +
                        " is not 'name = value' inside a [section]; if this file is meant to be "
                        "OSS Connector JSON it must start with '{'");
    }
    sections[section][internal::ToLower(Trim(line.substr(0, eq)))] =
        std::string(Trim(line.substr(eq + 1)));
  }
  std::string where = "profile [" + std::string(profile) + "] of credentials file " + path;
  auto it = sections.find(std::string(profile));
  if (it == sections.end()) {
    return Status(ErrorCode::kInvalidArgument,
                  "credentials file " + path + " (INI) has no [" + std::string(profile) +
                      "] section; add one, or choose another with ALIBABA_CLOUD_PROFILE");
  }
  const auto& kv = it->second;
  auto get = [&](const char* k) {
    auto f = kv.find(k);
    return f == kv.end() ? std::string() : f->second;
  };
  CredentialsFileContent content;
  content.format = CredentialsFileContent::Format::kIni;
  content.ini_type = get("type");
  if (content.ini_type.empty()) content.ini_type = "access_key";
  if (content.ini_type == "access_key" || content.ini_type == "sts") {
    content.creds.access_key_id = get("access_key_id");
    content.creds.access_key_secret = get("access_key_secret");
    if (content.ini_type == "sts") content.creds.security_token = get("security_token");
    if (content.creds.access_key_id.empty() || content.creds.access_key_secret.empty()) {
      return Status(ErrorCode::kInvalidArgument,
                    where + " (type = " + content.ini_type +
                        ") needs both access_key_id and access_key_secret");
    }
    if (content.ini_type == "sts" && content.creds.security_token.empty()) {
      return Status(ErrorCode::kInvalidArgument, where + " (type = sts) needs security_token");
    }
    return content;
  }
  if (content.ini_type == "ecs_ram_role") {
    content.role_name = get("role_name");
    if (content.role_name.empty()) content.role_name = "auto";
    return content;
  }
  return Status(ErrorCode::kNotSupported,
                where + " has type = " + content.ini_type +
                    ", which ossmount does not support; use type = access_key (access_key_id, "
                    "access_key_secret), sts or ecs_ram_role, or another credentials source");
}

}  // namespace

Result<Credentials> LoadEnvironmentCredentials(Protocol protocol, std::string* variable) {
  struct Set {
    const char* id;
    const char* secret;
    const char* token;
  };
  static constexpr Set kOssSets[] = {
      {"OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET", "OSS_SESSION_TOKEN"},
      {"ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
       "ALIBABA_CLOUD_SECURITY_TOKEN"},
  };
  static constexpr Set kAwsSet = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                  "AWS_SESSION_TOKEN"};
  std::vector<Set> sets(std::begin(kOssSets), std::end(kOssSets));
  if (protocol == Protocol::kS3) sets.push_back(kAwsSet);
  for (const Set& s : sets) {
    const char* id = Env(s.id);
    const char* secret = Env(s.secret);
    if (id == nullptr && secret == nullptr) continue;
    if (id == nullptr || secret == nullptr) {
      return Status(ErrorCode::kInvalidArgument,
                    std::string("environment: ") + (id ? s.id : s.secret) + " is set but " +
                        (id ? s.secret : s.id) + " is not; set both or unset both");
    }
    Credentials c;
    c.access_key_id = id;
    c.access_key_secret = secret;
    if (const char* token = Env(s.token)) c.security_token = token;
    if (variable != nullptr) *variable = s.id;
    return c;
  }
  std::string names =
      "OSS_ACCESS_KEY_ID/OSS_ACCESS_KEY_SECRET, ALIBABA_CLOUD_ACCESS_KEY_ID/"
      "ALIBABA_CLOUD_ACCESS_KEY_SECRET";
  if (protocol == Protocol::kS3) names += ", AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY";
  return Status(ErrorCode::kNotFound, "environment: none of " + names + " is set");
}

Result<CredentialsFileContent> ParseCredentialsFile(std::string_view text, std::string_view profile,
                                                    const std::string& path) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return Status(ErrorCode::kInvalidArgument, "credentials file " + path + " is empty");
  }
  if (text[first] == '{') return ParseJson(text, path);
  return ParseIni(text, profile, path);
}

Result<CredentialsFileContent> ReadCredentialsFile(const std::string& path,
                                                   std::string_view profile) {
  Result<std::string> text = ReadSecretFile(path, "credentials file");
  if (!text.ok()) return text.status();
  return ParseCredentialsFile(*text, profile, path);
}

Result<Credentials> ReadPasswdFile(const std::string& path, std::string_view bucket) {
  Result<std::string> text = ReadSecretFile(path, "passwd file");
  if (!text.ok()) return text.status();
  return ParsePasswdText(*text, bucket, path);
}

Result<Credentials> ParsePasswdText(std::string_view text, std::string_view bucket,
                                    const std::string& path) {
  std::istringstream in{std::string(text)};
  std::string raw;
  int line_no = 0;
  std::optional<Credentials> general, specific;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string_view line = Trim(raw);
    if (!line.empty() && line.back() == '\r') line = Trim(line.substr(0, line.size() - 1));
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string_view> fields;
    size_t start = 0;
    for (size_t pos; (pos = line.find(':', start)) != std::string_view::npos; start = pos + 1) {
      fields.push_back(Trim(line.substr(start, pos - start)));
    }
    fields.push_back(Trim(line.substr(start)));
    bool ok = (fields.size() == 2 || fields.size() == 3);
    for (std::string_view f : fields) ok = ok && !f.empty();
    if (!ok) {
      return Status(ErrorCode::kInvalidArgument,
                    "passwd file " + path + ": line " + std::to_string(line_no) +
                        " is neither 'accessKeyId:accessKeySecret' nor "
                        "'bucket:accessKeyId:accessKeySecret'");
    }
    Credentials c;
    c.access_key_id = std::string(fields[fields.size() - 2]);
    c.access_key_secret = std::string(fields.back());
    if (fields.size() == 3) {
      if (fields[0] == bucket && !specific) specific = std::move(c);
    } else if (!general) {
      general = std::move(c);
    }
  }
  if (specific) return *std::move(specific);
  if (general) return *std::move(general);
  return Status(ErrorCode::kNotFound, "passwd file " + path + " has no line for bucket '" +
                                          std::string(bucket) + "' and no 'id:secret' line");
}

}  // namespace ossmount::auth
