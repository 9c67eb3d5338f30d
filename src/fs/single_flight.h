// SingleFlight<T>: concurrent requests for the same key share one piece of work.
//
// Join(key, waiter) registers a waiter and returns true for the first caller, which must
// start the work and later call Complete(key, result) exactly once. Every waiter registered
// until then gets that result. Waiters run inside Complete, after the lock is released, on
// the thread that calls Complete.
//
// Work that goes on in steps (a listing, page after page) asks between steps whether anyone
// still wants it: each waiter may bring a `wants` predicate, asked with how far the work got,
// and CompleteIfUnwanted ends the work once no waiter wants it any more (a reader that was
// killed, a background listing that has gone far enough). A waiter without one always wants
// the result.
//
// Thread-safety: thread-safe; mu_ is a leaf lock, never held while a waiter runs. Predicates
// run under mu_ and must not call back into this object.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ossmount/status.h"

namespace ossmount::fs {

template <typename T>
class SingleFlight {
 public:
  using Waiter = std::function<void(const Result<T>&)>;
  // Whether a waiter still wants the result, given how far the work got (its steps).
  using Wants = std::function<bool(int steps)>;

  bool Join(const std::string& key, Waiter waiter, Wants wants = nullptr) {
    std::lock_guard lock(mu_);
    auto& waiters = pending_[key];
    waiters.push_back({std::move(waiter), std::move(wants)});
    return waiters.size() == 1;
  }

  void Complete(const std::string& key, const Result<T>& result) {
    std::vector<Entry> waiters;
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(key);
      if (it == pending_.end()) return;
      waiters.swap(it->second);
      pending_.erase(it);
    }
    for (auto& w : waiters) w.waiter(result);
  }

  // Complete(key, result), but only if no waiter wants the result after `steps` steps.
  // Atomic with Join: a caller that joined before is asked, one that joins after starts new
  // work. Returns true when it completed (the work must stop), false when someone still
  // wants it (the work must go on).
  bool CompleteIfUnwanted(const std::string& key, int steps, const Result<T>& result) {
    std::vector<Entry> waiters;
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(key);
      if (it == pending_.end()) return false;
      for (const Entry& e : it->second) {
        if (!e.wants || e.wants(steps)) return false;
      }
      waiters.swap(it->second);
      pending_.erase(it);
    }
    for (auto& w : waiters) w.waiter(result);
    return true;
  }

  size_t in_flight() const {
    std::lock_guard lock(mu_);
    return pending_.size();
  }

 private:
  struct Entry {
    Waiter waiter;
    Wants wants;
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::vector<Entry>> pending_;
};

}  // namespace ossmount::fs
