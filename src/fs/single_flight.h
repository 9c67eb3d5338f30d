// SingleFlight<T>: concurrent requests for the same key share one piece of work.
//
// Join(key, waiter) registers a waiter and returns true for the first caller, which must
// start the work and later call Complete(key, result) exactly once. Every waiter registered
// until then gets that result. Waiters run inside Complete, after the lock is released, on
// the thread that calls Complete.
//
// Thread-safety: thread-safe; mu_ is a leaf lock, never held while a waiter runs.
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

  bool Join(const std::string& key, Waiter waiter) {
    std::lock_guard lock(mu_);
    auto& waiters = pending_[key];
    waiters.push_back(std::move(waiter));
    return waiters.size() == 1;
  }

  void Complete(const std::string& key, const Result<T>& result) {
    std::vector<Waiter> waiters;
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(key);
      if (it == pending_.end()) return;
      waiters.swap(it->second);
      pending_.erase(it);
    }
    for (auto& w : waiters) w(result);
  }

  // Complete(key, result), but only if the first caller's is the one waiter: nobody else
  // joined. Atomic with Join: a caller that joined before gets the work's real result (this
  // returns false and the work must go on), one that joins after starts new work.
  bool CompleteIfAlone(const std::string& key, const Result<T>& result) {
    std::vector<Waiter> waiters;
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(key);
      if (it == pending_.end() || it->second.size() != 1) return false;
      waiters.swap(it->second);
      pending_.erase(it);
    }
    waiters.front()(result);
    return true;
  }

  size_t in_flight() const {
    std::lock_guard lock(mu_);
    return pending_.size();
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::vector<Waiter>> pending_;
};

}  // namespace ossmount::fs
