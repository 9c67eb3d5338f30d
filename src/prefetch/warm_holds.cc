#include "prefetch/warm_holds.h"

namespace ossmount::prefetch {

bool WarmHolds::Fetched(const std::string& path) {
  auto it = read_while_fetching_.find(path);
  if (it == read_while_fetching_.end()) return false;
  const bool read = it->second;
  read_while_fetching_.erase(it);
  return read;
}

void WarmHolds::Hold(const std::string& path, std::shared_ptr<const void> hold, uint64_t bytes,
                     Drops& drop) {
  Held& slot = held_[path];
  drop.push_back(std::move(slot.hold));
  bytes_ = bytes_ - slot.bytes + bytes;
  slot = Held{std::move(hold), bytes};
}

bool WarmHolds::OnRead(const std::string& path, Drops& drop) {
  if (auto f = read_while_fetching_.find(path); f != read_while_fetching_.end()) f->second = true;
  auto it = held_.find(path);
  if (it == held_.end()) return false;
  drop.push_back(std::move(it->second.hold));
  bytes_ -= it->second.bytes;
  held_.erase(it);
  return true;
}

}  // namespace ossmount::prefetch
