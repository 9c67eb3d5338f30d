// Fault injection for the test server: latency (time to first byte), error responses,
// connection resets, truncated bodies, stalls, bandwidth caps, corrupted bytes, and
// malformed responses (malformed.h: broken XML, lying headers, HTML error pages).
//
// Each fault is a probability per request, drawn from a generator seeded with --seed and the
// request's sequence number, so a single-connection run is reproducible. Latency applies to
// every object-API request (OSS latency lives in time to first byte for every operation);
// the other faults apply only to the operation classes in fault_ops (default: get), and
// bandwidth pacing to both the request body and the response body of those classes.
//
// Write faults (write_*, lost_complete_rate) are separate: they apply to every write request
// (request_info.h IsWriteOp) whose key starts with write_fault_prefix, whatever fault_ops
// says, and never change a request's effect except as stated: an injected write error, a
// reset or a cut body means the request was not executed; a lost Complete was executed.
//
// Thread-safety: FaultInjector may be used from any thread; settings can be replaced at run
// time (control API) and take effect for requests planned afterwards.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ossmount/status.h"

namespace ossmount::testserver {

// Operation classes faults can be limited to. kAppend is AppendObject alone (not in kPut), so a
// test can fault appends without faulting the uploads around them.
enum class FaultOp { kGet, kHead, kList, kPut, kDelete, kAppend, kOther };

struct ErrorKind {
  unsigned status = 500;
  std::string code;  // InternalError, ServiceUnavailable, SlowDown, ...
  std::string message;
};

struct FaultSettings {
  double ttfb_ms = 0;      // fixed time to first byte
  double ttfb_p50_ms = 0;  // lognormal when both p50 and p99 are set
  double ttfb_p99_ms = 0;
  double error_rate = 0;
  std::vector<std::string> error_kinds{"500", "503", "SlowDown"};
  int retry_after_s = 0;        // Retry-After header on injected 503/429 when > 0
  double retry_after_rate = 1;  // the fraction of injected errors that carry it
  double reset_rate = 0;
  double truncate_rate = 0;
  double stall_rate = 0;
  int stall_ms = 2000;
  double bandwidth_mbps = 0;  // megabits per second per connection; 0 = unlimited
  double corrupt_rate = 0;
  // Every ranged GET (206) of a key containing this has one body byte flipped (in the middle
  // of the range), its headers right: the Content-Length, the ETag and the whole object's
  // x-oss-hash-crc64ecma. Whole-object GETs of such keys stay right. "" = off. Applies to
  // GETs whatever fault_ops says.
  std::string corrupt_key;
  // Malformed responses (malformed.h): kinds drawn uniformly, each successful response of a
  // fault op is malformed with malformed_rate (only when kinds are given).
  std::vector<std::string> malformed_kinds;
  double malformed_rate = 1;
  std::set<FaultOp> fault_ops{FaultOp::kGet};
  // Write faults. write_error_rate: the request is answered with one of write_error_kinds
  // (default 503 ServiceUnavailable) without being executed. write_reset_rate: the connection
  // is reset after part of the request body was read (not executed). write_truncate_rate:
  // part of the body is read, then 400 IncompleteBody and the connection is closed (not
  // executed; only requests with a body). lost_complete_rate: a CompleteMultipartUpload that
  // succeeded has its response dropped (the connection is reset), so the object exists, the
  // upload is gone, and the client's retry gets 404 NoSuchUpload. write_fault_prefix limits all
  // of these to keys starting with it ("" = every key; bucket-level writes such as
  // DeleteMultipleObjects have the key ""). unanswered_complete: every CompleteMultipartUpload
  // (under write_fault_prefix) is never answered, the connection held silent until the client
  // gives up: "applied" executes it first (the object exists, the upload is gone), "ignored"
  // does not (the upload stays open); "" = off. A client cannot tell the two apart.
  double write_error_rate = 0;
  std::vector<std::string> write_error_kinds{"503"};
  double write_reset_rate = 0;
  double write_truncate_rate = 0;
  double lost_complete_rate = 0;
  // A CopyObject or UploadPartCopy that succeeded has its answer dropped (the connection is
  // reset): the copy exists, and the client cannot tell it from a copy never made.
  double lost_copy_rate = 0;
  std::string unanswered_complete;
  std::string write_fault_prefix;
  // A hostile listing: every page of a listing whose prefix starts with this is truncated, and
  // its continuation tokens alternate between two values, so the listing never ends unless the
  // client notices the repeat. "" = off. Applies whatever fault_ops says.
  std::string list_loop_prefix;
  // A generated directory: a ListObjectsV2 whose prefix is exactly synthetic_prefix lists
  // synthetic_count keys synthetic_prefix + "f" + a 10-digit number (1 byte each, listed only:
  // they cannot be read), whatever is stored; 0 = a listing that never ends, each page new
  // keys with a next token. "" = off. Applies whatever fault_ops says.
  std::string synthetic_prefix;
  uint64_t synthetic_count = 0;

  // Sets one setting by its command-line name without dashes ("error-rate", "fault-ops",
  // ...). kInvalidArgument for an unknown name or a bad value.
  Status Set(std::string_view name, std::string_view value);
  std::string ToJson() const;
};

// What to do to one request.
struct FaultPlan {
  uint64_t sequence = 0;
  std::chrono::microseconds delay{0};
  bool error = false;
  ErrorKind error_kind;
  int retry_after_s = 0;
  enum class Cut { kNone, kResetBeforeHeaders, kResetInBody, kTruncate } cut = Cut::kNone;
  double cut_fraction = 0;  // where in the body the cut happens, in [0, 1)
  bool stall = false;
  double stall_fraction = 0;
  std::chrono::milliseconds stall_for{0};
  bool corrupt = false;
  double corrupt_fraction = 0;
  std::string corrupt_key;      // GETs: FaultSettings::corrupt_key (applied to 206 replies)
  std::string malformed;        // a malformed.h kind, or ""
  double bytes_per_second = 0;  // 0 = unlimited
  // Write faults (FaultSettings::write_*): error is set for write_error too.
  bool write_error = false;
  enum class BodyCut { kNone, kReset, kTruncate } body_cut = BodyCut::kNone;
  double body_cut_fraction = 0;  // the part of the request body read before the cut, [0, 1)
  bool lose_answer = false;      // execute, then reset instead of answering
  // unanswered_complete: hold the connection silent, after executing the request or not.
  enum class Unanswered { kNo, kApplied, kIgnored } unanswered = Unanswered::kNo;
};

// What the write faults need to know of a write request.
struct WriteTarget {
  std::string_view key;
  bool complete = false;  // CompleteMultipartUpload (lost_complete_rate)
  bool copy = false;      // CopyObject or UploadPartCopy (lost_copy_rate)
};

class FaultInjector {
 public:
  FaultInjector(FaultSettings settings, uint64_t seed);

  // Decides the faults for the next request of class `op`; `write` is set for write requests
  // (the only ones write faults apply to).
  FaultPlan Plan(FaultOp op, const WriteTarget* write = nullptr);

  FaultSettings settings() const;
  void set_settings(FaultSettings settings);

 private:
  const uint64_t seed_;
  std::atomic<uint64_t> sequence_{0};
  mutable std::mutex mu_;
  std::shared_ptr<const FaultSettings> settings_;  // guarded by mu_
};

// Maps an --error-kinds entry to the response it produces; kInvalidArgument if unknown.
Result<ErrorKind> ParseErrorKind(std::string_view name);

}  // namespace ossmount::testserver
