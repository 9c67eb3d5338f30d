#include "object/request_metrics.h"

#include <array>

#include "common/metrics.h"

namespace ossmount::object {
namespace {

constexpr int kTypes = 5;

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

RequestType ClassifyRequest(const RequestSpec& spec) {
  if (spec.method == "HEAD") return RequestType::kHead;
  if (spec.method != "GET") return RequestType::kOther;
  for (const auto& [name, value] : spec.query) {
    if (name == "list-type") return RequestType::kList;
  }
  for (const auto& [name, value] : spec.headers) {
    if (name == "Range") return RequestType::kGetRange;
  }
  return spec.key.empty() ? RequestType::kOther : RequestType::kGet;
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
