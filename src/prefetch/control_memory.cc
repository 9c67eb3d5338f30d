#include "prefetch/control_memory.h"

#include <algorithm>

#include "common/format_bytes.h"
#include "common/metrics.h"

namespace ossmount::prefetch {

namespace {

// A size as the option takes it: "256MiB", "1GiB", "1000000".
std::string ControlOptionSize(uint64_t n) {
  const char* units[] = {"GiB", "MiB", "KiB"};
  const uint64_t sizes[] = {1ull << 30, 1ull << 20, 1ull << 10};
  for (int i = 0; i < 3; ++i) {
    if (n >= sizes[i] && n % sizes[i] == 0) return std::to_string(n / sizes[i]) + units[i];
  }
  return std::to_string(n);
}

metrics::Gauge& ControlMemoryGauge() {
  static metrics::Gauge& g = metrics::Registry::Global().GetGauge(
      "ossmount_control_memory_bytes",
      "Memory held for control requests: hint lists and warm-up queues (--control-memory).");
  return g;
}

}  // namespace

ControlMemory::ControlMemory(uint64_t limit) : limit_(limit) {
  metrics::Registry::Global()
      .GetGauge("ossmount_control_memory_limit_bytes",
                "The limit on memory held for control requests (--control-memory).")
      .Set(static_cast<int64_t>(limit_));
}

bool ControlMemory::Fits(const Requester& by, uint64_t bytes, uint64_t credit) const {
  const uint64_t used = used_ - std::min(used_, credit);
  if (used + bytes > limit_) return false;
  return by.owner || others_used_ - std::min(others_used_, credit) + bytes <= others_limit();
}

bool ControlMemory::TryCharge(const Requester& by, uint64_t bytes, uint64_t credit) {
  if (!Fits(by, bytes, credit)) return false;
  Charge(by, bytes);
  return true;
}

void ControlMemory::Charge(const Requester& by, uint64_t bytes) {
  used_ += bytes;
  if (!by.owner) others_used_ += bytes;
  ControlMemoryGauge().Set(static_cast<int64_t>(used_));
}

void ControlMemory::Uncharge(const Requester& by, uint64_t bytes) {
  used_ -= std::min(used_, bytes);
  if (!by.owner) others_used_ -= std::min(others_used_, bytes);
  ControlMemoryGauge().Set(static_cast<int64_t>(used_));
}

std::string ControlMemory::NoRoomMessage(const Requester& by, uint64_t bytes,
                                         uint64_t credit) const {
  const uint64_t used = used_ - std::min(used_, credit);
  const uint64_t others = others_used_ - std::min(others_used_, credit);
  const uint64_t share = others_limit();
  if (!by.owner && others + bytes > share) {  // the other users' share is short
    return "users other than the mount's owner and root share a quarter of the control "
           "channel's memory (" +
           ControlOptionSize(share) + " of --control-memory " + ControlOptionSize(limit_) +
           "), which has " + FormatBytes(static_cast<double>(share - std::min(share, others))) +
           " free";
  }
  return "the control channel's memory (--control-memory " + ControlOptionSize(limit_) + ") has " +
         FormatBytes(static_cast<double>(limit_ - std::min(limit_, used))) + " free";
}

ControlMemoryStatus ControlMemory::Status() const {
  ControlMemoryStatus st;
  st.used = used_;
  st.limit = limit_;
  st.other_users_used = others_used_;
  st.other_users_limit = others_limit();
  return st;
}

}  // namespace ossmount::prefetch
