#include "object/request_metrics.h"

#include <array>

#include "common/metrics.h"
#include "common/strings.h"

namespace ossmount::object {
namespace {

constexpr int kTypes = kRequestTypeCount;

struct TypeMetrics {
  metrics::Counter* ok;
  metrics::Counter* retries;
  metrics::Counter* bytes;
  metrics::Counter* resumed_bytes;
  metrics::Histogram* latency;
};

const std::array<TypeMetrics, kTypes>& All() {
  static const std::array<TypeMetrics, kTypes> all = [] {
    std::array<TypeMetrics, kTypes> a{};
    auto& r = metrics::Registry::Global();
    for (int i = 0; i < kTypes; ++i) {
      std::string type = RequestTypeName(static_cast<RequestType>(i));
      a[i].ok = &r.GetCounter("ossmount_requests_total",
                              "Object-store requests finished, by type and outcome.",
                              {{"type", type}, {"outcome", "ok"}});
      a[i].retries = &r.GetCounter("ossmount_request_retries_total",
                                   "Retries (attempts made after a failed one), by request type.",
                                   {{"type", type}});
      a[i].bytes =
          &r.GetCounter("ossmount_received_bytes_total",
                        "Response body bytes received from the object store.", {{"type", type}});
      a[i].resumed_bytes = &r.GetCounter(
          "ossmount_request_resumed_bytes_total",
          "Bytes retries did not ask for again: an earlier attempt had delivered them.",
          {{"type", type}});
      a[i].latency = &r.GetHistogram(
          "ossmount_request_duration_seconds",
          "Object-store request latency, first attempt to result, retries included.",
          {{"type", type}});
    }
    return a;
  }();
  return all;
}

const TypeMetrics& For(RequestType type) { return All()[static_cast<std::size_t>(type)]; }

}  // namespace

namespace {

bool HasParam(const RequestSpec& spec, std::string_view name) {
  for (const auto& [n, v] : spec.query) {
    if (n == name) return true;
  }
  return false;
}

bool HasHeader(const RequestSpec& spec, std::string_view name) {
  for (const auto& [n, v] : spec.headers) {
    if (EqualsIgnoreCase(n, name)) return true;
  }
  return false;
}

}  // namespace

RequestType ClassifyRequest(const RequestSpec& spec) {
  const std::string& m = spec.method;
  if (m == "HEAD") return RequestType::kHead;
  if (m == "GET") {
    if (HasParam(spec, "list-type")) return RequestType::kList;
    if (HasParam(spec, "uploads")) return RequestType::kListUploads;
    if (HasHeader(spec, "Range")) return RequestType::kGetRange;
    return spec.key.empty() ? RequestType::kOther : RequestType::kGet;
  }
  if (m == "PUT") {
    const bool copy = HasHeader(spec, "x-oss-copy-source") || HasHeader(spec, "x-amz-copy-source");
    if (HasParam(spec, "partNumber")) {
      return copy ? RequestType::kUploadPartCopy : RequestType::kUploadPart;
    }
    return copy ? RequestType::kCopyObject : RequestType::kPut;
  }
  if (m == "POST") {
    if (HasParam(spec, "uploads")) return RequestType::kInitiateMultipart;
    if (HasParam(spec, "uploadId")) return RequestType::kCompleteMultipart;
    if (HasParam(spec, "delete")) return RequestType::kDeleteMultiple;
    return RequestType::kOther;
  }
  if (m == "DELETE") {
    return HasParam(spec, "uploadId") ? RequestType::kAbortMultipart : RequestType::kDelete;
  }
  return RequestType::kOther;
}

const char* RequestTypeName(RequestType type) {
  switch (type) {
    case RequestType::kList:
      return "LIST";
    case RequestType::kHead:
      return "HEAD";
    case RequestType::kGet:
      return "GET";
    case RequestType::kGetRange:
      return "GET-range";
    case RequestType::kOther:
      break;
    case RequestType::kPut:
      return "PUT";
    case RequestType::kInitiateMultipart:
      return "InitiateMultipart";
    case RequestType::kUploadPart:
      return "UploadPart";
    case RequestType::kUploadPartCopy:
      return "UploadPartCopy";
    case RequestType::kCompleteMultipart:
      return "CompleteMultipart";
    case RequestType::kAbortMultipart:
      return "AbortMultipart";
    case RequestType::kListUploads:
      return "ListMultipartUploads";
    case RequestType::kCopyObject:
      return "CopyObject";
    case RequestType::kDelete:
      return "DELETE";
    case RequestType::kDeleteMultiple:
      return "DeleteMultiple";
  }
  return "other";
}

void RecordRetry(RequestType type) { For(type).retries->Add(); }

void RecordReceivedBytes(RequestType type, uint64_t bytes) { For(type).bytes->Add(bytes); }

void RecordResume(RequestType type, uint64_t kept_bytes) {
  For(type).resumed_bytes->Add(kept_bytes);
}

void RecordFinished(RequestType type, const Status& status, std::chrono::nanoseconds elapsed) {
  const TypeMetrics& m = For(type);
  m.latency->Observe(elapsed);
  if (status.ok()) {
    m.ok->Add();
    return;
  }
  metrics::Registry::Global()
      .GetCounter("ossmount_requests_total", "",
                  {{"type", RequestTypeName(type)}, {"outcome", ErrorCodeName(status.code())}})
      .Add();
}

}  // namespace ossmount::object
