// Request counters for tests (control API GET /_ossmount/stats, POST /_ossmount/reset).
//
// Thread-safety: every method may be called concurrently; counters are relaxed atomics, so
// a snapshot taken while requests run is approximate but never torn per counter.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ossmount::testserver {

// What a request was, as counted in stats. Names in the JSON are the enumerator names
// without the k: "GET", "HEAD", "LIST", "PUT", ...
enum class StatOp {
  kGet,             // GetObject (ranged or not)
  kGetRange,        // the subset of kGet that carried a Range header
  kHead,            // HeadObject and HeadBucket
  kList,            // ListObjects V1/V2
  kPut,             // PutObject
  kCopy,            // CopyObject
  kDelete,          // DeleteObject requests
  kDeleteMultiple,  // POST ?delete (its keys are counted in "deleted_keys")
  kInitiateMultipart,
  kUploadPart,
  kUploadPartCopy,
  kCompleteMultipart,
  kAbortMultipart,
  kListMultipartUploads,  // GET /?uploads
  kListParts,             // GET /key?uploadId=
  kAppend,                // AppendObject (OSS): POST /key?append&position=N
  kPutSymlink,            // PutSymlink (OSS): PUT /key?symlink
  kGetSymlink,            // GetSymlink (OSS): GET /key?symlink
  kBucket,                // other bucket-level operations (ListBuckets, location, create, delete)
  kControl,               // /_ossmount/ requests
  kOther,                 // unsupported or unparseable
  kCount
};

// JSON names: error, reset, truncate, stall, corrupt, delayed, malformed, write_error,
// body_reset, body_truncate, lost_complete, lost_copy, unanswered_complete.
enum class StatFault {
  kError,
  kReset,
  kTruncate,
  kStall,
  kCorrupt,
  kDelayed,
  kMalformed,
  kWriteError,          // --write-error-rate
  kBodyReset,           // --write-reset-rate: connection reset while reading the request body
  kBodyTruncate,        // --write-truncate-rate: body read in part, then 400 IncompleteBody
  kLostComplete,        // --lost-complete-rate: Complete done, its answer never sent
  kLostCopy,            // --lost-copy-rate: a copy done, its answer never sent
  kUnansweredComplete,  // --unanswered-complete: the connection held silent
  kCount
};

class ServerStats {
 public:
  void Count(StatOp op) { ops_[static_cast<size_t>(op)].fetch_add(1, std::memory_order_relaxed); }
  void CountFault(StatFault f) {
    faults_[static_cast<size_t>(f)].fetch_add(1, std::memory_order_relaxed);
  }
  void CountStatus(unsigned status) {
    if (status >= 100 && status < 600)
      status_[status - 100].fetch_add(1, std::memory_order_relaxed);
  }
  void CountAuthFailure() { auth_failures_.fetch_add(1, std::memory_order_relaxed); }
  void AddBytesSent(uint64_t n) { bytes_sent_.fetch_add(n, std::memory_order_relaxed); }
  void AddBytesReceived(uint64_t n) { bytes_received_.fetch_add(n, std::memory_order_relaxed); }
  void CountConnection() { connections_.fetch_add(1, std::memory_order_relaxed); }
  void AddDeletedKeys(uint64_t n) { deleted_keys_.fetch_add(n, std::memory_order_relaxed); }

  // {"requests":n,"GET":n,...,"status":{"200":n,...},"faults":{"error":n,...},
  //  "bytes_sent":n,"bytes_received":n,"connections":n,"auth_failures":n,"deleted_keys":n}
  // plus each of `gauges` as "name":value at the end (current values such as
  // open_multipart_uploads, which Reset() does not touch).
  // "requests" and "status" count object-API requests only (control requests are not
  // included).
  std::string ToJson(const std::vector<std::pair<std::string, uint64_t>>& gauges = {}) const;
  void Reset();

 private:
  std::array<std::atomic<uint64_t>, static_cast<size_t>(StatOp::kCount)> ops_{};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(StatFault::kCount)> faults_{};
  std::array<std::atomic<uint64_t>, 500> status_{};
  std::atomic<uint64_t> auth_failures_{0}, bytes_sent_{0}, bytes_received_{0}, connections_{0};
  std::atomic<uint64_t> deleted_keys_{0};
};

}  // namespace ossmount::testserver
