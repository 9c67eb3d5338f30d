// Server-side signature verification for the project's test server: OSS V1, OSS V4 (header
// and presigned forms) and AWS SigV4 (header form). Recomputes the signature with the same
// code the signers use and compares in constant time. Messages follow the real services'
// wording and never contain secrets, tokens or signatures.
#include <algorithm>
#include <cstdlib>

#include "auth/crypto.h"
#include "auth/signer.h"
#include "auth/signing_internal.h"

namespace ossmount::auth {
namespace {

using internal::Trim;

Status Denied(std::string message) { return Status(ErrorCode::kAccessDenied, std::move(message)); }

Status Mismatch() {
  return Status(ErrorCode::kSignatureDoesNotMatch,
                "The request signature we calculated does not match the signature you provided. "
                "Check your key and signing method.");
}

Status UnknownKey() {
  return Status(ErrorCode::kInvalidAccessKeyId,
                "The access key id you provided does not exist in our records.");
}

Status Skewed() {
  return Status(ErrorCode::kRequestTimeTooSkewed,
                "The difference between the request time and the current time is too large.");
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(
        s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

// "Credential=a/b, SignedHeaders=x;y,Signature=z" -> value of `field`, or nullopt.
std::optional<std::string_view> AuthField(std::string_view params, std::string_view field) {
  for (std::string_view part : Split(params, ',')) {
    part = Trim(part);
    size_t eq = part.find('=');
    if (eq != std::string_view::npos && part.substr(0, eq) == field) return part.substr(eq + 1);
  }
  return std::nullopt;
}

const std::string* QueryParam(const Params& query, std::string_view name) {
  for (const auto& [n, v] : query) {
    if (n == name) return &v;
  }
  return nullptr;
}

Params WithoutParams(const Params& query, std::initializer_list<std::string_view> names) {
  Params out;
  for (const auto& p : query) {
    if (std::find(names.begin(), names.end(), p.first) == names.end()) out.push_back(p);
  }
  return out;
}

Result<std::string> LookUpSecret(const VerifyOptions& options, std::string_view ak) {
  if (ak.empty() || !options.secret_for) return UnknownKey();
  std::optional<std::string> secret = options.secret_for(ak);
  if (!secret) return UnknownKey();
  return *std::move(secret);
}

int64_t NowSeconds(const VerifyOptions& options) {
  return std::chrono::duration_cast<std::chrono::seconds>(options.now.time_since_epoch()).count();
}

bool TooSkewed(const VerifyOptions& options, int64_t request_time) {
  return std::llabs(NowSeconds(options) - request_time) > options.max_skew.count();
}

Status CheckToken(const VerifyOptions& options, std::string_view ak, const std::string* token) {
  if (token == nullptr || !options.check_token) return Status::Ok();
  return options.check_token(ak, *token);
}

// Parses "<ak>/<yyyymmdd>/<region>/<product>/<terminator>".
struct Scope {
  std::string_view ak, date, region, product;
};
std::optional<Scope> ParseScope(std::string_view credential, std::string_view terminator) {
  std::vector<std::string_view> parts = Split(credential, '/');
  if (parts.size() != 5 || parts[4] != terminator || parts[1].size() != 8) return std::nullopt;
  return Scope{parts[0], parts[1], parts[2], parts[3]};
}

Status CheckRegion(const VerifyOptions& options, std::string_view region) {
  if (!options.expected_region.empty() && region != options.expected_region) {
    return Denied("The credential scope names region '" + std::string(region) +
                  "' but this endpoint serves region '" + options.expected_region + "'.");
  }
  return Status::Ok();
}

// ---- OSS V1 ---------------------------------------------------------------------------------

Status VerifyOssV1Header(const SignableRequest& request, std::string_view rest,
                         const VerifyOptions& options) {
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return Denied("Malformed OSS V1 Authorization header.");
  std::string_view ak = Trim(rest.substr(0, colon));
  std::string_view sig = Trim(rest.substr(colon + 1));
  Result<std::string> secret = LookUpSecret(options, ak);
  if (!secret.ok()) return secret.status();
  const std::string* date = request.Header("Date");
  if (date == nullptr) return Denied("The request carries no Date header.");
  Result<int64_t> t = ParseRfc1123(Trim(*date));
  if (!t.ok()) return Denied("The Date header is not an RFC 1123 date.");
  std::string expected = internal::OssV1Signature(
      *secret, internal::OssV1StringToSign(request, std::string(Trim(*date))));
  if (!internal::ConstantTimeEquals(expected, sig)) return Mismatch();
  if (TooSkewed(options, *t)) return Skewed();
  return CheckToken(options, ak, request.Header("x-oss-security-token"));
}

Status VerifyOssV1Presigned(const SignableRequest& request, const VerifyOptions& options) {
  const std::string* ak = QueryParam(request.query, "OSSAccessKeyId");
  const std::string* expires = QueryParam(request.query, "Expires");
  const std::string* sig = QueryParam(request.query, "Signature");
  if (ak == nullptr || expires == nullptr || sig == nullptr) {
    return Denied("A presigned V1 URL needs OSSAccessKeyId, Expires and Signature.");
  }
  Result<std::string> secret = LookUpSecret(options, *ak);
  if (!secret.ok()) return secret.status();
  char* end = nullptr;
  long long expires_at = std::strtoll(expires->c_str(), &end, 10);
  if (expires->empty() || *end != '\0') return Denied("Expires is not a number.");
  SignableRequest signed_req = request;
  signed_req.query = WithoutParams(request.query, {"OSSAccessKeyId", "Expires", "Signature"});
  std::string expected =
      internal::OssV1Signature(*secret, internal::OssV1StringToSign(signed_req, *expires));
  if (!internal::ConstantTimeEquals(expected, *sig)) return Mismatch();
  if (NowSeconds(options) > expires_at) return Denied("Request has expired.");
  return CheckToken(options, *ak, QueryParam(request.query, "security-token"));
}

// ---- OSS V4 ---------------------------------------------------------------------------------

Status VerifyOssV4(const VerifyOptions& options, std::string_view credential,
                   std::string_view additional, std::string_view signature,
                   std::string_view iso_date, const SignableRequest& to_sign,
                   const std::string* token, std::optional<int64_t> expires_seconds) {
  std::optional<Scope> scope = ParseScope(credential, "aliyun_v4_request");
  if (!scope) return Denied("Malformed V4 credential scope.");
  Result<std::string> secret = LookUpSecret(options, scope->ak);
  if (!secret.ok()) return secret.status();
  if (Status s = CheckRegion(options, scope->region); !s.ok()) return s;
  Result<int64_t> t = ParseIso8601(iso_date);
  if (iso_date.size() != 16 || !t.ok()) return Denied("x-oss-date is not an ISO 8601 time.");
  if (iso_date.substr(0, 8) != scope->date) {
    return Denied("The credential scope date does not match x-oss-date.");
  }
  SignableRequest req = to_sign;
  req.additional_headers.clear();
  if (!additional.empty()) {
    for (std::string_view h : Split(additional, ';')) req.additional_headers.emplace_back(h);
  }
  internal::OssV4Parts parts =
      internal::ComputeOssV4(req, *secret, iso_date, scope->region, scope->product);
  if (!internal::ConstantTimeEquals(parts.signature, signature)) return Mismatch();
  if (expires_seconds) {
    if (NowSeconds(options) > *t + *expires_seconds) return Denied("Request has expired.");
    if (*t - NowSeconds(options) > options.max_skew.count()) return Skewed();
  } else if (TooSkewed(options, *t)) {
    return Skewed();
  }
  return CheckToken(options, scope->ak, token);
}

Status VerifyOssV4Header(const SignableRequest& request, std::string_view rest,
                         const VerifyOptions& options) {
  std::optional<std::string_view> credential = AuthField(rest, "Credential");
  std::optional<std::string_view> signature = AuthField(rest, "Signature");
  if (!credential || !signature) return Denied("Malformed OSS V4 Authorization header.");
  std::string_view additional = AuthField(rest, "AdditionalHeaders").value_or("");
  const std::string* date = request.Header("x-oss-date");
  if (date == nullptr) return Denied("The request carries no x-oss-date header.");
  return VerifyOssV4(options, *credential, additional, *signature, Trim(*date), request,
                     request.Header("x-oss-security-token"), std::nullopt);
}

Status VerifyOssV4Presigned(const SignableRequest& request, const VerifyOptions& options) {
  const std::string* version = QueryParam(request.query, "x-oss-signature-version");
  const std::string* credential = QueryParam(request.query, "x-oss-credential");
  const std::string* date = QueryParam(request.query, "x-oss-date");
  const std::string* expires = QueryParam(request.query, "x-oss-expires");
  const std::string* signature = QueryParam(request.query, "x-oss-signature");
  if (version == nullptr || *version != "OSS4-HMAC-SHA256" || credential == nullptr ||
      date == nullptr || expires == nullptr || signature == nullptr) {
    return Denied(
        "A presigned V4 URL needs x-oss-signature-version=OSS4-HMAC-SHA256, "
        "x-oss-credential, x-oss-date, x-oss-expires and x-oss-signature.");
  }
  char* end = nullptr;
  long long expires_seconds = std::strtoll(expires->c_str(), &end, 10);
  if (expires->empty() || *end != '\0' || expires_seconds < 0) {
    return Denied("x-oss-expires is not a number of seconds.");
  }
  const std::string* additional = QueryParam(request.query, "x-oss-additional-headers");
  SignableRequest to_sign = request;
  to_sign.query = WithoutParams(request.query, {"x-oss-signature"});
  return VerifyOssV4(options, *credential, additional ? *additional : std::string(), *signature,
                     *date, to_sign, QueryParam(request.query, "x-oss-security-token"),
                     expires_seconds);
}

}  // namespace

Status VerifyOssRequest(const SignableRequest& request, const VerifyOptions& options) {
  const std::string* auth = request.Header("Authorization");
  if (auth == nullptr) {
    if (QueryParam(request.query, "x-oss-signature") != nullptr) {
      return VerifyOssV4Presigned(request, options);
    }
    if (QueryParam(request.query, "Signature") != nullptr) {
      return VerifyOssV1Presigned(request, options);
    }
    return Denied(
        "You have no right to access this object because no Authorization header "
        "or signed URL was provided.");
  }
  std::string_view a = Trim(*auth);
  constexpr std::string_view kV1 = "OSS ";
  constexpr std::string_view kV4 = "OSS4-HMAC-SHA256 ";
  if (a.substr(0, kV1.size()) == kV1)
    return VerifyOssV1Header(request, a.substr(kV1.size()), options);
  if (a.substr(0, kV4.size()) == kV4)
    return VerifyOssV4Header(request, a.substr(kV4.size()), options);
  return Denied("The Authorization header uses an unsupported scheme.");
}

Status VerifyAwsSigV4Request(const SignableRequest& request, const VerifyOptions& options) {
  const std::string* auth = request.Header("Authorization");
  if (auth == nullptr) return Denied("Access Denied: the request carries no Authorization header.");
  std::string_view a = Trim(*auth);
  constexpr std::string_view kPrefix = "AWS4-HMAC-SHA256 ";
  if (a.substr(0, kPrefix.size()) != kPrefix) {
    return Denied(
        "The Authorization header uses an unsupported scheme; expected AWS4-HMAC-SHA256.");
  }
  a.remove_prefix(kPrefix.size());
  std::optional<std::string_view> credential = AuthField(a, "Credential");
  std::optional<std::string_view> signed_headers = AuthField(a, "SignedHeaders");
  std::optional<std::string_view> signature = AuthField(a, "Signature");
  if (!credential || !signed_headers || !signature) {
    return Denied("Malformed AWS4-HMAC-SHA256 Authorization header.");
  }
  std::optional<Scope> scope = ParseScope(*credential, "aws4_request");
  if (!scope) return Denied("Malformed AWS4 credential scope.");
  Result<std::string> secret = LookUpSecret(options, scope->ak);
  if (!secret.ok()) return secret.status();
  if (Status s = CheckRegion(options, scope->region); !s.ok()) return s;

  std::vector<std::string> names;
  for (std::string_view h : Split(*signed_headers, ';')) names.push_back(internal::ToLower(h));
  if (std::find(names.begin(), names.end(), "host") == names.end()) {
    return Denied("SignedHeaders must include host.");
  }
  if (!std::is_sorted(names.begin(), names.end())) return Mismatch();
  const std::string* date = request.Header("x-amz-date");
  if (date == nullptr) return Denied("The request carries no x-amz-date header.");
  std::string_view amz_date = Trim(*date);
  Result<int64_t> t = ParseIso8601(amz_date);
  if (amz_date.size() != 16 || !t.ok()) return Denied("x-amz-date is not an ISO 8601 time.");
  if (amz_date.substr(0, 8) != scope->date) {
    return Denied("The credential scope date does not match x-amz-date.");
  }
  // Every x-amz-* header the request carries must be signed, so none can be slipped in.
  for (const auto& [name, value] : request.headers) {
    std::string lower = internal::ToLower(name);
    if (lower.rfind("x-amz-", 0) == 0 &&
        std::find(names.begin(), names.end(), lower) == names.end()) {
      return Denied("Header " + lower + " is present but not signed.");
    }
  }
  const std::string* payload = request.Header("x-amz-content-sha256");
  std::string payload_hash =
      payload ? std::string(Trim(*payload)) : std::string(internal::kEmptySha256);
  internal::AwsSigV4Parts parts = internal::ComputeAwsSigV4(
      request, *secret, amz_date, scope->region, scope->product, names, payload_hash);
  if (!internal::ConstantTimeEquals(parts.signature, *signature)) return Mismatch();
  if (TooSkewed(options, *t)) return Skewed();
  return CheckToken(options, scope->ak, request.Header("x-amz-security-token"));
}

}  // namespace ossmount::auth
