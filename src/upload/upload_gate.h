// UploadGate: what every upload of a mount shares. It caps the parts (and single PUTs) in
// flight, accounts the bytes written and not yet acknowledged in the one MemoryBudget, and
// holds writers back while that budget is full and parts are on their way (backpressure).
//
// A writer's bytes are copied before it is told to wait, so the budget is exceeded by at
// most one write request per waiting writer; a writer waits only while some part is queued
// or in flight, whose end frees memory, so waiting writers are always woken.
//
// Ownership: create with std::make_shared. Thread-safety: thread-safe; mu_ is a leaf lock,
// and the functions it is handed run with no lock held.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "data/memory_budget.h"

namespace ossmount::upload {

class UploadGate {
 public:
  UploadGate(std::shared_ptr<data::MemoryBudget> budget, int max_parts_in_flight);

  // Bytes copied into upload buffers (always granted: they are already there) and bytes
  // released when the part holding them ended.
  void AddBuffered(uint64_t bytes);
  void ReleaseBuffered(uint64_t bytes);

  // A part ready to go: `send` runs now (on this thread) when fewer than the cap are in
  // flight, else when one ends. Every `send` that ran is followed by exactly one PartEnded.
  void Submit(std::function<void()> send);
  void PartEnded();

  // Whether a writer should wait before writing more: the budget is over its limit and some
  // part is queued or in flight.
  bool MustWait() const;
  // Runs `resume` once MustWait() is false: now, on this thread, when it already is.
  void WaitForRoom(std::function<void()> resume);

  uint64_t parts_pending() const;
  int max_parts_in_flight() const { return max_in_flight_; }
  const std::shared_ptr<data::MemoryBudget>& budget() const { return budget_; }

 private:
  bool MustWaitLocked() const;
  // Starts queued parts and wakes writers as far as the cap and the budget allow.
  void Pump();

  const std::shared_ptr<data::MemoryBudget> budget_;
  const int max_in_flight_;
  // mu_ guards every member below.
  mutable std::mutex mu_;
  int in_flight_ = 0;
  std::deque<std::function<void()>> queued_;
  std::deque<std::function<void()>> waiting_writers_;
};

}  // namespace ossmount::upload
