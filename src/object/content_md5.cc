#include "object/content_md5.h"

#include <openssl/evp.h>

#include <cstdint>

#include "common/base64.h"

namespace ossmount::object {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The 16 bytes an MD5 ETag (quoted or not) stands for; nullopt for any other ETag.
std::optional<std::string> EtagDigest(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  if (etag.size() != 32) return std::nullopt;
  std::string out(16, '\0');
  for (size_t i = 0; i < 16; ++i) {
    int hi = HexValue(etag[2 * i]);
    int lo = HexValue(etag[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

}  // namespace

std::string Md5(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // EVP_Digest fails only when the MD5 provider is unavailable (a FIPS-only OpenSSL); an
  // all-zero digest then makes the server refuse the body (BadDigest), never accept bad data.
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_md5(), nullptr) != 1 || size != 16) {
    return std::string(16, '\0');
  }
  return std::string(reinterpret_cast<const char*>(digest), size);
}

std::string ContentMd5(std::string_view data) { return Base64Encode(Md5(data)); }

std::string HexLower(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto u = static_cast<uint8_t>(c);
    out += kDigits[u >> 4];
    out += kDigits[u & 0xF];
  }
  return out;
}

std::optional<std::string> S3MultipartEtag(const std::vector<std::string>& part_etags) {
  if (part_etags.empty()) return std::nullopt;
  std::string digests;
  digests.reserve(16 * part_etags.size());
  for (const std::string& etag : part_etags) {
    auto digest = EtagDigest(etag);
    if (!digest) return std::nullopt;
    digests += *digest;
  }
  return "\"" + HexLower(Md5(digests)) + "-" + std::to_string(part_etags.size()) + "\"";
}

}  // namespace ossmount::object
