// HandleMap<Handle>: the open handles of one kind, by the number the kernel passes back (fh).
// A handle taken out is destroyed by the caller, outside the map's lock.
//
// Thread-safety: thread-safe; mu_ is a leaf lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace ossmount::fs {

template <typename Handle>
class HandleMap {
 public:
  using Map = std::unordered_map<uint64_t, std::shared_ptr<Handle>>;

  void Insert(uint64_t fh, std::shared_ptr<Handle> handle) {
    std::lock_guard lock(mu_);
    handles_[fh] = std::move(handle);
  }
  // Null when `fh` is not open.
  std::shared_ptr<Handle> Find(uint64_t fh) const {
    std::lock_guard lock(mu_);
    auto it = handles_.find(fh);
    return it == handles_.end() ? nullptr : it->second;
  }
  // The first handle for which `pred` holds (in no set order); null when none does.
  template <typename Pred>
  std::shared_ptr<Handle> FindIf(Pred pred) const {
    std::lock_guard lock(mu_);
    for (const auto& [fh, handle] : handles_) {
      if (pred(*handle)) return handle;
    }
    return nullptr;
  }
  // Removes and returns the handle; null when `fh` is not open.
  std::shared_ptr<Handle> Take(uint64_t fh) {
    std::lock_guard lock(mu_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return nullptr;
    std::shared_ptr<Handle> handle = std::move(it->second);
    handles_.erase(it);
    return handle;
  }
  Map TakeAll() {
    Map all;
    std::lock_guard lock(mu_);
    all.swap(handles_);
    return all;
  }
  size_t size() const {
    std::lock_guard lock(mu_);
    return handles_.size();
  }

 private:
  mutable std::mutex mu_;
  Map handles_;
};

}  // namespace ossmount::fs
