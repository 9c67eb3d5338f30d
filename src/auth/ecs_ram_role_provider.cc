// ECS instance RAM role credentials from the metadata service (the ECS instance metadata service).
#include <mutex>

#include <rapidjson/document.h>
#include <spdlog/spdlog.h>

#include "auth/providers_internal.h"
#include "auth/signing_internal.h"
#include "common/bounded_json.h"

namespace ossmount::auth {
namespace {

constexpr const char* kTokenTtlHeader = "X-aliyun-ecs-metadata-token-ttl-seconds";
constexpr const char* kTokenHeader = "X-aliyun-ecs-metadata-token";
constexpr const char* kTokenTtl = "21600";
constexpr const char* kCredentialsPath = "/latest/meta-data/ram/security-credentials/";

class EcsRamRoleProvider final : public CredentialsProvider {
 public:
  explicit EcsRamRoleProvider(EcsRamRoleOptions options) : options_(std::move(options)) {
    while (!options_.metadata_url.empty() && options_.metadata_url.back() == '/') {
      options_.metadata_url.pop_back();
    }
    if (options_.role != "auto") role_ = options_.role;
  }

  Result<Credentials> Get() override {
    SystemTime now = options_.clock();
    bool have_valid = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (creds_ && !invalidated_) {
        if (now + options_.refresh_margin < *creds_->expiration) return *creds_;
        have_valid = now < *creds_->expiration;
        if (have_valid && now < next_attempt_) return *creds_;
      }
    }
    // Refresh. A caller holding still-valid credentials never waits for another refresher.
    std::unique_lock<std::mutex> refresh(refresh_mu_, std::defer_lock);
    if (have_valid) {
      if (!refresh.try_lock()) {
        std::lock_guard<std::mutex> lock(mu_);
        return *creds_;
      }
    } else {
      refresh.lock();
      std::lock_guard<std::mutex> lock(mu_);  // someone may have refreshed meanwhile
      if (creds_ && !invalidated_ &&
          options_.clock() + options_.refresh_margin < *creds_->expiration) {
        return *creds_;
      }
    }
    Result<Credentials> fresh = Fetch();
    std::lock_guard<std::mutex> lock(mu_);
    if (fresh.ok()) {
      creds_ = *fresh;
      invalidated_ = false;
      // The service may keep handing out credentials that are already within the margin
      // (it rotates them late): ask again only after retry_interval, not on every Get().
      if (options_.clock() + options_.refresh_margin >= *creds_->expiration) {
        next_attempt_ = options_.clock() + options_.retry_interval;
      }
      return *creds_;
    }
    next_attempt_ = options_.clock() + options_.retry_interval;
    if (creds_ && options_.clock() < *creds_->expiration) {
      spdlog::warn("refreshing {} failed, using the current credentials until {}: {}", Describe(),
                   FormatIso8601(*creds_->expiration), fresh.status().message());
      return *creds_;
    }
    return fresh.status();
  }

  std::string Describe() const override {
    return "ECS RAM role '" + options_.role + "' via " + options_.metadata_url;
  }

  void Invalidate() override {
    std::lock_guard<std::mutex> lock(mu_);
    invalidated_ = true;
    next_attempt_ = SystemTime{};
  }

 private:
  Status Failure(ErrorCode code, const std::string& what) const {
    return Status(code, Describe() + ": " + what +
                            ". Check that the instance has this RAM role attached (ECS console) "
                            "and that " +
                            options_.metadata_url + " is reachable without a proxy");
  }

  // Performs the metadata calls. REQUIRES: refresh_mu_ held, mu_ not held.
  Result<Credentials> Fetch() {
    if (!options_.fetcher) return Failure(ErrorCode::kInvalidArgument, "no HTTP fetcher was given");
    std::vector<std::pair<std::string, std::string>> headers;
    Result<HttpFetchResult> token = options_.fetcher(
        "PUT", options_.metadata_url + "/latest/api/token", {{kTokenTtlHeader, kTokenTtl}});
    if (token.ok() && token->status == 200 && !internal::Trim(token->body).empty()) {
      headers.emplace_back(kTokenHeader, std::string(internal::Trim(token->body)));
    } else {
      spdlog::warn("{}: no metadata token (hardened mode unavailable), continuing without one",
                   Describe());
    }

    std::string role;
    {
      std::lock_guard<std::mutex> lock(mu_);
      role = role_;
    }
    if (role.empty()) {
      std::string url = options_.metadata_url + kCredentialsPath;
      Result<HttpFetchResult> r = options_.fetcher("GET", url, headers);
      if (!r.ok()) {
        return Failure(ErrorCode::kNetwork, "discovering the role name (GET " + url +
                                                ") failed: " + r.status().message());
      }
      if (r->status == 404) {
        return Failure(ErrorCode::kAccessDenied,
                       "no RAM role is attached to this instance (GET " + url + " returned 404)");
      }
      if (r->status != 200) {
        return Failure(ErrorCode::kServerError, "discovering the role name (GET " + url +
                                                    ") returned HTTP " + std::to_string(r->status));
      }
      std::string_view body = internal::Trim(r->body);
      role = std::string(internal::Trim(body.substr(0, body.find_first_of("\r\n"))));
      if (role.empty()) {
        return Failure(ErrorCode::kAccessDenied, "no RAM role is attached to this instance");
      }
      std::lock_guard<std::mutex> lock(mu_);
      role_ = role;
    }

    std::string url = options_.metadata_url + kCredentialsPath + role;
    Result<HttpFetchResult> r = options_.fetcher("GET", url, headers);
    if (!r.ok()) {
      return Failure(ErrorCode::kNetwork, "GET " + url + " failed: " + r.status().message());
    }
    if (r->status == 404) {
      return Failure(
          ErrorCode::kAccessDenied,
          "role '" + role + "' is not attached to this instance (GET " + url + " returned 404)");
    }
    if (r->status != 200) {
      return Failure(ErrorCode::kServerError,
                     "GET " + url + " returned HTTP " + std::to_string(r->status));
    }
    return Parse(r->body, url);
  }

  // Never quotes the body: it holds the secret.
  Result<Credentials> Parse(const std::string& body, const std::string& url) const {
    rapidjson::Document doc;
    // The reply comes from the network: bounded like any untrusted JSON.
    Status parsed = ParseBoundedJson(body, {kMaxEcsResponseBytes}, &doc);
    if (!parsed.ok()) {
      return Failure(ErrorCode::kProtocol,
                     "the response of GET " + url + " is not a JSON object: " + parsed.message());
    }
    if (!doc.IsObject()) {
      return Failure(ErrorCode::kProtocol, "the response of GET " + url + " is not a JSON object");
    }
    auto str = [&](const char* name) -> std::string {
      auto it = doc.FindMember(name);
      if (it == doc.MemberEnd() || !it->value.IsString()) return {};
      return std::string(it->value.GetString(), it->value.GetStringLength());
    };
    std::string code = str("Code");
    if (code != "Success") {
      bool printable =
          code.size() <= 64 && code.find_first_not_of(
                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789._-") == std::string::npos;
      return Failure(ErrorCode::kAccessDenied, "the metadata service answered Code '" +
                                                   (printable ? code : "?") +
                                                   "' instead of 'Success'");
    }
    Credentials c;
    c.access_key_id = str("AccessKeyId");
    c.access_key_secret = str("AccessKeySecret");
    c.security_token = str("SecurityToken");
    if (c.access_key_id.empty() || c.access_key_secret.empty() || c.security_token.empty()) {
      return Failure(ErrorCode::kProtocol,
                     "the response lacks AccessKeyId, AccessKeySecret or SecurityToken");
    }
    Result<int64_t> exp = ParseIso8601(str("Expiration"));
    if (!exp.ok()) return Failure(ErrorCode::kProtocol, "the response has no valid Expiration");
    Result<SystemTime> when = SystemTimeFromUnix(*exp);
    if (!when.ok())
      return Failure(ErrorCode::kProtocol, "the response's Expiration is out of range");
    c.expiration = *when;
    return c;
  }

  EcsRamRoleOptions options_;
  std::mutex refresh_mu_;  // held by the one thread fetching; taken before mu_, never after
  std::mutex mu_;          // guards the fields below; never held across a fetch
  std::optional<Credentials> creds_;  // always has an expiration
  std::string role_;                  // "" until discovered when options_.role == "auto"
  SystemTime next_attempt_{};
  bool invalidated_ = false;
};

}  // namespace

std::shared_ptr<CredentialsProvider> MakeEcsRamRoleProvider(EcsRamRoleOptions options) {
  return std::make_shared<EcsRamRoleProvider>(std::move(options));
}

}  // namespace ossmount::auth
