// PageCacheTrust: whether the kernel's page cache still holds the files it was given.
//
// With keep_cache (an indefinite metadata TTL) the kernel keeps a file's pages across
// opens, so a reopened file is often served without a READ reaching the daemon. The
// daemon cannot see the page cache; it can only see, when a handle is released, whether
// a READ came (a miss: the kernel had dropped the pages) or not (a hit). Hinted prefetch
// asks this before fetching a file the kernel was given: fetching it while the kernel
// holds it is a GET nobody reads; skipping it when the kernel has dropped it leaves the
// reader to wait for its own GET.
//
// The estimate is an exponentially weighted hit rate over the recent reopens (weight
// 1/kSamplesRemembered per sample). Trust starts on (the pages were given recently), ends
// when the rate falls below kDistrustBelow and returns at kTrustFrom: the gap keeps a rate
// near one threshold from flipping the decision on every sample.
//
// Thread-safety: thread-safe (one leaf mutex).
#pragma once

#include <mutex>

namespace ossmount::fs {

class PageCacheTrust {
 public:
  static constexpr double kSamplesRemembered = 32;
  static constexpr double kDistrustBelow = 0.8;
  static constexpr double kTrustFrom = 0.9;

  // Records one reopen: hit = released without a READ. Returns true when this sample ended
  // trust (the caller then fetches what it skipped on trust).
  bool Record(bool hit);
  bool trusted() const;
  double hit_rate() const;

 private:
  mutable std::mutex mu_;
  double hit_rate_ = 1.0;
  bool trusted_ = true;
};

}  // namespace ossmount::fs
