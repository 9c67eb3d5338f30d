#include "prefetch/hint_tracker.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/format_bytes.h"

namespace ossmount::prefetch {

HintTracker::HintTracker(const DatasetPrefetchOptions& options, ControlMemory& memory)
    : limits_{options.hint_ahead_files,
              kStaleFactor * std::max<size_t>(options.hint_ahead_files, 1)},
      ahead_bytes_(options.hint_ahead_bytes),
      memory_(memory) {}

template <typename Pred>
void HintTracker::DropLists(Pred drop_it, Gone& gone, Drops& drop) {
  for (auto& l : lists_) {
    if (!drop_it(*l)) continue;
    l->ReleaseAll(drop);
    memory_.Uncharge(l->sender().by, l->charged());
    gone.push_back(std::move(l));
  }
  lists_.erase(std::remove(lists_.begin(), lists_.end(), nullptr), lists_.end());
}

Result<HintGrant> HintTracker::Reserve(const HintSender& sender, size_t count, uint64_t path_bytes,
                                       bool append, Gone& gone, Drops& drop) {
  const Requester& by = sender.by;
  if (!append) {
    // A new list drops the lists of senders that have exited: before the check, so that
    // their room counts as free.
    DropLists(
        [&](const HintWindow& l) { return !l.sender().SameAs(sender) && l.sender().Exited(); },
        gone, drop);
  }
  HintWindow* own = nullptr;
  for (auto& l : lists_) {
    if (l->sender().SameAs(sender)) own = l.get();
  }
  const std::string what = "hint list of " + std::to_string(count) + " path(s)";
  const bool extend = append && own != nullptr;
  const uint64_t total = extend ? own->size() + count : count;
  const uint64_t total_bytes = extend ? own->paths()->path_bytes() + path_bytes : path_bytes;
  // A list refused in one of its pieces holds nothing: the pieces taken before it go too.
  auto refuse = [&](std::string message) {
    if (extend) {
      DropLists([own](const HintWindow& l) { return &l == own; }, gone, drop);
      message += "; the pieces of the list taken before are dropped";
    }
    return ossmount::Status(ErrorCode::kNoSpace, std::move(message));
  };
  if (!HintPaths::Fits(total, total_bytes)) {
    return refuse(what + " is longer than a list may be (" + std::to_string(HintPaths::kNone - 1) +
                  " paths, 4 GiB of path names)");
  }
  if (extend && own->pieces() >= kMaxHintPieces) {
    return refuse("a hint list may arrive in at most " + std::to_string(kMaxHintPieces) +
                  " pieces; send it again in fewer, longer pieces");
  }
  HintGrant grant;
  if (count == 0 && !append) return grant;  // clears the sender's list: no room
  const bool new_list = own == nullptr;
  if (!by.owner && new_list) {
    size_t lists = 0;
    size_t others = 0;
    for (const auto& l : lists_) {
      if (l->sender().by.owner) continue;
      ++others;
      if (l->sender().by.uid == by.uid) ++lists;
    }
    if (auto it = reserved_lists_.find(by.uid); it != reserved_lists_.end()) lists += it->second;
    if (lists >= kOtherUserHintLists) {
      return ossmount::Status(
          ErrorCode::kNoSpace,
          "uid " + std::to_string(by.uid) + " has " + std::to_string(lists) +
              " hint lists already: a user other than the mount's owner and root "
              "may have at most " +
              std::to_string(kOtherUserHintLists) + " (and " + std::to_string(kOtherUserJobs) +
              " running warm-ups) at once; a list goes when its sender exits or "
              "sends an empty list");
    }
    if (lists_.size() >= kMaxHintLists && others == 0) {
      return ossmount::Status(
          ErrorCode::kNoSpace,
          "the daemon follows " + std::to_string(kMaxHintLists) +
              " hint lists of the mount's owner and root, which another user's list "
              "does not replace");
    }
  }
  const uint64_t needed = ListBytesFor(count, path_bytes);
  // The sender's list that this one replaces is released when it is applied.
  const uint64_t credit = !append && own != nullptr ? own->charged() : 0;
  if (!memory_.TryCharge(by, needed, credit)) {
    return refuse(what + " needs " + FormatBytes(static_cast<double>(needed)) + "; " +
                  memory_.NoRoomMessage(by, needed, credit));
  }
  grant.by = by;
  grant.bytes = needed;
  reserved_ += needed;
  if (new_list && !by.owner) {
    grant.new_list = true;
    ++reserved_lists_[by.uid];
  }
  if (extend) own->add_piece();
  return grant;
}

void HintTracker::ReleaseGrant(HintGrant& grant) {
  memory_.Uncharge(grant.by, grant.bytes);
  reserved_ -= std::min(reserved_, grant.bytes);
  if (grant.new_list) {
    auto it = reserved_lists_.find(grant.by.uid);
    if (it != reserved_lists_.end() && --it->second == 0) reserved_lists_.erase(it);
  }
  grant.bytes = 0;
  grant.new_list = false;
}

void HintTracker::Replace(std::unique_ptr<HintWindow> list, HintGrant& grant, Gone& gone,
                          Drops& drop) {
  list->set_id(++lists_received_);
  // The sender's previous list, and the lists of senders that have exited, go.
  const HintSender& sender = list->sender();
  DropLists([&](const HintWindow& l) { return l.sender().SameAs(sender) || l.sender().Exited(); },
            gone, drop);
  if (list->size() > 0) {
    while (lists_.size() >= kMaxHintLists) {
      // Another user's list replaces the oldest of other users' lists, never an owner's.
      auto oldest = lists_.begin();
      if (!sender.by.owner) {
        auto other = std::find_if(lists_.begin(), lists_.end(),
                                  [](const auto& l) { return !l->sender().by.owner; });
        if (other != lists_.end()) oldest = other;
      }
      HintWindow* evicted = oldest->get();
      DropLists([evicted](const HintWindow& l) { return &l == evicted; }, gone, drop);
    }
    memory_.Charge(sender.by, list->charged());
    lists_.push_back(std::move(list));
  }
  ReleaseGrant(grant);
  budget_wait_ = false;
}

std::optional<std::pair<uint64_t, std::shared_ptr<const HintPaths>>> HintTracker::PathsOf(
    const HintSender& sender) const {
  std::optional<std::pair<uint64_t, std::shared_ptr<const HintPaths>>> out;
  for (const auto& l : lists_) {
    if (l->sender().SameAs(sender)) out.emplace(l->id(), l->paths());
  }
  return out;
}

bool HintTracker::Extend(uint64_t id, const std::shared_ptr<const HintPaths>& old,
                         std::shared_ptr<const HintPaths>& longer, HintGrant& grant) {
  HintWindow* list = Find(id);
  if (list == nullptr || list->paths() != old) return false;
  list->Extend(longer);
  const uint64_t bytes = list->Bytes(limits_.stale_distance);
  memory_.Charge(list->sender().by, bytes);
  memory_.Uncharge(list->sender().by, list->charged());
  list->set_charged(bytes);
  ReleaseGrant(grant);
  budget_wait_ = false;
  return true;
}

bool HintTracker::OnRead(std::string_view path, Drops& drop) {
  // A path in several lists (a distributed sampler pads each rank's share with a few files
  // of another's) is counted read in the list whose readers are nearest to it.
  HintWindow* best = nullptr;
  size_t best_pos = 0;
  size_t best_distance = 0;
  for (auto& l : lists_) {
    auto pos = l->FirstUnread(path);
    if (!pos) continue;
    const size_t frontier = l->read_frontier();
    const size_t distance = *pos >= frontier ? *pos - frontier : frontier - *pos;
    if (best == nullptr || distance < best_distance) {
      best = l.get();
      best_pos = *pos;
      best_distance = distance;
    }
  }
  if (best == nullptr) return false;
  best->MarkRead(best_pos, limits_.stale_distance, drop);
  return true;
}

size_t HintTracker::RequeuePageCached() {
  size_t requeued = 0;
  for (auto& l : lists_) requeued += l->RequeuePageCached(limits_.stale_distance);
  return requeued;
}

void HintTracker::Collect(int slots, std::vector<HintStart>& starts) {
  // Each list gets a turn in rotation, so one sender's long window does not starve another's.
  const size_t lists = lists_.size();
  const uint64_t bytes_share = lists == 0 ? 0 : std::max<uint64_t>(ahead_bytes_ / lists, 1);
  bool started = true;
  while (!budget_wait_ && started && slots > 0) {
    started = false;
    for (size_t k = 0; k < lists && slots > 0; ++k) {
      HintWindow& list = *lists_[(turn_ + k) % lists];
      auto pos = list.StartNext(limits_, bytes_share);
      if (!pos) continue;
      ++in_flight_;
      --slots;
      starts.push_back(HintStart{list.id(), *pos, std::string((*list.paths())[*pos])});
      started = true;
    }
    if (lists > 0) turn_ = (turn_ + 1) % lists;
  }
}

void HintTracker::OnFetchDone(const HintStart& start, FetchResult result, Drops& drop) {
  --in_flight_;
  HintWindow* list = Find(start.list);
  if (list == nullptr) {
    drop.push_back(std::move(result.hold));  // a replaced list: nothing to account
    return;
  }
  if (result.outcome == FetchOutcome::kFailed) {
    spdlog::debug("hint prefetch of '{}' failed: {}", start.path, result.error);
  }
  if (list->OnFetchDone(start.position, std::move(result), drop)) budget_wait_ = true;
}

uint64_t HintTracker::Status(PrefetchStatus& out) const {
  HintStatus& sum = out.hints;
  for (const auto& l : lists_) {
    HintStatus st = l->Status();
    st.budget_wait = budget_wait_;
    sum.files += st.files;
    sum.next += st.next;
    sum.read += st.read;
    sum.fetched += st.fetched;
    sum.failed += st.failed;
    sum.page_cached += st.page_cached;
    sum.released_unread += st.released_unread;
    sum.outstanding_files += st.outstanding_files;
    sum.outstanding_bytes += st.outstanding_bytes;
    sum.memory_bytes += st.memory_bytes;
    out.hint_lists.push_back(st);
  }
  sum.generation = lists_received_;
  sum.in_flight = in_flight_;
  sum.budget_wait = budget_wait_;
  return sum.memory_bytes + reserved_;
}

HintWindow* HintTracker::Find(uint64_t id) {
  for (auto& l : lists_) {
    if (l->id() == id) return l.get();
  }
  return nullptr;
}

}  // namespace ossmount::prefetch
