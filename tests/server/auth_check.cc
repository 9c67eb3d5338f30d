#include "auth_check.h"

#include <chrono>

#ifdef OSSMOUNT_TESTSERVER_HAVE_VERIFIERS
#include "auth/signer.h"
#endif

namespace ossmount::testserver {

#ifdef OSSMOUNT_TESTSERVER_HAVE_VERIFIERS
namespace {

const std::string* PresentedToken(const RequestInfo& info, const HttpRequest& req,
                                  std::string& storage) {
  for (const char* name : {"x-oss-security-token", "x-amz-security-token"}) {
    if (auto it = req.find(name); it != req.end()) {
      storage = std::string(it->value());
      return &storage;
    }
  }
  for (const char* name : {"security-token", "x-oss-security-token", "X-Amz-Security-Token"}) {
    if (const std::string* v = info.Query(name)) return v;
  }
  return nullptr;
}

}  // namespace
#endif

RequestAuthenticator::RequestAuthenticator(AuthSettings settings) : settings_(std::move(settings)) {
  if (!settings_.sts_token.empty())
    tokens_.push_back({settings_.sts_token, settings_.sts_expires_at});
}

void RequestAuthenticator::AddStsToken(std::string token, std::optional<int64_t> expires_at) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Token& t : tokens_) {
    if (t.value == token) {
      t.expires_at = expires_at;
      return;
    }
  }
  tokens_.push_back({std::move(token), expires_at});
}

std::optional<RequestAuthenticator::Token> RequestAuthenticator::FindToken(
    std::string_view presented) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Token& t : tokens_) {
    if (t.value == presented) return t;
  }
  return std::nullopt;
}

std::optional<AuthFailure> RequestAuthenticator::Check(const RequestInfo& info,
                                                       const HttpRequest& req) const {
  if (!settings_.enabled) return std::nullopt;
  const bool s3 = info.dialect == Dialect::kS3;
  if (info.auth == AuthScheme::kNone) {
    return AuthFailure{403, "AccessDenied",
                       "You are forbidden to access this resource anonymously."};
  }
  if (info.auth == AuthScheme::kAwsV2) {
    return AuthFailure{400, "InvalidArgument",
                       "AWS signature version 2 is not supported; use SigV4."};
  }
#ifndef OSSMOUNT_TESTSERVER_HAVE_VERIFIERS
  (void)req;
  (void)s3;
  return AuthFailure{
      403, "AccessDenied",
      "this test server was built without the src/auth verifiers; run with --auth off"};
#else
  const auto now = std::chrono::system_clock::now();
  std::string token_storage;
  const std::string* token = PresentedToken(info, req, token_storage);
  bool token_expected;
  {
    std::lock_guard<std::mutex> lock(mu_);
    token_expected = !tokens_.empty();
  }
  if (token_expected && !token) {
    return AuthFailure{403, s3 ? "InvalidToken" : "InvalidSecurityToken",
                       "The security token is missing: this access key requires one."};
  }
  std::optional<AuthFailure> token_failure;
  auto check_token = [&](std::string_view, std::string_view presented) -> Status {
    std::optional<Token> accepted = FindToken(presented);
    if (!accepted) {
      token_failure = AuthFailure{403, s3 ? "InvalidToken" : "InvalidSecurityToken",
                                  "The security token included in the request is invalid."};
      return Status(ErrorCode::kTokenExpired, "invalid security token");
    }
    if (accepted->expires_at &&
        std::chrono::system_clock::to_time_t(now) >= *accepted->expires_at) {
      token_failure = AuthFailure{403, s3 ? "ExpiredToken" : "SecurityTokenExpired",
                                  "The security token included in the request is expired."};
      return Status(ErrorCode::kTokenExpired, "security token expired");
    }
    return Status::Ok();
  };
  if (token) {
    // Decide the token before the signature: an expired token is what OSS reports first.
    Status t = check_token(settings_.access_key_id, *token);
    if (!t.ok()) return token_failure;
  }

  auth::SignableRequest sr;
  sr.method = info.method;
  sr.bucket = info.bucket;
  sr.key = info.key;
  sr.path = info.path;
  sr.query = info.query;
  for (const auto& f : req)
    sr.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));

  auth::VerifyOptions options;
  options.secret_for = [this](std::string_view id) -> std::optional<std::string> {
    if (id == settings_.access_key_id) return settings_.access_key_secret;
    return std::nullopt;
  };
  options.check_token = check_token;
  options.now = now;
  options.expected_region = settings_.region;
  Status s = s3 ? auth::VerifyAwsSigV4Request(sr, options) : auth::VerifyOssRequest(sr, options);
  if (s.ok()) return std::nullopt;
  if (token_failure) return token_failure;
  switch (s.code()) {
    case ErrorCode::kInvalidAccessKeyId:
      return AuthFailure{403, "InvalidAccessKeyId",
                         "The OSS Access Key Id you provided does not exist in our records."};
    case ErrorCode::kSignatureDoesNotMatch:
      return AuthFailure{403, "SignatureDoesNotMatch",
                         "The request signature we calculated does not match the signature you "
                         "provided. Check your key and signing method. (" +
                             s.message() + ")"};
    case ErrorCode::kRequestTimeTooSkewed:
      return AuthFailure{
          403, "RequestTimeTooSkewed",
          "The difference between the request time and the current time is too large."};
    case ErrorCode::kTokenExpired:
      return AuthFailure{403, s3 ? "ExpiredToken" : "SecurityTokenExpired", s.message()};
    case ErrorCode::kInvalidArgument:
      return AuthFailure{400, s3 ? "AuthorizationHeaderMalformed" : "InvalidArgument", s.message()};
    default:
      return AuthFailure{403, "AccessDenied", s.message()};
  }
#endif
}

}  // namespace ossmount::testserver
