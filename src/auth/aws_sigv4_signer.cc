// AWS Signature V4 for S3-compatible endpoints.
#include <algorithm>

#include "auth/crypto.h"
#include "auth/signer.h"
#include "auth/signing_internal.h"
#include "common/url.h"

namespace ossmount::auth {
namespace internal {
namespace {

// AWS canonical header values: trimmed, inner runs of spaces collapsed to one.
std::string CollapseSpaces(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  bool in_space = false;
  for (char c : Trim(v)) {
    if (c == ' ' || c == '\t') {
      if (!in_space) out.push_back(' ');
      in_space = true;
    } else {
      out.push_back(c);
      in_space = false;
    }
  }
  return out;
}

}  // namespace

std::string AwsSigV4CanonicalUri(std::string_view path) {
  if (path.empty()) return "/";
  return PercentEncode(path, /*keep_slash=*/true);
}

std::string AwsSigV4CanonicalQuery(const Params& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) {
    encoded.emplace_back(PercentEncode(name), PercentEncode(value));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out += '&';
    out += name;
    out += '=';
    out += value;
  }
  return out;
}

std::vector<std::string> AwsSigV4DefaultSignedHeaders(const SignableRequest& request) {
  std::vector<std::string> out;
  for (const auto& [name, value] : request.headers) {
    std::string lower = ToLower(name);
    if (lower == "host" || lower.rfind("x-amz-", 0) == 0 || lower == "content-type" ||
        lower == "content-md5") {
      out.push_back(std::move(lower));
    }
  }
  for (const std::string& name : request.additional_headers) {
    std::string lower = ToLower(Trim(name));
    if (!lower.empty() && lower != "authorization" && request.Header(lower) != nullptr) {
      out.push_back(std::move(lower));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string AwsSigV4SigningKey(std::string_view secret, std::string_view yyyymmdd,
                               std::string_view region, std::string_view service) {
  std::string k = HmacSha256("AWS4" + std::string(secret), yyyymmdd);
  k = HmacSha256(k, region);
  k = HmacSha256(k, service);
  return HmacSha256(k, "aws4_request");
}

AwsSigV4Parts ComputeAwsSigV4(const SignableRequest& request, std::string_view secret,
                              std::string_view amz_date, std::string_view region,
                              std::string_view service,
                              const std::vector<std::string>& signed_headers,
                              std::string_view payload_hash) {
  AwsSigV4Parts parts;
  std::string& cr = parts.canonical_request;
  cr = request.method;
  cr += '\n';
  cr += AwsSigV4CanonicalUri(request.path);
  cr += '\n';
  cr += AwsSigV4CanonicalQuery(request.query);
  cr += '\n';
  for (const std::string& name : signed_headers) {
    // Repeated headers are joined with ',' as CollectHeaders does.
    std::string value;
    bool first = true;
    for (const auto& [n, v] : request.headers) {
      if (ToLower(n) != name) continue;
      if (!first) value += ',';
      value += CollapseSpaces(v);
      first = false;
    }
    cr += name;
    cr += ':';
    cr += value;
    cr += '\n';
    if (!parts.signed_headers.empty()) parts.signed_headers += ';';
    parts.signed_headers += name;
  }
  cr += '\n';
  cr += parts.signed_headers;
  cr += '\n';
  cr += payload_hash;

  std::string_view date = amz_date.substr(0, 8);
  parts.scope =
      std::string(date) + "/" + std::string(region) + "/" + std::string(service) + "/aws4_request";
  parts.string_to_sign = "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + parts.scope + "\n" +
                         HexEncode(Sha256(cr));
  std::string key = AwsSigV4SigningKey(secret, date, region, service);
  parts.signing_key_hex = HexEncode(key);
  parts.signature = HexEncode(HmacSha256(key, parts.string_to_sign));
  return parts;
}

std::string AwsSigV4Authorization(std::string_view access_key_id, const AwsSigV4Parts& parts) {
  return "AWS4-HMAC-SHA256 Credential=" + std::string(access_key_id) + "/" + parts.scope +
         ", SignedHeaders=" + parts.signed_headers + ", Signature=" + parts.signature;
}

}  // namespace internal

namespace {

class AwsSigV4Signer final : public Signer {
 public:
  AwsSigV4Signer(std::string region, std::string service)
      : region_(std::move(region)), service_(std::move(service)) {}

  // REQUIRES: request.headers holds Host exactly as it goes on the wire ("host[:port]"),
  // because SigV4 signs it and the signer cannot know the endpoint.
  void Sign(SignableRequest& request, const Credentials& creds, SystemTime now) const override {
    if (creds.anonymous) return;
    std::string amz_date = FormatIso8601Basic(now);
    request.SetHeader("x-amz-date", amz_date);
    const std::string* payload = request.Header("x-amz-content-sha256");
    if (payload == nullptr) {
      request.SetHeader("x-amz-content-sha256", std::string(internal::kUnsignedPayload));
      payload = request.Header("x-amz-content-sha256");
    }
    std::string payload_hash(internal::Trim(*payload));
    if (!creds.security_token.empty()) {
      request.SetHeader("x-amz-security-token", creds.security_token);
    }
    internal::AwsSigV4Parts parts =
        internal::ComputeAwsSigV4(request, creds.access_key_secret, amz_date, region_, service_,
                                  internal::AwsSigV4DefaultSignedHeaders(request), payload_hash);
    request.SetHeader("Authorization", internal::AwsSigV4Authorization(creds.access_key_id, parts));
  }

 private:
  const std::string region_;
  const std::string service_;
};

}  // namespace

std::unique_ptr<Signer> MakeAwsSigV4Signer(std::string region, std::string service) {
  return std::make_unique<AwsSigV4Signer>(std::move(region), std::move(service));
}

}  // namespace ossmount::auth
