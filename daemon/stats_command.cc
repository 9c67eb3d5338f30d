#include "stats_command.h"

#include <signal.h>
#include <unistd.h>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "common/bounded_json.h"
#include "common/format_bytes.h"
#include "common/metrics.h"
#include "config/mountpoint_check.h"
#include "control/mount_call.h"
#include "fs/list_ahead.h"
#include "ossmount/control_ioctl.h"

namespace ossmount::daemon {
namespace {

using Sums = std::map<std::string, double>;

std::string LabelsKey(const rapidjson::Value& labels) {
  std::string key;
  for (auto it = labels.MemberBegin(); it != labels.MemberEnd(); ++it) {
    key += std::string(key.empty() ? "" : ",") + it->name.GetString() + "=" + it->value.GetString();
  }
  return key;
}

// name{labels} -> value, for counters and gauges.
Sums Flatten(const rapidjson::Value& metrics) {
  Sums out;
  for (const char* kind : {"counters", "gauges"}) {
    if (!metrics.HasMember(kind)) continue;
    for (const auto& m : metrics[kind].GetArray()) {
      std::string labels = LabelsKey(m["labels"]);
      out[std::string(m["name"].GetString()) + (labels.empty() ? "" : "{" + labels + "}")] =
          m["value"].GetDouble();
    }
  }
  return out;
}

double Get(const Sums& s, const std::string& key) {
  auto it = s.find(key);
  return it == s.end() ? 0 : it->second;
}

std::string Ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), seconds < 0.01 ? "%.2f" : "%.1f", seconds * 1e3);
  return buf;
}

std::string Ratio(double hits, double total) {
  if (total <= 0) return "-";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.1f%% (%.0f/%.0f)", 100.0 * hits / total, hits, total);
  return buf;
}

std::string Line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Line(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return std::string(buf) + "\n";
}

}  // namespace

std::string StatsResult(const std::string& mountpoint,
                        std::chrono::steady_clock::time_point started,
                        const RestartHistory& restarts) {
  rapidjson::StringBuffer text;
  rapidjson::Writer<rapidjson::StringBuffer> w(text);
  auto string = [&w](const std::string& s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  };
  w.StartObject();
  w.Key("mountpoint");
  string(mountpoint);
  w.Key("pid");
  w.Int(getpid());
  // Which PID namespace the pid is in ("pid:[INODE]"): a container's readiness probe compares
  // it with its own, to tell its daemon from another pod's serving the same mount.
  w.Key("pid_namespace");
  char ns[64] = {};
  const ssize_t ns_len = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  string(ns_len > 0 ? std::string(ns, static_cast<size_t>(ns_len)) : std::string());
  w.Key("version");
  string(OSSMOUNT_VERSION);
  w.Key("uptime_seconds");
  w.Double(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  w.Key("restarts");
  w.Uint64(restarts.restarts);
  w.Key("take_overs");
  w.Uint64(restarts.take_overs);
  w.Key("last_restart_cause");
  string(restarts.last_cause);
  w.Key("restart_pause_ms");
  w.Int64(std::max<int64_t>(0, restarts.pause_ms.load()));
  w.Key("longest_restart_pause_ms");
  w.Int64(std::max(restarts.longest_pause_ms, restarts.pause_ms.load()));
  w.Key("metrics");
  w.RawValue("0", 1, rapidjson::kNumberType);  // a placeholder, replaced below
  w.EndObject();
  // The registry writes its own JSON: spliced in where the placeholder stands.
  std::string out = text.GetString();
  const std::string placeholder = "\"metrics\":0}";
  out.replace(out.size() - placeholder.size(), placeholder.size(),
              "\"metrics\":" + metrics::Registry::Global().Json() + "}");
  return out;
}

std::string RenderStats(const rapidjson::Value& now, const rapidjson::Value* before,
                        double seconds) {
  const rapidjson::Value& m = now["metrics"];
  Sums s = Flatten(m);
  Sums prev = before ? Flatten((*before)["metrics"]) : Sums{};
  double uptime = now["uptime_seconds"].GetDouble();
  if (!before) seconds = uptime;  // first view: averages since the mount
  auto rate = [&](const std::string& key) {
    double d = Get(s, key) - Get(prev, key);
    return seconds > 0 ? d / seconds : 0;
  };

  std::string out;
  out += Line("ossmount %s (pid %d), up %.0f s%s", now["mountpoint"].GetString(),
              now["pid"].GetInt(), uptime, before ? "" : "; rates are averages since the mount");
  if (now.HasMember("take_overs") && now["take_overs"].GetUint64() > 0) {
    out += Line("ossmount %s took this mount over (take-overs so far: %llu).",
                now["version"].GetString(),
                static_cast<unsigned long long>(now["take_overs"].GetUint64()));
  }
  if (now.HasMember("restarts") && now["restarts"].GetUint64() > 0) {
    out += Line(
        "The daemon was restarted %llu time(s) on this mount; the last %s. Pause: "
        "%lld ms, the longest %lld ms.",
        static_cast<unsigned long long>(now["restarts"].GetUint64()),
        now["last_restart_cause"].GetString(),
        static_cast<long long>(now["restart_pause_ms"].GetInt64()),
        static_cast<long long>(now["longest_restart_pause_ms"].GetInt64()));
  }
  out += "\nRequests       ok   errors  retries      p50 ms    p90 ms    p99 ms   received\n";
  std::map<std::string, const rapidjson::Value*> latency;
  for (const auto& h : m["histograms"].GetArray()) {
    if (std::string(h["name"].GetString()) == "ossmount_request_duration_seconds") {
      latency[h["labels"]["type"].GetString()] = &h;
    }
  }
  std::map<std::string, std::string> error_detail;
  for (const auto& [key, value] : s) {
    const std::string prefix = "ossmount_requests_total{type=";
    if (key.rfind(prefix, 0) != 0 || value == 0) continue;
    auto comma = key.find(",outcome=");
    std::string type = key.substr(prefix.size(), comma - prefix.size());
    std::string outcome = key.substr(comma + 9, key.size() - comma - 10);
    if (outcome == "ok") continue;
    auto& d = error_detail[type];
    d += (d.empty() ? "" : ", ") + outcome + " " + std::to_string(static_cast<uint64_t>(value));
  }
  for (const char* type : {"LIST", "HEAD", "GET", "GET-range", "other"}) {
    std::string t = type;
    double ok = Get(s, "ossmount_requests_total{type=" + t + ",outcome=ok}");
    double all = 0;
    for (const auto& [key, value] : s) {
      if (key.rfind("ossmount_requests_total{type=" + t + ",", 0) == 0) all += value;
    }
    double retries = Get(s, "ossmount_request_retries_total{type=" + t + "}");
    double bytes = Get(s, "ossmount_received_bytes_total{type=" + t + "}");
    if (all == 0 && retries == 0) continue;
    const rapidjson::Value* h = latency.count(t) ? latency[t] : nullptr;
    out += Line("  %-9s %7.0f %8.0f %8.0f %11s %9s %9s %10s", type, ok, all - ok, retries,
                h ? Ms((*h)["p50"].GetDouble()).c_str() : "-",
                h ? Ms((*h)["p90"].GetDouble()).c_str() : "-",
                h ? Ms((*h)["p99"].GetDouble()).c_str() : "-", FormatBytes(bytes).c_str());
    if (error_detail.count(t)) out += Line("            errors: %s", error_detail[t].c_str());
    // Retries of parts cut short that asked only for the rest (the bytes kept, summed per retry).
    double resumed = Get(s, "ossmount_request_resumed_bytes_total{type=" + t + "}");
    if (resumed > 0) {
      out +=
          Line("            resumed retries: %s not fetched again", FormatBytes(resumed).c_str());
    }
  }
  double received = 0, received_rate = 0;
  for (const auto& [key, value] : s) {
    if (key.rfind("ossmount_received_bytes_total", 0) == 0) {
      received += value;
      received_rate += rate(key);
    }
  }
  out += Line("\nThroughput     from the store %s/s (%s in all), to readers %s/s (%s in all)",
              FormatBytes(received_rate).c_str(), FormatBytes(received).c_str(),
              FormatBytes(rate("ossmount_read_bytes_total")).c_str(),
              FormatBytes(Get(s, "ossmount_read_bytes_total")).c_str());

  double mem_hit = Get(s, "ossmount_memory_cache_lookups_total{result=hit}") +
                   Get(s, "ossmount_memory_cache_lookups_total{result=shared}");
  double mem_miss = Get(s, "ossmount_memory_cache_lookups_total{result=miss}");
  double disk_hit = Get(s, "ossmount_disk_cache_hits_total");
  double disk_miss = Get(s, "ossmount_disk_cache_misses_total");
  bool disk = s.count("ossmount_disk_cache_hits_total") > 0;
  out += "\nCache hit ratios\n";
  out += Line("  memory (small files)   %s", Ratio(mem_hit, mem_hit + mem_miss).c_str());
  out += Line("  disk                   %s",
              disk ? Ratio(disk_hit, disk_hit + disk_miss).c_str() : "off (no --cache)");
  if (disk) {
    out += Line("  disk cache size        %s of %s",
                FormatBytes(Get(s, "ossmount_disk_cache_bytes")).c_str(),
                FormatBytes(Get(s, "ossmount_disk_cache_capacity_bytes")).c_str());
    const double space_evicted = Get(s, "ossmount_disk_cache_space_evictions_total");
    const double no_space = Get(s, "ossmount_disk_cache_no_space_total");
    if (space_evicted + no_space > 0) {
      out += Line("  for --cache-min-free   %.0f block(s) evicted, %.0f not cached", space_evicted,
                  no_space);
    }
  }
  out += Line(
      "  page-cache opens       %s",
      Ratio(Get(s, "ossmount_page_cache_opens_total"), Get(s, "ossmount_opens_total")).c_str());
  out += Line("  page-cache reopen hits %s",
              Ratio(Get(s, "ossmount_page_cache_reopens_total{result=hit}"),
                    Get(s, "ossmount_page_cache_reopens_total{result=hit}") +
                        Get(s, "ossmount_page_cache_reopens_total{result=miss}"))
                  .c_str());
  out += Line(
      "  passthrough opens      %s",
      Ratio(Get(s, "ossmount_passthrough_opens_total"), Get(s, "ossmount_opens_total")).c_str());

  out += "\nReadahead (large files)\n";
  out += Line("  parts                  %.0f ahead, %.0f on demand, %.0f from disk",
              Get(s, "ossmount_parts_total{source=readahead}"),
              Get(s, "ossmount_parts_total{source=demand}"),
              Get(s, "ossmount_parts_total{source=disk}"));
  out += Line("  readahead              %s/s (%s in all)",
              FormatBytes(rate("ossmount_readahead_bytes_total")).c_str(),
              FormatBytes(Get(s, "ossmount_readahead_bytes_total")).c_str());
  // Stalls say readahead is behind its readers (each widens the window); many of them with
  // every window at --max-readahead mean the connections are slower than the readers.
  out += Line(
      "  reads                  %.0f waited for a part fetched ahead (stalls), %.0f "
      "answered while their part arrived",
      Get(s, "ossmount_readahead_stalls_total"), Get(s, "ossmount_early_answers_total"));

  const double list_ahead = Get(s, "ossmount_list_ahead_distance");
  if (list_ahead > 0) {
    out += Line("\nList-ahead (tree walks, up to %.0f directories ahead)", list_ahead);
    out += Line(
        "  directories            %.0f listed, %.0f abandoned after %d pages, %.0f failed, %.0f "
        "dropped (the walk moved on)",
        Get(s, "ossmount_list_ahead_total{result=listed}"),
        Get(s, "ossmount_list_ahead_total{result=abandoned}"), fs::ListAhead::kMaxPages,
        Get(s, "ossmount_list_ahead_total{result=failed}"),
        Get(s, "ossmount_list_ahead_dropped_total"));
  } else {
    out += "\nList-ahead     off\n";
  }
  out += "\nLookup listings (directories listed because names in them were probed)\n";
  out += Line(
      "  directories            %.0f listed, %.0f abandoned (the lookups stopped), %.0f failed",
      Get(s, "ossmount_lookup_listings_total{result=listed}"),
      Get(s, "ossmount_lookup_listings_total{result=abandoned}"),
      Get(s, "ossmount_lookup_listings_total{result=failed}"));

  out +=
      Line("\nMemory in use  %s of %s", FormatBytes(Get(s, "ossmount_memory_used_bytes")).c_str(),
           FormatBytes(Get(s, "ossmount_memory_limit_bytes")).c_str());
  out += Line("Heap           %s allocated, %s free in the allocator's arenas",
              FormatBytes(Get(s, "ossmount_heap_allocated_bytes")).c_str(),
              FormatBytes(Get(s, "ossmount_heap_free_bytes")).c_str());
  out += Line("Metadata       %.0f inodes, %.0f directory listings of %.0f names in %s",
              Get(s, "ossmount_inodes"), Get(s, "ossmount_metadata_listings"),
              Get(s, "ossmount_metadata_listed_names"),
              FormatBytes(Get(s, "ossmount_metadata_listing_bytes")).c_str());
  out += Line("               %s of %s held (--max-metadata-memory), %.0f dropped for it",
              FormatBytes(Get(s, "ossmount_metadata_bytes")).c_str(),
              FormatBytes(Get(s, "ossmount_metadata_limit_bytes")).c_str(),
              Get(s, "ossmount_metadata_evictions_total"));
  out += Line("Open files     %.0f (%.0f opened in all)", Get(s, "ossmount_open_handles"),
              Get(s, "ossmount_opens_total"));
  const double files_written = Get(s, "ossmount_upload_files_total");
  const double write_failures = Get(s, "ossmount_upload_failures_total");
  const double writing = Get(s, "ossmount_upload_files_in_flight");
  if (files_written + write_failures + writing > 0) {
    out += Line("Uploads        %.0f file(s) being written, %.0f part(s) in flight, %s buffered",
                writing, Get(s, "ossmount_upload_parts_in_flight"),
                FormatBytes(Get(s, "ossmount_upload_buffered_bytes")).c_str());
    out += Line(
        "               %s/s now (%s in all), %.0f file(s) saved, %.0f failed (the close "
        "or fsync said so; the log says why), %.0f write(s) waited for memory, %.0f part "
        "upload(s) retried",
        FormatBytes(rate("ossmount_upload_bytes_total")).c_str(),
        FormatBytes(Get(s, "ossmount_upload_bytes_total")).c_str(), files_written, write_failures,
        Get(s, "ossmount_upload_writer_waits_total"),
        Get(s, "ossmount_request_retries_total{type=UploadPart}") +
            Get(s, "ossmount_request_retries_total{type=UploadPartCopy}"));
  }
  const double ring_queues = Get(s, "ossmount_fuse_ring_queues");
  if (ring_queues > 0) {
    out += Line("FUSE requests  through io_uring, %.0f queue(s) of %.0f entries (%.0f so far)",
                ring_queues, Get(s, "ossmount_fuse_ring_entries_per_queue"),
                Get(s, "ossmount_fuse_ring_requests_total"));
  } else {
    out += "FUSE requests  through /dev/fuse (io_uring off: the start-up log says why)\n";
  }
  return out;
}

namespace {

volatile sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

}  // namespace

int StatsCommand(const std::vector<std::string>& args) {
  CLI::App app("Show the live statistics of a mount", "ossmount stats");
  std::string mountpoint;
  bool once = false, json = false;
  double interval = 1.0;
  app.add_option("mountpoint", mountpoint, "The mount point of a running ossmount")->required();
  app.add_flag("--once", once, "Print once and exit (also when stdout is not a terminal)");
  app.add_flag("--json", json, "Print the daemon's JSON once and exit");
  app.add_option("--interval", interval, "Seconds between refreshes (default 1)")
      ->check(CLI::Range(0.1, 3600.0));
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto absolute = config::AbsoluteMountPoint(mountpoint);
  if (absolute.ok()) mountpoint = *absolute;
  auto fetch = [&]() -> std::optional<rapidjson::Document> {
    auto reply = control::CallMount(mountpoint, R"({"command":"stats"})", std::chrono::seconds(10));
    if (!reply.ok()) {
      std::fprintf(stderr, "ossmount stats: no ossmount daemon answers for %s: %s\n",
                   mountpoint.c_str(), reply.status().message().c_str());
      return std::nullopt;
    }
    rapidjson::Document doc;
    // Bounded like every JSON parse: the reply is the daemon's, but cheap to check.
    Status parsed = ParseBoundedJson(*reply, {control::kMaxControlRequestBytes}, &doc);
    auto ok = doc.IsObject() ? doc.FindMember("ok") : doc.MemberEnd();
    if (!parsed.ok() || !doc.IsObject() || ok == doc.MemberEnd() || !ok->value.IsBool()) {
      std::fprintf(stderr, "ossmount stats: the daemon for %s sent a malformed reply%s%s\n",
                   mountpoint.c_str(), parsed.ok() ? "" : ": ", parsed.message().c_str());
      return std::nullopt;
    }
    if (!ok->value.GetBool()) {
      auto error = doc.FindMember("error");
      std::fprintf(stderr, "ossmount stats: %s\n",
                   error != doc.MemberEnd() && error->value.IsString() ? error->value.GetString()
                                                                       : "failed");
      return std::nullopt;
    }
    if (json) std::printf("%s\n", reply->c_str());
    return doc;
  };

  auto first = fetch();
  if (!first) return 1;
  if (json) return 0;
  bool live = !once && isatty(STDOUT_FILENO);
  if (!live) {
    std::fputs(RenderStats(*first, nullptr, 0).c_str(), stdout);
    return 0;
  }
  signal(SIGINT, OnInterrupt);
  signal(SIGTERM, OnInterrupt);
  rapidjson::Document before = std::move(*first);
  auto before_time = std::chrono::steady_clock::now();
  std::printf("\033[H\033[2J%s", RenderStats(before, nullptr, 0).c_str());
  std::fflush(stdout);
  while (!g_interrupted) {
    auto deadline = before_time + std::chrono::duration<double>(interval);
    while (!g_interrupted && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (g_interrupted) break;
    auto now = fetch();
    if (!now) return 1;
    auto now_time = std::chrono::steady_clock::now();
    double dt = std::chrono::duration<double>(now_time - before_time).count();
    std::printf("\033[H\033[2J%s\n(every %.1f s; Ctrl-C to stop)\n",
                RenderStats(*now, &before, dt).c_str(), interval);
    std::fflush(stdout);
    before = std::move(*now);
    before_time = now_time;
  }
  return 0;
}

}  // namespace ossmount::daemon
