#include "readahead/part_crc_fold.h"

#include <algorithm>

#include "common/crc64.h"

namespace ossmount::readahead {

PartCrcFold::PartCrcFold(uint64_t object_size, uint64_t part_size, size_t max_waiting,
                         std::optional<uint64_t> expected)
    : size_(object_size),
      part_size_(part_size),
      parts_(part_size == 0 ? 0 : (object_size + part_size - 1) / part_size),
      max_waiting_(max_waiting),
      expected_(expected) {}

uint64_t PartCrcFold::PartLength(uint64_t index) const {
  return std::min<uint64_t>(part_size_, size_ - index * part_size_);
}

void PartCrcFold::Arm() {
  if (armed_ || unavailable_ || parts_ == 0) return;
  armed_ = true;
  next_ = 0;
  crc_ = 0;
  waiting_.clear();
}

void PartCrcFold::Disarm() {
  armed_ = false;
  next_ = 0;
  crc_ = 0;
  waiting_.clear();
}

void PartCrcFold::SetExpected(uint64_t crc) {
  unavailable_ = false;
  if (expected_from_get_) return;
  expected_ = crc;
  expected_from_get_ = true;
}

void PartCrcFold::NoteNoCrc() {
  if (expected_) return;
  unavailable_ = true;
  Disarm();
}

PartCrcFold::Outcome PartCrcFold::Add(uint64_t index, uint64_t crc) {
  if (!Wants(index)) return {};
  if (index > next_) {
    waiting_[index] = crc;
    if (waiting_.size() > max_waiting_) {
      Disarm();
      return {Verdict::kAbandoned, 0};
    }
    return {};
  }
  // index == next_: fold it and every waiting part now contiguous.
  crc_ = Crc64Combine(crc_, crc, PartLength(index));
  ++next_;
  for (auto it = waiting_.begin(); it != waiting_.end() && it->first == next_;) {
    crc_ = Crc64Combine(crc_, it->second, PartLength(next_));
    ++next_;
    it = waiting_.erase(it);
  }
  if (next_ < parts_) return {};
  Outcome outcome;
  outcome.computed = crc_;
  outcome.verdict =
      !expected_ ? Verdict::kUnknown : (*expected_ == crc_ ? Verdict::kMatch : Verdict::kMismatch);
  Disarm();
  return outcome;
}

}  // namespace ossmount::readahead
