// OSS signature V1 (HMAC-SHA1), header and presigned-URL forms (Alibaba Cloud OSS API reference).
#include <algorithm>
#include <array>

#include "auth/crypto.h"
#include "auth/signer.h"
#include "auth/signing_internal.h"
#include "common/base64.h"
#include "common/url.h"

namespace ossmount::auth {
namespace internal {
namespace {

// The union of go-sdk-v2's requiredSignedParametersMap and python oss2's sub-resource list.
// Sorted, for binary search.
constexpr std::array<std::string_view, 76> kSubResources = {
    "acl",
    "append",
    "asyncFetch",
    "bucketArchiveDirectRead",
    "bucketInfo",
    "callback",
    "callback-var",
    "cloudboxes",
    "cname",
    "comp",
    "continuation-token",
    "cors",
    "delete",
    "encryption",
    "endTime",
    "group",
    "httpsConfig",
    "img",
    "inventory",
    "inventoryId",
    "lifecycle",
    "link",
    "live",
    "location",
    "logging",
    "metaQuery",
    "objectInfo",
    "objectMeta",
    "partNumber",
    "policy",
    "policyStatus",
    "position",
    "publicAccessBlock",
    "qos",
    "qosInfo",
    "redundancyTransition",
    "referer",
    "regionList",
    "replication",
    "replicationLocation",
    "replicationProgress",
    "requestPayment",
    "resourceGroup",
    "resourcePool",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "security-token",
    "sequential",
    "startTime",
    "stat",
    "status",
    "style",
    "styleName",
    "symlink",
    "tagging",
    "transferAcceleration",
    "uploadId",
    "uploads",
    "userDefinedLogFieldsConfig",
    "versionId",
    "versioning",
    "versions",
    "vod",
    "website",
    "worm",
    "wormExtend",
    "wormId",
    "x-oss-ac-forward-allow",
    "x-oss-ac-source-ip",
    "x-oss-ac-subnet-mask",
    "x-oss-ac-vpc-id",
};

bool IsSubResource(std::string_view name, const std::vector<std::string>& extra) {
  if (IsOssV1SubResource(name)) return true;
  return std::find(extra.begin(), extra.end(), name) != extra.end();
}

}  // namespace

bool IsOssV1SubResource(std::string_view name) {
  if (name.substr(0, 6) == "x-oss-") return true;
  return std::binary_search(kSubResources.begin(), kSubResources.end(), name);
}

std::string OssV1CanonicalResource(const SignableRequest& request,
                                   const std::vector<std::string>& extra_subresources) {
  std::string out = "/";
  if (!request.bucket.empty()) {
    out += request.bucket;
    out += '/';
    out += request.key;  // raw, not percent-encoded
  }
  std::vector<std::pair<std::string, std::string>> subs;
  for (const auto& [name, value] : request.query) {
    if (IsSubResource(name, extra_subresources)) subs.emplace_back(name, value);
  }
  std::sort(subs.begin(), subs.end());
  char sep = '?';
  for (const auto& [name, value] : subs) {
    out += sep;
    sep = '&';
    out += name;
    if (!value.empty()) {
      out += '=';
      out += value;
    }
  }
  return out;
}

std::string OssV1StringToSign(const SignableRequest& request, std::string_view date_slot,
                              const std::vector<std::string>& extra_subresources) {
  std::string s = request.method;
  s += '\n';
  if (const std::string* md5 = request.Header("Content-MD5")) s += Trim(*md5);
  s += '\n';
  if (const std::string* type = request.Header("Content-Type")) s += Trim(*type);
  s += '\n';
  s += date_slot;
  s += '\n';
  auto oss_headers = CollectHeaders(
      request, [](const std::string& lower) { return lower.rfind("x-oss-", 0) == 0; });
  for (const auto& [name, value] : oss_headers) {
    s += name;
    s += ':';
    s += value;
    s += '\n';
  }
  s += OssV1CanonicalResource(request, extra_subresources);
  return s;
}

std::string OssV1Signature(std::string_view secret, std::string_view string_to_sign) {
  return ossmount::Base64Encode(HmacSha1(secret, string_to_sign));
}

}  // namespace internal

namespace {

class OssV1Signer final : public Signer {
 public:
  void Sign(SignableRequest& request, const Credentials& creds, SystemTime now) const override {
    if (creds.anonymous) return;
    std::string date = FormatRfc1123(now);
    request.SetHeader("Date", date);
    if (!creds.security_token.empty()) {
      request.SetHeader("x-oss-security-token", creds.security_token);
    }
    std::string sts = internal::OssV1StringToSign(request, date);
    request.SetHeader("Authorization", "OSS " + creds.access_key_id + ":" +
                                           internal::OssV1Signature(creds.access_key_secret, sts));
  }
};

}  // namespace

std::unique_ptr<Signer> MakeOssV1Signer() { return std::make_unique<OssV1Signer>(); }

Params PresignOssV1(const SignableRequest& request, const Credentials& creds,
                    int64_t expires_epoch) {
  if (creds.anonymous) return request.query;
  SignableRequest signed_req = request;
  if (!creds.security_token.empty()) {
    signed_req.query.emplace_back("security-token", creds.security_token);
  }
  std::string sts = internal::OssV1StringToSign(signed_req, std::to_string(expires_epoch));
  Params out = signed_req.query;
  out.emplace_back("Expires", std::to_string(expires_epoch));
  out.emplace_back("OSSAccessKeyId", creds.access_key_id);
  out.emplace_back("Signature", internal::OssV1Signature(creds.access_key_secret, sts));
  return out;
}

std::string EncodePresignedQuery(const Params& params) {
  Params sorted = params;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return EncodeQueryString(sorted);
}

}  // namespace ossmount::auth
