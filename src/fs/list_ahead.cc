#include "fs/list_ahead.h"

#include <algorithm>

namespace ossmount::fs {

ListAhead::ListAhead(size_t distance, Lister lister)
    : distance_(distance), lister_(std::move(lister)) {}

bool ListAhead::EnteredChildOf(const std::string& parent, const std::string& child) {
  if (distance_ == 0) return false;
  std::lock_guard lock(mu_);
  auto it = std::find_if(recent_parents_.begin(), recent_parents_.end(),
                         [&](const auto& p) { return p.first == parent; });
  if (it != recent_parents_.end()) {
    if (it->second == child) return false;
    it->second = child;
    return true;
  }
  recent_parents_.emplace_back(parent, child);
  if (recent_parents_.size() > kRecentParents) recent_parents_.pop_front();
  return false;
}

void ListAhead::Queue(const std::vector<std::string>& next) {
  if (distance_ == 0) return;
  std::vector<std::string> start;
  {
    std::lock_guard lock(mu_);
    const size_t take = std::min(next.size(), distance_);
    for (size_t i = 0; i < take; ++i) {
      if (!known_.insert(next[i]).second) continue;
      queued_.push_back(next[i]);
    }
    while (queued_.size() > max_queued()) {
      known_.erase(queued_.front());
      queued_.pop_front();
      ++dropped_;
    }
    start = TakeStartableLocked();
  }
  Start(std::move(start));
}

std::vector<std::string> ListAhead::TakeStartableLocked() {
  std::vector<std::string> start;
  while (in_flight_ < distance_ && !queued_.empty()) {
    start.push_back(std::move(queued_.front()));
    queued_.pop_front();
    ++in_flight_;
    ++started_;
  }
  return start;
}

void ListAhead::Start(std::vector<std::string> paths) {
  for (auto& path : paths) {
    lister_(path, [self = shared_from_this(), path]() { self->Finished(path); });
  }
}

void ListAhead::Finished(const std::string& path) {
  std::vector<std::string> start;
  {
    std::lock_guard lock(mu_);
    --in_flight_;
    known_.erase(path);
    start = TakeStartableLocked();
  }
  Start(std::move(start));
}

ListAhead::Stats ListAhead::stats() const {
  std::lock_guard lock(mu_);
  return Stats{started_, dropped_, queued_.size(), in_flight_};
}

}  // namespace ossmount::fs
