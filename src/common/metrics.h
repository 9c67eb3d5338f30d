// Metrics: named counters, gauges and latency histograms, one process-wide registry.
//
// Hot path: code looks a metric up once (GetCounter & co. take a lock and may allocate) and
// keeps the reference, which stays valid for the registry's lifetime; Add/Set/Observe are
// then a relaxed atomic operation or two, no lock, no allocation.
//
// Names follow Prometheus conventions (ossmount_requests_total, ..._seconds); labels are
// fixed at lookup, e.g. {{"type", "GET"}, {"outcome", "ok"}}. Label values come from a
// small closed set chosen by the code (request types, outcome names), never from paths or
// credentials, so the number of series stays small and no secret can reach an exposition.
//
// Exposition: PrometheusText() (text format 0.0.4 with HELP/TYPE lines) and Json() (what
// `ossmount stats` reads over the control socket).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ossmount::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void Add(int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Durations in fixed log-scale buckets: bucket i holds values up to 2^(i/2) microseconds
// (1 us, 1.41 us, 2 us, ... about 190 s), the last one everything above. Percentiles are
// interpolated within a bucket, so they are exact to within one bucket (a factor of 1.41).
class Histogram {
 public:
  static constexpr int kBuckets = 56;  // finite bounds; one more for +Inf

  void Observe(std::chrono::nanoseconds d);
  void ObserveSeconds(double seconds) {
    Observe(std::chrono::nanoseconds(static_cast<int64_t>(seconds * 1e9)));
  }

  struct Snapshot {
    std::array<uint64_t, kBuckets + 1> counts{};  // per bucket, not cumulative
    uint64_t count = 0;
    double sum_seconds = 0;
    // The q-quantile (0 < q < 1) in seconds; 0 when empty.
    double Quantile(double q) const;
  };
  Snapshot Take() const;

  // Upper bound of bucket i in seconds (i < kBuckets).
  static double BucketBound(int i);
  // The bucket a duration falls into.
  static int BucketFor(std::chrono::nanoseconds d);

 private:
  std::array<std::atomic<uint64_t>, kBuckets + 1> counts_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_ns_{0};
};

class Registry {
 public:
  // The process-wide registry every module reports to.
  static Registry& Global();

  // The same (name, labels) always returns the same object. `help` is taken from the
  // first lookup of a name. REQUIRES: a name is used for one kind of metric only.
  Counter& GetCounter(const std::string& name, const std::string& help, Labels labels = {});
  Gauge& GetGauge(const std::string& name, const std::string& help, Labels labels = {});
  Histogram& GetHistogram(const std::string& name, const std::string& help, Labels labels = {});
  // A gauge read when exposed (memory in use, open handles owned elsewhere). A second
  // registration of the same series replaces the callback. The callback must be cheap and
  // thread-safe, and stay valid until replaced or RemoveCallbackGauge (call it before the
  // object it reads goes away).
  void SetCallbackGauge(const std::string& name, const std::string& help, Labels labels,
                        std::function<double()> read);
  void RemoveCallbackGauge(const std::string& name, const Labels& labels);
  // The same for a count kept elsewhere that only grows (exposed with TYPE counter).
  void SetCallbackCounter(const std::string& name, const std::string& help, Labels labels,
                          std::function<double()> read);

  std::string PrometheusText() const;
  // {"counters":[{"name":..,"labels":{..},"value":N}],"gauges":[..],
  //  "histograms":[{"name":..,"labels":{..},"count":N,"sum":S,"p50":..,"p90":..,"p99":..}]}
  // Durations in seconds.
  std::string Json() const;

 private:
  enum class Kind { kCounter, kGauge, kHistogram, kCallback, kCallbackCounter };
  struct Series {
    Labels labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
    std::function<double()> read;
  };
  struct Family {
    Kind kind;
    std::string help;
    std::map<std::string, Series> series;  // keyed by the rendered label set
  };
  Series& Find(const std::string& name, const std::string& help, Kind kind, Labels labels);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace ossmount::metrics
