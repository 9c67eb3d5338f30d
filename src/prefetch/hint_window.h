// HintWindow: one sender's sampler-order hint list and the window of it being fetched: which
// position may start next, which are read, what is held for the reader, and which holds
// the reader left behind. Decisions only: it starts no fetch and takes no lock.
//
// Thread-safety: none; the prefetcher guards it. Ownership: shares the immutable HintPaths;
// owns the holds of fetched, unread positions, and hands released ones to the caller
// (Drops) to free outside its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prefetch/control_memory.h"
#include "prefetch/fetch_result.h"
#include "prefetch/hint_paths.h"
#include "prefetch/prefetch_status.h"

namespace ossmount::prefetch {

// Who sent a hint list. Lists are keyed by pid (and uid); all senders of one uid whose pid is
// unknown (0) and who give no name share one list.
struct HintSender {
  int pid = 0;
  // Only for pid 0 (a process the daemon cannot see, e.g. in another container's pid
  // namespace): the name its client gave itself, so that such senders' lists are told apart.
  // Lists are replaced per (pid, name).
  std::string name;
  // False once the sender has exited. Called under the prefetcher's lock: it must be cheap,
  // must not block and must not call the prefetcher. Empty: the sender counts as running.
  std::function<bool()> alive;
  // Who sent it, for the control memory's shares. Part of the sender's identity, so a name
  // given by another user's client never reaches this user's list.
  Requester by;

  // The same sender: its lists replace and extend each other.
  bool SameAs(const HintSender& other) const {
    return pid == other.pid && name == other.name && by.uid == other.by.uid;
  }
  bool Exited() const { return alive && !alive(); }
};

// What bounds a window: how far past the furthest read positions start, and how far behind
// it an unread position is still kept (a slower worker's) rather than released (skipped).
// stale_distance also caps a list's files outstanding.
struct HintLimits {
  size_t ahead_files = 0;
  size_t stale_distance = 0;
};

class HintWindow {
 public:
  // Control memory of a list of `count` paths totalling `path_bytes` once in place: its
  // HintPaths, one state byte a position, the window itself and its held entries at most.
  static uint64_t BytesFor(uint64_t count, uint64_t path_bytes, size_t stale_distance);

  // `paths` indexed. The window is numbered when the tracker takes it (set_id).
  HintWindow(HintSender sender, std::shared_ptr<const HintPaths> paths);

  uint64_t id() const { return id_; }
  void set_id(uint64_t id) { id_ = id; }
  const HintSender& sender() const { return sender_; }
  const std::shared_ptr<const HintPaths>& paths() const { return paths_; }
  size_t size() const { return states_.size(); }
  // 1 + the furthest position read.
  size_t read_frontier() const { return read_frontier_; }
  // BytesFor this list, from its buffers' capacities.
  uint64_t Bytes(size_t stale_distance) const;
  // What the control memory charges for it, and the pieces it arrived in (SetHints and
  // each AppendHints reserved): the tracker's bookkeeping.
  uint64_t charged() const { return charged_; }
  void set_charged(uint64_t bytes) { charged_ = bytes; }
  int pieces() const { return pieces_; }
  void add_piece() { ++pieces_; }

  // The next position the window lets start now, marked in flight, or nullopt. Positions
  // that need no fetch (read, page-cached, done) are passed over.
  std::optional<size_t> StartNext(const HintLimits& limits, uint64_t bytes_share);
  // The first position of `path` not read yet.
  std::optional<size_t> FirstUnread(std::string_view path) const;
  // Position `pos` was read: its hold (if any) goes to `drop`, and so does every hold now
  // more than stale_distance behind the furthest read (released unread).
  void MarkRead(size_t pos, size_t stale_distance, Drops& drop);
  // The fetch of position `pos` ended. Returns true when the memory budget refused it: the
  // position is pending again, and hints wait for a read to free memory.
  bool OnFetchDone(size_t pos, FetchResult result, Drops& drop);
  // Positions skipped as page-cached, unread and at most stale_distance behind the furthest
  // read, become pending again. Returns how many.
  size_t RequeuePageCached(size_t stale_distance);
  // `longer`: this list's paths followed by more; swapped in (`longer` gets the old ones).
  void Extend(std::shared_ptr<const HintPaths>& longer);
  // Every hold goes to `drop` (the list is going).
  void ReleaseAll(Drops& drop);
  // Its counters and sender; budget_wait is the tracker's to set.
  HintStatus Status() const;

 private:
  // kPageCached: not fetched because the kernel held it; kDone: fetched to disk, failed, or
  // released unread.
  enum class PosState : uint8_t { kPending, kInFlight, kHeld, kRead, kDone, kPageCached };
  struct Held {
    uint64_t bytes = 0;
    std::shared_ptr<const void> hold;
  };

  uint64_t id_ = 0;  // unique among all lists ever received
  HintSender sender_;
  // Immutable once in place: Extend swaps in a longer copy built outside the lock.
  std::shared_ptr<const HintPaths> paths_;
  std::vector<PosState> states_;  // one per position
  size_t next_ = 0;
  size_t read_frontier_ = 0;
  std::map<size_t, Held> held_;   // position -> what is held for it, unread
  size_t outstanding_files_ = 0;  // in flight + held, unread
  uint64_t outstanding_bytes_ = 0;
  int in_flight_ = 0;
  HintStatus counters_;
  uint64_t charged_ = 0;
  int pieces_ = 1;
};

}  // namespace ossmount::prefetch
