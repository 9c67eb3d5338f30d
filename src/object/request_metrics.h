// What the object client reports to the metrics registry (common/metrics.h), per logical
// request (all attempts of one operation):
//   ossmount_requests_total{type, outcome}          type LIST, HEAD, GET, GET-range, other,
//                                                    and one per write operation (PUT,
//                                                    UploadPart, CompleteMultipart, ...);
//                                                    outcome "ok" or an ErrorCodeName
//   ossmount_request_duration_seconds{type}         start to finish, retries included
//   ossmount_request_retries_total{type}            retries (attempts after a failure; the
//                                                    fallback from the data endpoint is not one)
//   ossmount_received_bytes_total{type}             2xx body bytes, every attempt
//   ossmount_request_resumed_bytes_total{type}      bytes a resumed retry did not ask for
//                                                    again (Operation::resume)
// Cost per request: a few relaxed atomic adds; error outcomes take one registry lookup.
#pragma once

#include <chrono>
#include <cstdint>

#include "object/request_builder.h"
#include "ossmount/status.h"

namespace ossmount::object {

// The first five keep their values (and names) from before the write path existed.
enum class RequestType {
  kList,
  kHead,
  kGet,
  kGetRange,
  kOther,
  kPut,
  kInitiateMultipart,
  kUploadPart,
  kUploadPartCopy,
  kCompleteMultipart,
  kAbortMultipart,
  kListUploads,
  kCopyObject,
  kDelete,
  kDeleteMultiple,
};
inline constexpr int kRequestTypeCount = 15;

// From the method, the sub-resources in the query and the copy-source header.

RequestType ClassifyRequest(const RequestSpec& spec);
const char* RequestTypeName(RequestType type);

void RecordRetry(RequestType type);
void RecordReceivedBytes(RequestType type, uint64_t bytes);
void RecordResume(RequestType type, uint64_t kept_bytes);
void RecordFinished(RequestType type, const Status& status, std::chrono::nanoseconds elapsed);

}  // namespace ossmount::object
