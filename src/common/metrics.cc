#include "common/metrics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

namespace ossmount::metrics {
namespace {

// Prometheus label values escape backslash, double quote and newline; so does JSON (plus
// control characters, which label values here never contain).
std::string Escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string Render(const Labels& labels, const std::string& extra = "") {
  std::string out;
  for (const auto& [k, v] : labels) {
    out += (out.empty() ? "" : ",") + k + "=\"" + Escape(v) + "\"";
  }
  if (!extra.empty()) out += (out.empty() ? "" : ",") + extra;
  return out.empty() ? "" : "{" + out + "}";
}

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.9g", v);
  }
  return buf;
}

// JSON has no Inf/NaN.
std::string JsonNumber(double v) { return std::isfinite(v) ? Number(v) : "0"; }

std::string JsonLabels(const Labels& labels) {
  std::string out = "{";
  for (const auto& [k, v] : labels) {
    if (out.size() > 1) out += ",";
    out += "\"" + Escape(k) + "\":\"" + Escape(v) + "\"";
  }
  return out + "}";
}

}  // namespace

// ---- Histogram ----------------------------------------------------------------------------

double Histogram::BucketBound(int i) { return std::exp2(i / 2.0) * 1e-6; }

int Histogram::BucketFor(std::chrono::nanoseconds d) {
  // Microseconds, rounded up: a value equal to a bound belongs to that bound's bucket.
  int64_t ns = d.count();
  if (ns <= 1000) return 0;
  uint64_t us_ceil = static_cast<uint64_t>((ns + 999) / 1000);
  // 2^(k-1) < us_ceil <= 2^k  ->  bucket 2k or 2k-1 (the sqrt(2) midpoint between).
  int k = static_cast<int>(std::bit_width(us_ceil - 1));
  double mid = std::exp2(k - 0.5);
  int bucket = (static_cast<double>(ns) / 1000.0 <= mid) ? 2 * k - 1 : 2 * k;
  return std::clamp(bucket, 0, kBuckets);
}

void Histogram::Observe(std::chrono::nanoseconds d) {
  if (d.count() < 0) d = std::chrono::nanoseconds(0);
  counts_[static_cast<std::size_t>(BucketFor(d))].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(d.count()), std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Take() const {
  Snapshot s;
  for (int i = 0; i <= kBuckets; ++i) {
    s.counts[static_cast<std::size_t>(i)] =
        counts_[static_cast<std::size_t>(i)].load(std::memory_order_relaxed);
    s.count += s.counts[static_cast<std::size_t>(i)];
  }
  // The sum of the buckets, not count_, so that the exposition is self-consistent even
  // while observations race with the snapshot.
  s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) * 1e-9;
  return s;
}

double Histogram::Snapshot::Quantile(double q) const {
  if (count == 0) return 0;
  double rank = q * static_cast<double>(count);
  uint64_t seen = 0;
  for (int i = 0; i <= kBuckets; ++i) {
    uint64_t c = counts[static_cast<std::size_t>(i)];
    if (c == 0) continue;
    if (static_cast<double>(seen + c) >= rank) {
      double lower = i == 0 ? 0 : BucketBound(i - 1);
      if (i == kBuckets) return lower;  // above the last bound: report the bound
      double upper = BucketBound(i);
      double within = (rank - static_cast<double>(seen)) / static_cast<double>(c);
      return lower + (upper - lower) * std::clamp(within, 0.0, 1.0);
    }
    seen += c;
  }
  return BucketBound(kBuckets - 1);
}

// ---- Registry -----------------------------------------------------------------------------

Registry& Registry::Global() {
  static Registry* registry = new Registry();  // never destroyed: used until _Exit
  return *registry;
}

Registry::Series& Registry::Find(const std::string& name, const std::string& help, Kind kind,
                                 Labels labels) {
  auto [fit, inserted] = families_.try_emplace(name, Family{kind, help, {}});
  Family& family = fit->second;
  std::string key = Render(labels);
  auto [sit, added] = family.series.try_emplace(key);
  if (added) sit->second.labels = std::move(labels);
  return sit->second;
}

Counter& Registry::GetCounter(const std::string& name, const std::string& help, Labels labels) {
  std::lock_guard lock(mu_);
  Series& s = Find(name, help, Kind::kCounter, std::move(labels));
  if (!s.counter) s.counter = std::make_unique<Counter>();
  return *s.counter;
}

Gauge& Registry::GetGauge(const std::string& name, const std::string& help, Labels labels) {
  std::lock_guard lock(mu_);
  Series& s = Find(name, help, Kind::kGauge, std::move(labels));
  if (!s.gauge) s.gauge = std::make_unique<Gauge>();
  return *s.gauge;
}

Histogram& Registry::GetHistogram(const std::string& name, const std::string& help, Labels labels) {
  std::lock_guard lock(mu_);
  Series& s = Find(name, help, Kind::kHistogram, std::move(labels));
  if (!s.histogram) s.histogram = std::make_unique<Histogram>();
  return *s.histogram;
}

void Registry::SetCallbackGauge(const std::string& name, const std::string& help, Labels labels,
                                std::function<double()> read) {
  std::lock_guard lock(mu_);
  Find(name, help, Kind::kCallback, std::move(labels)).read = std::move(read);
}

void Registry::SetCallbackCounter(const std::string& name, const std::string& help, Labels labels,
                                  std::function<double()> read) {
  std::lock_guard lock(mu_);
  Find(name, help, Kind::kCallbackCounter, std::move(labels)).read = std::move(read);
}

void Registry::RemoveCallbackGauge(const std::string& name, const Labels& labels) {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  it->second.series.erase(Render(labels));
  if (it->second.series.empty()) families_.erase(it);
}

std::string Registry::PrometheusText() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, family] : families_) {
    const bool counter = family.kind == Kind::kCounter || family.kind == Kind::kCallbackCounter;
    const char* type = counter                           ? "counter"
                       : family.kind == Kind::kHistogram ? "histogram"
                                                         : "gauge";
    out += "# HELP " + name + " " + family.help + "\n";
    out += "# TYPE " + name + " " + type + "\n";
    for (const auto& [key, s] : family.series) {
      switch (family.kind) {
        case Kind::kCounter:
          out += name + key + " " + std::to_string(s.counter->Value()) + "\n";
          break;
        case Kind::kGauge:
          out += name + key + " " + std::to_string(s.gauge->Value()) + "\n";
          break;
        case Kind::kCallback:
        case Kind::kCallbackCounter:
          out += name + key + " " + Number(s.read ? s.read() : 0) + "\n";
          break;
        case Kind::kHistogram: {
          Histogram::Snapshot snap = s.histogram->Take();
          uint64_t cumulative = 0;
          for (int i = 0; i < Histogram::kBuckets; ++i) {
            cumulative += snap.counts[static_cast<std::size_t>(i)];
            out += name + "_bucket" +
                   Render(s.labels, "le=\"" + Number(Histogram::BucketBound(i)) + "\"") + " " +
                   std::to_string(cumulative) + "\n";
          }
          out += name + "_bucket" + Render(s.labels, "le=\"+Inf\"") + " " +
                 std::to_string(snap.count) + "\n";
          out += name + "_sum" + key + " " + Number(snap.sum_seconds) + "\n";
          out += name + "_count" + key + " " + std::to_string(snap.count) + "\n";
          break;
        }
      }
    }
  }
  return out;
}

std::string Registry::Json() const {
  std::lock_guard lock(mu_);
  std::string counters, gauges, histograms;
  auto append = [](std::string& list, const std::string& item) {
    list += (list.empty() ? "" : ",") + item;
  };
  for (const auto& [name, family] : families_) {
    for (const auto& [key, s] : family.series) {
      std::string head = "{\"name\":\"" + Escape(name) + "\",\"labels\":" + JsonLabels(s.labels);
      switch (family.kind) {
        case Kind::kCounter:
          append(counters, head + ",\"value\":" + std::to_string(s.counter->Value()) + "}");
          break;
        case Kind::kGauge:
          append(gauges, head + ",\"value\":" + std::to_string(s.gauge->Value()) + "}");
          break;
        case Kind::kCallback:
          append(gauges, head + ",\"value\":" + JsonNumber(s.read ? s.read() : 0) + "}");
          break;
        case Kind::kCallbackCounter:
          append(counters, head + ",\"value\":" + JsonNumber(s.read ? s.read() : 0) + "}");
          break;
        case Kind::kHistogram: {
          Histogram::Snapshot snap = s.histogram->Take();
          append(histograms, head + ",\"count\":" + std::to_string(snap.count) +
                                 ",\"sum\":" + JsonNumber(snap.sum_seconds) +
                                 ",\"p50\":" + JsonNumber(snap.Quantile(0.5)) +
                                 ",\"p90\":" + JsonNumber(snap.Quantile(0.9)) +
                                 ",\"p99\":" + JsonNumber(snap.Quantile(0.99)) + "}");
          break;
        }
      }
    }
  }
  return "{\"counters\":[" + counters + "],\"gauges\":[" + gauges + "],\"histograms\":[" +
         histograms + "]}";
}

}  // namespace ossmount::metrics
