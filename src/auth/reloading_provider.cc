// Static, anonymous and re-reading credential providers (providers_internal.h).
#include <mutex>

#include <spdlog/spdlog.h>

#include "auth/providers_internal.h"

namespace ossmount::auth {
namespace {

bool SameCredentials(const Credentials& a, const Credentials& b) {
  return a.access_key_id == b.access_key_id && a.access_key_secret == b.access_key_secret &&
         a.security_token == b.security_token && a.expiration == b.expiration &&
         a.anonymous == b.anonymous;
}

class StaticProvider final : public CredentialsProvider {
 public:
  StaticProvider(Credentials creds, std::string description)
      : creds_(std::move(creds)), description_(std::move(description)) {}
  Result<Credentials> Get() override { return creds_; }
  std::string Describe() const override { return description_; }

 private:
  const Credentials creds_;
  const std::string description_;
};

class ReloadingProvider final : public CredentialsProvider {
 public:
  ReloadingProvider(std::string description, CredentialsLoader loader, RefreshPolicy policy,
                    Credentials initial)
      : description_(std::move(description)),
        loader_(std::move(loader)),
        policy_(std::move(policy)),
        creds_(std::move(initial)),
        last_read_(policy_.clock()) {}

  Result<Credentials> Get() override {
    std::lock_guard<std::mutex> lock(mu_);
    SystemTime now = policy_.clock();
    bool near_expiry = creds_.expiration && now + policy_.margin >= *creds_.expiration;
    bool may_reread = invalidated_ || now - last_read_ >= policy_.min_reread_interval;
    if ((invalidated_ || near_expiry) && may_reread) Reread(now);
    if (creds_.expiration && now >= *creds_.expiration) {
      return Status(ErrorCode::kTokenExpired,
                    "the credentials from " + description_ + " expired at " +
                        FormatIso8601(*creds_.expiration) +
                        " and the source holds nothing newer; whatever writes it must refresh "
                        "it before Expiration");
    }
    return creds_;
  }

  std::string Describe() const override { return description_; }

  void Invalidate() override {
    std::lock_guard<std::mutex> lock(mu_);
    invalidated_ = true;
  }

 private:
  // REQUIRES: mu_ held.
  void Reread(SystemTime now) {
    invalidated_ = false;
    last_read_ = now;
    Result<Credentials> fresh = loader_();
    if (!fresh.ok()) {
      spdlog::warn("re-reading credentials from {} failed, keeping the current ones: {}",
                   description_, fresh.status().message());
      return;
    }
    if (SameCredentials(*fresh, creds_)) return;  // unchanged: keep until really expired
    bool fresh_expired = fresh->expiration && now >= *fresh->expiration;
    bool current_expired = creds_.expiration && now >= *creds_.expiration;
    if (fresh_expired && !current_expired) return;  // never trade valid for expired
    creds_ = *std::move(fresh);
    spdlog::info("reloaded credentials from {}", description_);
  }

  const std::string description_;
  const CredentialsLoader loader_;
  const RefreshPolicy policy_;
  std::mutex mu_;  // guards everything below
  Credentials creds_;
  SystemTime last_read_;
  bool invalidated_ = false;
};

}  // namespace

std::shared_ptr<CredentialsProvider> MakeAnonymousProvider() {
  Credentials c;
  c.anonymous = true;
  return std::make_shared<StaticProvider>(std::move(c), "anonymous access (requests unsigned)");
}

std::shared_ptr<CredentialsProvider> MakeStaticProvider(Credentials creds,
                                                        std::string description) {
  return std::make_shared<StaticProvider>(std::move(creds), std::move(description));
}

Result<std::shared_ptr<CredentialsProvider>> MakeReloadingProvider(std::string description,
                                                                   CredentialsLoader loader,
                                                                   RefreshPolicy policy) {
  Result<Credentials> first = loader();
  if (!first.ok()) return first.status();
  return std::shared_ptr<CredentialsProvider>(std::make_shared<ReloadingProvider>(
      std::move(description), std::move(loader), std::move(policy), *std::move(first)));
}

}  // namespace ossmount::auth
