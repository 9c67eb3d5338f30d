#include "api_util.h"

#include <openssl/evp.h>

#include <boost/crc.hpp>
#include <cctype>

#include "object_api.h"

namespace ossmount::testserver {

std::string HeaderValue(const HttpRequest& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string() : std::string(it->value());
}

bool HasHeader(const HttpRequest& req, std::string_view name) {
  return req.find(name) != req.end();
}

std::string DialectHeader(const HttpRequest& req, std::string_view oss_name,
                          std::string_view amz_name) {
  if (HasHeader(req, oss_name)) return HeaderValue(req, oss_name);
  return HeaderValue(req, amz_name);
}

std::string QueryOr(const RequestInfo& info, std::string_view name, std::string fallback) {
  const std::string* v = info.Query(name);
  return v ? *v : fallback;
}

std::optional<int> QueryInt(const RequestInfo& info, std::string_view name, int fallback, int min,
                            int max) {
  const std::string* v = info.Query(name);
  if (!v) return fallback;
  try {
    size_t used = 0;
    long long n = std::stoll(*v, &used);
    if (used != v->size() || n < min || n > max) return std::nullopt;
    return static_cast<int>(n);
  } catch (...) {
    return std::nullopt;
  }
}

std::string IsoMillis(SystemTime t) {
  std::string s = FormatIso8601(t);  // "2023-12-16T16:20:57Z"
  if (!s.empty() && s.back() == 'Z') s.insert(s.size() - 1, ".000");
  return s;
}

bool EtagListMatches(std::string_view list, const std::string& etag) {
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view item = list.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.substr(0, 2) == "W/") item.remove_prefix(2);
    if (item.size() >= 2 && item.front() == '"' && item.back() == '"') {
      item = item.substr(1, item.size() - 2);
    }
    if (item == "*" || (item.size() == etag.size() &&
                        std::equal(item.begin(), item.end(), etag.begin(), [](char a, char b) {
                          return std::toupper(static_cast<unsigned char>(a)) ==
                                 std::toupper(static_cast<unsigned char>(b));
                        }))) {
      return true;
    }
    start = comma + 1;
  }
  return false;
}

MetaList CollectUserMeta(const HttpRequest& req) {
  MetaList meta;
  for (const auto& f : req) {
    std::string name(f.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* prefix : {"x-oss-meta-", "x-amz-meta-"}) {
      std::string_view p(prefix);
      if (name.rfind(p, 0) == 0) meta.emplace_back(name.substr(p.size()), std::string(f.value()));
    }
  }
  return meta;
}

namespace {

std::string Base64(const unsigned char* data, size_t size) {
  std::string out(4 * ((size + 2) / 3) + 1, '\0');
  int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(size));
  out.resize(static_cast<size_t>(n));
  return out;
}

// A base64 text that decodes to exactly 16 bytes (an MD5).
bool IsBase64Md5(const std::string& v) {
  if (v.size() != 24 || v.substr(22) != "==") return false;
  for (size_t i = 0; i < 22; ++i) {
    char c = v[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/')) return false;
  }
  return true;
}

std::string Sha256Base64(std::string_view data) {
  unsigned char md[32];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return Base64(md, 32);
}

std::string Crc32Base64(std::string_view data) {
  boost::crc_32_type crc;
  crc.process_bytes(data.data(), data.size());
  uint32_t v = crc.checksum();
  unsigned char be[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                         static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
  return Base64(be, 4);
}

}  // namespace

std::optional<Response> CheckContentDigest(const RequestInfo& info, const HttpRequest& req,
                                           bool required) {
  const bool s3 = info.dialect == Dialect::kS3;
  const std::string_view body = req.body();
  if (HasHeader(req, "Content-MD5")) {
    std::string md5 = HeaderValue(req, "Content-MD5");
    if (!IsBase64Md5(md5)) {
      return ObjectApi::Error(info, 400, "InvalidDigest",
                              "The Content-MD5 you specified is not valid.");
    }
    if (md5 != (info.body_digests.md5 ? Md5Base64(*info.body_digests.md5) : Md5Base64(body))) {
      return s3 ? ObjectApi::Error(info, 400, "BadDigest",
                                   "The Content-MD5 you specified did not match what we received.")
                : ObjectApi::Error(info, 400, "InvalidDigest",
                                   "The Content-MD5 you specified is not valid.");
    }
    return std::nullopt;
  }
  if (!required) return std::nullopt;
  if (s3) {
    // Newer AWS SDKs send a flexible checksum instead of Content-MD5.
    const std::pair<const char*, std::string (*)(std::string_view)> sums[] = {
        {"x-amz-checksum-sha256", Sha256Base64}, {"x-amz-checksum-crc32", Crc32Base64}};
    for (const auto& [name, fn] : sums) {
      if (!HasHeader(req, name)) continue;
      if (HeaderValue(req, name) == fn(body)) return std::nullopt;
      return ObjectApi::Error(info, 400, "BadDigest",
                              std::string("The ") + name +
                                  " you specified did not match the "
                                  "calculated checksum.");
    }
    return ObjectApi::Error(info, 400, "InvalidRequest",
                            "Missing required header for this request: Content-MD5");
  }
  return ObjectApi::Error(info, 400, "MissingArgument",
                          "Missing Some Required Arguments: Content-MD5.");
}

bool OverwriteForbidden(const RequestInfo& info, const HttpRequest& req, bool if_none_match_star) {
  std::string forbid = HeaderValue(req, "x-oss-forbid-overwrite");
  for (auto& c : forbid) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (forbid == "true") return true;
  return if_none_match_star && info.dialect == Dialect::kS3 &&
         HeaderValue(req, "If-None-Match") == "*";
}

Response OverwriteRefused(const RequestInfo& info) {
  if (info.dialect == Dialect::kS3) {
    return ObjectApi::Error(info, 412, "PreconditionFailed",
                            "At least one of the pre-conditions you specified did not hold.",
                            info.key);
  }
  return ObjectApi::Error(info, 409, "FileAlreadyExists",
                          "The object you specified already exists.", info.key);
}

}  // namespace ossmount::testserver
