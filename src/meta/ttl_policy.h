// TtlPolicy: when cached metadata expires, and what the kernel is told about it.
//
// metadata_ttl nullopt = indefinite: entries never expire and the kernel gets a very long
// entry/attr timeout (kIndefiniteKernelTimeout) and keep_cache on open. Zero: entries are
// stale the moment they are written (every question goes to the server) and the kernel
// timeouts are 0. N: entries live N, the kernel caches N.
//
// Time comes from an injectable steady clock so tests control expiry without sleeping.
// Thread-safety: immutable after construction; the clock function must be thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

namespace ossmount::meta {

using TimePoint = std::chrono::steady_clock::time_point;
using ClockFn = std::function<TimePoint()>;

constexpr double kIndefiniteKernelTimeout = 1e6;  // seconds (about 11.5 days)

class TtlPolicy {
 public:
  TtlPolicy(std::optional<std::chrono::milliseconds> metadata_ttl,
            std::chrono::milliseconds negative_ttl, ClockFn clock = {})
      : ttl_(metadata_ttl), negative_ttl_(negative_ttl), clock_(std::move(clock)) {}

  TimePoint Now() const { return clock_ ? clock_() : std::chrono::steady_clock::now(); }

  // Expiry of a positive entry (attributes, listing) written at `now`.
  TimePoint PositiveExpiry(TimePoint now) const {
    if (!ttl_) return TimePoint::max();
    return now + *ttl_;
  }
  TimePoint NegativeExpiry(TimePoint now) const { return now + negative_ttl_; }
  // An entry is fresh strictly before its expiry, so a zero TTL is never fresh.
  static bool Fresh(TimePoint expiry, TimePoint now) { return now < expiry; }

  bool indefinite() const { return !ttl_.has_value(); }
  // The finite TTL of positive entries (REQUIRES !indefinite()).
  std::chrono::milliseconds Positive() const { return *ttl_; }
  // A finite, non-zero TTL: entries are fresh for a while and then asked again.
  bool revalidates() const { return ttl_.has_value() && ttl_->count() > 0; }
  // Seconds for fuse_entry_param entry_timeout / attr_timeout.
  double KernelTimeout() const {
    if (!ttl_) return kIndefiniteKernelTimeout;
    return std::chrono::duration<double>(*ttl_).count();
  }

 private:
  std::optional<std::chrono::milliseconds> ttl_;
  std::chrono::milliseconds negative_ttl_;
  ClockFn clock_;
};

}  // namespace ossmount::meta
