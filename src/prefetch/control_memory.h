// ControlMemory: the one limit (--control-memory) on what control requests make the daemon
// hold (hint lists, warm-up queues), and the share of it that users other than the mount's
// owner and root have together (1/kOtherUsersShare). Keeps the counts, says whether a
// charge fits, and writes the message naming the limit one did not fit. Beside it, the
// counts such a user may have at once.
//
// Thread-safety: none; the prefetcher guards it. Keeps the ossmount_control_memory_bytes
// gauge current.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "prefetch/prefetch_status.h"

namespace ossmount::prefetch {

// Who asked for a hint list or a warm-up. `owner`: the mount's owner or root, bounded by
// control_memory only; anyone else has the smaller share and counts of other users.
struct Requester {
  unsigned uid = 0;
  bool owner = true;
};

// A user other than the mount's owner and root may have at most this many hint lists and
// running warm-ups at once.
inline constexpr size_t kOtherUserHintLists = 8;
inline constexpr size_t kOtherUserJobs = 4;

class ControlMemory {
 public:
  static constexpr uint64_t kOtherUsersShare = 4;

  explicit ControlMemory(uint64_t limit);

  // Whether `bytes` more fit `by`'s room, counting `credit` (bytes of `by` about to be
  // released, such as a list the new one replaces) as free.
  bool Fits(const Requester& by, uint64_t bytes, uint64_t credit = 0) const;
  // Charges `bytes` if they fit; false (nothing charged) otherwise.
  bool TryCharge(const Requester& by, uint64_t bytes, uint64_t credit = 0);
  void Charge(const Requester& by, uint64_t bytes);
  void Uncharge(const Requester& by, uint64_t bytes);
  // Why `bytes` more do not fit `by`'s room: "the control channel's memory
  // (--control-memory 256MiB) has 12.0 MiB free", or the same of the other users' share.
  std::string NoRoomMessage(const Requester& by, uint64_t bytes, uint64_t credit = 0) const;

  uint64_t limit() const { return limit_; }
  uint64_t others_limit() const { return limit_ / kOtherUsersShare; }
  // used, limit and the other users' counts (hint_bytes and warmup_bytes left 0).
  ControlMemoryStatus Status() const;

 private:
  const uint64_t limit_;
  uint64_t used_ = 0;
  uint64_t others_used_ = 0;  // of used_: users other than the owner and root
};

}  // namespace ossmount::prefetch
