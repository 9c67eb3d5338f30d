// OSS signature V4 (OSS4-HMAC-SHA256), header and presigned-URL forms (Alibaba Cloud OSS API
// reference).
#include <algorithm>

#include "auth/crypto.h"
#include "auth/signer.h"
#include "auth/signing_internal.h"
#include "common/url.h"

namespace ossmount::auth {
namespace internal {
namespace {

constexpr std::string_view kAlgorithm = "OSS4-HMAC-SHA256";

bool SignedAnyway(const std::string& lower) {
  return lower.rfind("x-oss-", 0) == 0 || lower == "content-type" || lower == "content-md5";
}

}  // namespace

std::string OssV4CanonicalUri(std::string_view bucket, std::string_view key) {
  std::string path = "/";
  if (!bucket.empty()) {
    path += bucket;
    path += '/';
    path += key;
  }
  return PercentEncode(path, /*keep_slash=*/true);
}

std::string OssV4CanonicalQuery(const Params& query) {
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
    if (!value.empty()) {
      out += '=';
      out += value;
    }
  }
  return out;
}

std::vector<std::string> OssV4FilteredAdditionalHeaders(const SignableRequest& request) {
  std::vector<std::string> out;
  for (const std::string& name : request.additional_headers) {
    std::string lower = ToLower(Trim(name));
    if (lower.empty() || SignedAnyway(lower) || request.Header(lower) == nullptr) continue;
    out.push_back(std::move(lower));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string OssV4SigningKey(std::string_view secret, std::string_view yyyymmdd,
                            std::string_view region, std::string_view product) {
  std::string k = HmacSha256("aliyun_v4" + std::string(secret), yyyymmdd);
  k = HmacSha256(k, region);
  k = HmacSha256(k, product);
  return HmacSha256(k, "aliyun_v4_request");
}

OssV4Parts ComputeOssV4(const SignableRequest& request, std::string_view secret,
                        std::string_view iso_datetime, std::string_view region,
                        std::string_view product) {
  OssV4Parts parts;
  std::vector<std::string> additional = OssV4FilteredAdditionalHeaders(request);
  for (const std::string& h : additional) {
    if (!parts.additional_headers.empty()) parts.additional_headers += ';';
    parts.additional_headers += h;
  }
  auto headers = CollectHeaders(request, [&](const std::string& lower) {
    return SignedAnyway(lower) || std::binary_search(additional.begin(), additional.end(), lower);
  });
  const std::string* payload = request.Header("x-oss-content-sha256");

  std::string& cr = parts.canonical_request;
  cr = request.method;
  cr += '\n';
  cr += OssV4CanonicalUri(request.bucket, request.key);
  cr += '\n';
  cr += OssV4CanonicalQuery(request.query);
  cr += '\n';
  for (const auto& [name, value] : headers) {
    cr += name;
    cr += ':';
    cr += value;
    cr += '\n';
  }
  cr += '\n';
  cr += parts.additional_headers;
  cr += '\n';
  cr += payload ? std::string(Trim(*payload)) : std::string(kUnsignedPayload);

  std::string_view date = iso_datetime.substr(0, 8);
  parts.scope = std::string(date) + "/" + std::string(region) + "/" + std::string(product) +
                "/aliyun_v4_request";
  parts.string_to_sign = std::string(kAlgorithm) + "\n" + std::string(iso_datetime) + "\n" +
                         parts.scope + "\n" + HexEncode(Sha256(cr));
  std::string key = OssV4SigningKey(secret, date, region, product);
  parts.signing_key_hex = HexEncode(key);
  parts.signature = HexEncode(HmacSha256(key, parts.string_to_sign));
  return parts;
}

std::string OssV4Authorization(std::string_view access_key_id, const OssV4Parts& parts) {
  std::string auth =
      std::string(kAlgorithm) + " Credential=" + std::string(access_key_id) + "/" + parts.scope;
  if (!parts.additional_headers.empty()) auth += ",AdditionalHeaders=" + parts.additional_headers;
  auth += ",Signature=" + parts.signature;
  return auth;
}

}  // namespace internal

namespace {

class OssV4Signer final : public Signer {
 public:
  OssV4Signer(std::string region, std::string product)
      : region_(std::move(region)), product_(std::move(product)) {}

  void Sign(SignableRequest& request, const Credentials& creds, SystemTime now) const override {
    if (creds.anonymous) return;
    std::string iso = FormatIso8601Basic(now);
    // Date is sent as the SDKs do, but not signed (unless listed in additional_headers).
    request.SetHeader("Date", FormatRfc1123(now));
    request.SetHeader("x-oss-date", iso);
    request.SetHeader("x-oss-content-sha256", std::string(internal::kUnsignedPayload));
    if (!creds.security_token.empty()) {
      request.SetHeader("x-oss-security-token", creds.security_token);
    }
    internal::OssV4Parts parts =
        internal::ComputeOssV4(request, creds.access_key_secret, iso, region_, product_);
    request.SetHeader("Authorization", internal::OssV4Authorization(creds.access_key_id, parts));
  }

 private:
  const std::string region_;
  const std::string product_;
};

}  // namespace

std::unique_ptr<Signer> MakeOssV4Signer(std::string region, std::string product) {
  return std::make_unique<OssV4Signer>(std::move(region), std::move(product));
}

Params PresignOssV4(const SignableRequest& request, const Credentials& creds, SystemTime now,
                    std::chrono::seconds expires, const std::string& region,
                    const std::string& product) {
  if (creds.anonymous) return request.query;
  SignableRequest signed_req = request;
  std::string iso = FormatIso8601Basic(now);
  std::string scope = FormatYyyymmdd(now) + "/" + region + "/" + product + "/aliyun_v4_request";
  Params& q = signed_req.query;
  q.emplace_back("x-oss-signature-version", "OSS4-HMAC-SHA256");
  q.emplace_back("x-oss-date", iso);
  q.emplace_back("x-oss-expires", std::to_string(expires.count()));
  q.emplace_back("x-oss-credential", creds.access_key_id + "/" + scope);
  std::vector<std::string> additional = internal::OssV4FilteredAdditionalHeaders(request);
  if (!additional.empty()) {
    std::string joined;
    for (const std::string& h : additional) {
      if (!joined.empty()) joined += ';';
      joined += h;
    }
    q.emplace_back("x-oss-additional-headers", joined);
  }
  if (!creds.security_token.empty()) q.emplace_back("x-oss-security-token", creds.security_token);
  internal::OssV4Parts parts =
      internal::ComputeOssV4(signed_req, creds.access_key_secret, iso, region, product);
  q.emplace_back("x-oss-signature", parts.signature);
  return q;
}

}  // namespace ossmount::auth
