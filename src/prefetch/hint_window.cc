#include "prefetch/hint_window.h"

#include <algorithm>

namespace ossmount::prefetch {

namespace {

// A held position's entry in HintWindow::held_ (a std::map node and its malloc header): a
// list holds at most stale_distance of them, which its control memory includes.
constexpr uint64_t kHeldEntryBytes = 80;

}  // namespace

uint64_t HintWindow::BytesFor(uint64_t count, uint64_t path_bytes, size_t stale_distance) {
  return HintPaths::BytesFor(count, path_bytes) + count * sizeof(PosState) + sizeof(HintWindow) +
         std::min<uint64_t>(count, stale_distance) * kHeldEntryBytes;
}

HintWindow::HintWindow(HintSender sender, std::shared_ptr<const HintPaths> paths)
    : sender_(std::move(sender)),
      paths_(std::move(paths)),
      states_(paths_->size(), PosState::kPending) {}

uint64_t HintWindow::Bytes(size_t stale_distance) const {
  return paths_->Bytes() + states_.capacity() * sizeof(PosState) + sizeof(HintWindow) +
         std::min<uint64_t>(states_.size(), stale_distance) * kHeldEntryBytes;
}

std::optional<size_t> HintWindow::StartNext(const HintLimits& limits, uint64_t bytes_share) {
  // The window reaches ahead_files positions past the furthest read. Many workers read a
  // wide band of positions at once (16 workers x 2 batches x 32 = 1,024), so the window is
  // measured from the band's leading edge, not by files outstanding; a hard cap on
  // outstanding files (the stale distance) and the byte share bound what is held.
  while (next_ < states_.size() && next_ < read_frontier_ + limits.ahead_files &&
         outstanding_files_ < limits.stale_distance && outstanding_bytes_ < bytes_share) {
    const size_t pos = next_++;
    if (states_[pos] != PosState::kPending) continue;
    states_[pos] = PosState::kInFlight;
    ++in_flight_;
    ++outstanding_files_;
    return pos;
  }
  return std::nullopt;
}

std::optional<size_t> HintWindow::FirstUnread(std::string_view path) const {
  const HintPaths& paths = *paths_;
  for (uint32_t pos = paths.First(path); pos != HintPaths::kNone; pos = paths.Next(pos)) {
    if (states_[pos] != PosState::kRead) return pos;
  }
  return std::nullopt;
}

void HintWindow::MarkRead(size_t pos, size_t stale_distance, Drops& drop) {
  PosState& state = states_[pos];
  if (state == PosState::kInFlight) --outstanding_files_;
  if (state == PosState::kHeld) {
    --outstanding_files_;
    auto held = held_.find(pos);
    outstanding_bytes_ -= held->second.bytes;
    drop.push_back(std::move(held->second.hold));
    held_.erase(held);
  }
  state = PosState::kRead;
  ++counters_.read;
  read_frontier_ = std::max(read_frontier_, pos + 1);
  // A held file far behind the furthest read was skipped by the reader: release it.
  while (!held_.empty() && held_.begin()->first + stale_distance < read_frontier_) {
    auto oldest = held_.begin();
    drop.push_back(std::move(oldest->second.hold));
    states_[oldest->first] = PosState::kDone;
    --outstanding_files_;
    outstanding_bytes_ -= oldest->second.bytes;
    held_.erase(oldest);
    ++counters_.released_unread;
  }
}

bool HintWindow::OnFetchDone(size_t pos, FetchResult r, Drops& drop) {
  --in_flight_;
  PosState& state = states_[pos];
  if (r.outcome == FetchOutcome::kFetched) ++counters_.fetched;
  if (r.outcome == FetchOutcome::kPageCached) ++counters_.page_cached;
  if (r.outcome == FetchOutcome::kFailed) ++counters_.failed;
  if (state == PosState::kRead) {
    drop.push_back(std::move(r.hold));  // the reader joined the fetch and holds the bytes
    return false;
  }
  if (r.outcome == FetchOutcome::kFetched && r.hold) {
    state = PosState::kHeld;
    held_[pos] = Held{r.bytes, std::move(r.hold)};
    outstanding_bytes_ += r.bytes;
    return false;
  }
  --outstanding_files_;
  if (r.outcome == FetchOutcome::kBudgetFull || r.outcome == FetchOutcome::kBusy) {
    // Not fetched: try this position again once reads free memory (or shortly).
    state = PosState::kPending;
    next_ = std::min(next_, pos);
    return r.outcome == FetchOutcome::kBudgetFull;
  }
  // Page-cached: RefetchPageCached may want it yet.
  state = r.outcome == FetchOutcome::kPageCached ? PosState::kPageCached : PosState::kDone;
  return false;
}

size_t HintWindow::RequeuePageCached(size_t stale_distance) {
  // Unread positions lie at or after the furthest read, or behind it within the stale
  // distance (a slower worker's); further behind, the reader skipped them.
  const size_t from = read_frontier_ > stale_distance ? read_frontier_ - stale_distance : 0;
  const size_t end = next_;
  size_t requeued = 0;
  for (size_t pos = from; pos < end; ++pos) {
    if (states_[pos] != PosState::kPageCached) continue;
    states_[pos] = PosState::kPending;
    next_ = std::min(next_, pos);
    --counters_.page_cached;  // counts what stays unfetched for the page cache
    ++requeued;
  }
  return requeued;
}

void HintWindow::Extend(std::shared_ptr<const HintPaths>& longer) {
  std::vector<PosState> states(longer->size(), PosState::kPending);  // exact capacity
  std::copy(states_.begin(), states_.end(), states.begin());
  states_ = std::move(states);
  std::swap(paths_, longer);
}

void HintWindow::ReleaseAll(Drops& drop) {
  // Only held positions have bytes: walk those, not a list of maybe millions, under a lock.
  for (auto& held : held_) drop.push_back(std::move(held.second.hold));
  held_.clear();
  outstanding_bytes_ = 0;
}

HintStatus HintWindow::Status() const {
  HintStatus st = counters_;
  st.generation = id_;
  st.pid = sender_.pid;
  st.name = sender_.name;
  st.files = states_.size();
  st.memory_bytes = charged_;
  st.uid = sender_.by.uid;
  st.next = next_;
  st.outstanding_files = outstanding_files_;
  st.outstanding_bytes = outstanding_bytes_;
  st.in_flight = in_flight_;
  return st;
}

}  // namespace ossmount::prefetch
