#include "fs/page_cache_trust.h"

namespace ossmount::fs {

bool PageCacheTrust::Record(bool hit) {
  std::lock_guard lock(mu_);
  hit_rate_ += ((hit ? 1.0 : 0.0) - hit_rate_) / kSamplesRemembered;
  if (trusted_ && hit_rate_ < kDistrustBelow) {
    trusted_ = false;
    return true;
  }
  if (!trusted_ && hit_rate_ >= kTrustFrom) trusted_ = true;
  return false;
}

bool PageCacheTrust::trusted() const {
  std::lock_guard lock(mu_);
  return trusted_;
}

double PageCacheTrust::hit_rate() const {
  std::lock_guard lock(mu_);
  return hit_rate_;
}

}  // namespace ossmount::fs
