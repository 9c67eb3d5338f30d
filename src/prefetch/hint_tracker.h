// HintTracker: the hint lists being followed, one HintWindow per sender, and the rules
// between them: a sender's new list replaces its own, lists of senders that exited go when
// a new list arrives, at most kMaxHintLists (another user's never evicts an owner's), the
// other users' counts, the control memory lists and reservations take, and which positions
// of which lists start next (round-robin, hint_ahead_bytes shared evenly). Decisions only:
// no lock, no fetch.
//
// Thread-safety: none; the prefetcher guards it. Ownership: owns the windows; those it drops
// are handed to the caller (Gone) with their holds (Drops), to free outside its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ossmount/status.h"
#include "prefetch/control_memory.h"
#include "prefetch/fetch_result.h"
#include "prefetch/hint_paths.h"
#include "prefetch/hint_window.h"
#include "prefetch/prefetch_options.h"
#include "prefetch/prefetch_status.h"

namespace ossmount::prefetch {

// A hinted position to fetch: position `position` of list `list`.
struct HintStart {
  uint64_t list = 0;
  size_t position = 0;
  std::string path;
};

// Room taken in the control memory for a hint request not in place yet.
struct HintGrant {
  Requester by;
  uint64_t bytes = 0;
  bool new_list = false;  // counts among by's lists until applied (other users only)
};

class HintTracker {
 public:
  static constexpr size_t kStaleFactor = 8;
  // More concurrent senders than any one machine has GPUs; beyond, the oldest list goes.
  static constexpr size_t kMaxHintLists = 64;
  // Pieces one list may arrive in (each piece rebuilds the list's index: bounded work).
  static constexpr int kMaxHintPieces = 64;

  using Gone = std::vector<std::unique_ptr<HintWindow>>;

  HintTracker(const DatasetPrefetchOptions& options, ControlMemory& memory);

  // kStaleFactor * hint_ahead_files, and the window's limits.
  size_t stale_distance() const { return limits_.stale_distance; }
  const HintLimits& limits() const { return limits_; }
  // HintWindow::BytesFor at this stale distance.
  uint64_t ListBytesFor(uint64_t count, uint64_t path_bytes) const {
    return HintWindow::BytesFor(count, path_bytes, limits_.stale_distance);
  }

  // Checks that a request of `count` paths totalling `path_bytes` fits the control memory
  // and sender.by's limits, and takes its room: kNoSpace naming the limit otherwise (a
  // refused piece of a list drops the pieces before it). Not appending, it first drops the
  // lists of senders that have exited, and credits the sender's own list.
  Result<HintGrant> Reserve(const HintSender& sender, size_t count, uint64_t path_bytes,
                            bool append, Gone& gone, Drops& drop);
  // Gives the room of a grant not applied back.
  void ReleaseGrant(HintGrant& grant);
  // Puts `list` (numbered here) in place of its sender's list, and drops the lists of
  // senders that have exited; an empty list only clears. Consumes `grant`, ends a budget
  // wait.
  void Replace(std::unique_ptr<HintWindow> list, HintGrant& grant, Gone& gone, Drops& drop);
  // The id and paths of `sender`'s list, to build the longer list from.
  std::optional<std::pair<uint64_t, std::shared_ptr<const HintPaths>>> PathsOf(
      const HintSender& sender) const;
  // Swaps `longer` into list `id` if its paths are still `old`: false if it was replaced or
  // dropped meanwhile. Consumes `grant`, ends a budget wait.
  bool Extend(uint64_t id, const std::shared_ptr<const HintPaths>& old,
              std::shared_ptr<const HintPaths>& longer, HintGrant& grant);

  // `path` was read: marks it in the list whose readers are nearest to it. Returns whether a
  // list had it unread.
  bool OnRead(std::string_view path, Drops& drop);
  // HintWindow::RequeuePageCached over every list; returns how many.
  size_t RequeuePageCached();
  // Up to `slots` positions to start now, in rotation among the lists (none while the
  // memory budget refuses).
  void Collect(int slots, std::vector<HintStart>& starts);
  void OnFetchDone(const HintStart& start, FetchResult result, Drops& drop);
  void EndBudgetWait() { budget_wait_ = false; }

  int in_flight() const { return in_flight_; }
  // hints (summed), hint_lists; its control memory (lists and reservations) returned.
  uint64_t Status(PrefetchStatus& out) const;

 private:
  HintWindow* Find(uint64_t id);
  // Moves the lists `drop_it` says go into `gone`, their holds into `drop`, their room
  // given back.
  template <typename Pred>
  void DropLists(Pred drop_it, Gone& gone, Drops& drop);

  const HintLimits limits_;
  const uint64_t ahead_bytes_;
  ControlMemory& memory_;
  uint64_t lists_received_ = 0;
  std::vector<std::unique_ptr<HintWindow>> lists_;  // oldest first
  size_t turn_ = 0;                                 // round-robin among the lists
  int in_flight_ = 0;                               // all lists, and dropped lists' fetches
  bool budget_wait_ = false;                        // the memory budget refused; waiting for a read
  uint64_t reserved_ = 0;                           // grants not applied yet
  std::map<unsigned, size_t> reserved_lists_;       // other users: new lists not applied yet
};

}  // namespace ossmount::prefetch
