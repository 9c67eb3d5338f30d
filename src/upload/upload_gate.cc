#include "upload/upload_gate.h"

#include <utility>
#include <vector>

#include "upload/upload_metrics.h"

namespace ossmount::upload {

UploadGate::UploadGate(std::shared_ptr<data::MemoryBudget> budget, int max_parts_in_flight)
    : budget_(std::move(budget)),
      max_in_flight_(max_parts_in_flight < 1 ? 1 : max_parts_in_flight) {}

void UploadGate::AddBuffered(uint64_t bytes) {
  budget_->Reserve(bytes);
  Uploads().buffered_bytes.Add(static_cast<int64_t>(bytes));
}

void UploadGate::ReleaseBuffered(uint64_t bytes) {
  budget_->Release(bytes);
  Uploads().buffered_bytes.Add(-static_cast<int64_t>(bytes));
  Pump();
}

void UploadGate::Submit(std::function<void()> send) {
  {
    std::lock_guard lock(mu_);
    if (in_flight_ >= max_in_flight_) {
      queued_.push_back(std::move(send));
      return;
    }
    ++in_flight_;
  }
  Uploads().parts_in_flight.Add(1);
  send();
}

void UploadGate::PartEnded() {
  {
    std::lock_guard lock(mu_);
    --in_flight_;
  }
  Uploads().parts_in_flight.Add(-1);
  Pump();
}

bool UploadGate::MustWaitLocked() const {
  return budget_->used() > budget_->limit() && (in_flight_ > 0 || !queued_.empty());
}

bool UploadGate::MustWait() const {
  std::lock_guard lock(mu_);
  return MustWaitLocked();
}

void UploadGate::WaitForRoom(std::function<void()> resume) {
  {
    std::lock_guard lock(mu_);
    if (MustWaitLocked()) {
      waiting_writers_.push_back(std::move(resume));
      Uploads().writers_waiting.Add(1);
      Uploads().writer_waits.Add();
      return;
    }
  }
  resume();
}

uint64_t UploadGate::parts_pending() const {
  std::lock_guard lock(mu_);
  return static_cast<uint64_t>(in_flight_) + queued_.size();
}

void UploadGate::Pump() {
  std::vector<std::function<void()>> sends, writers;
  {
    std::lock_guard lock(mu_);
    while (in_flight_ < max_in_flight_ && !queued_.empty()) {
      sends.push_back(std::move(queued_.front()));
      queued_.pop_front();
      ++in_flight_;
    }
    while (!waiting_writers_.empty() && !MustWaitLocked()) {
      writers.push_back(std::move(waiting_writers_.front()));
      waiting_writers_.pop_front();
    }
  }
  Uploads().parts_in_flight.Add(static_cast<int64_t>(sends.size()));
  Uploads().writers_waiting.Add(-static_cast<int64_t>(writers.size()));
  for (auto& send : sends) send();
  for (auto& resume : writers) resume();
}

}  // namespace ossmount::upload
