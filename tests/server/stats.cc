#include "stats.h"

namespace ossmount::testserver {

namespace {
constexpr const char* kOpNames[] = {"GET",
                                    "GET_RANGE",
                                    "HEAD",
                                    "LIST",
                                    "PUT",
                                    "COPY",
                                    "DELETE",
                                    "DELETE_MULTIPLE",
                                    "INITIATE_MULTIPART",
                                    "UPLOAD_PART",
                                    "UPLOAD_PART_COPY",
                                    "COMPLETE_MULTIPART",
                                    "ABORT_MULTIPART",
                                    "LIST_MULTIPART_UPLOADS",
                                    "LIST_PARTS",
                                    "APPEND",
                                    "PUT_SYMLINK",
                                    "GET_SYMLINK",
                                    "BUCKET",
                                    "CONTROL",
                                    "OTHER"};
constexpr const char* kFaultNames[] = {
    "error",         "reset",     "truncate",           "stall",      "corrupt",
    "delayed",       "malformed", "write_error",        "body_reset", "body_truncate",
    "lost_complete", "lost_copy", "unanswered_complete"};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == static_cast<size_t>(StatOp::kCount));
static_assert(sizeof(kFaultNames) / sizeof(kFaultNames[0]) ==
              static_cast<size_t>(StatFault::kCount));
}  // namespace

std::string ServerStats::ToJson(const std::vector<std::pair<std::string, uint64_t>>& gauges) const {
  auto load = [](const std::atomic<uint64_t>& a) {
    return std::to_string(a.load(std::memory_order_relaxed));
  };
  uint64_t requests = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (i != static_cast<size_t>(StatOp::kControl) && i != static_cast<size_t>(StatOp::kGetRange)) {
      requests += ops_[i].load(std::memory_order_relaxed);
    }
  }
  std::string out = "{\"requests\":" + std::to_string(requests);
  for (size_t i = 0; i < ops_.size(); ++i) {
    out += ",\"" + std::string(kOpNames[i]) + "\":" + load(ops_[i]);
  }
  out += ",\"status\":{";
  bool first = true;
  for (size_t i = 0; i < status_.size(); ++i) {
    uint64_t n = status_[i].load(std::memory_order_relaxed);
    if (!n) continue;
    out += (first ? "\"" : ",\"") + std::to_string(i + 100) + "\":" + std::to_string(n);
    first = false;
  }
  out += "},\"faults\":{";
  for (size_t i = 0; i < faults_.size(); ++i) {
    out += (i ? ",\"" : "\"") + std::string(kFaultNames[i]) + "\":" + load(faults_[i]);
  }
  out += "},\"bytes_sent\":" + load(bytes_sent_) + ",\"bytes_received\":" + load(bytes_received_) +
         ",\"connections\":" + load(connections_) + ",\"auth_failures\":" + load(auth_failures_) +
         ",\"deleted_keys\":" + load(deleted_keys_);
  for (const auto& [name, value] : gauges) out += ",\"" + name + "\":" + std::to_string(value);
  return out + "}";
}

void ServerStats::Reset() {
  for (auto& a : ops_) a.store(0);
  for (auto& a : faults_) a.store(0);
  for (auto& a : status_) a.store(0);
  auth_failures_ = 0;
  bytes_sent_ = 0;
  bytes_received_ = 0;
  connections_ = 0;
  deleted_keys_ = 0;
}

}  // namespace ossmount::testserver
