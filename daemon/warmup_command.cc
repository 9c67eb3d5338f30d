#include "warmup_command.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "common/bounded_json.h"
#include "common/format_bytes.h"
#include "common/read_file.h"
#include "control/mount_call.h"
#include "ossmount/control_ioctl.h"
#include "ossmount/status.h"

namespace ossmount::daemon {

namespace {

using namespace std::chrono_literals;

constexpr auto kCallTimeout = 30s;

const char* kUsage =
    "usage: ossmount warmup [--concurrency N] [--detach] PATH...\n"
    "       ossmount warmup --status MOUNTPOINT\n"
    "       ossmount warmup --cancel MOUNTPOINT\n"
    "Fetches every object under the PATHs (inside one ossmount mount) into the mount's disk\n"
    "cache (--cache), or into memory without one, within the cache or memory budget.\n"
    "  --concurrency N  GETs in flight for this warm-up (default: the mount's\n"
    "                   --warmup-concurrency, 128)\n"
    "  --detach         start and return at once; see progress with --status\n";

// mountinfo escapes ' ', '\t', '\n' and '\\' as \ooo.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      bool ok = true;
      for (size_t k = 1; k <= 3; ++k) {
        char c = s[i + k];
        if (c < '0' || c > '7') ok = false;
        v = v * 8 + (c - '0');
      }
      if (ok) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::string ReadMountinfo() { return ReadFileOrEmpty("/proc/self/mountinfo"); }

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return "";
  return buf;
}

std::string JsonString(const std::string& s) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return std::string(buf.GetString(), buf.GetSize());
}

// Sends one request; the parsed reply when it says ok, else the error printed.
bool CallDaemon(const std::string& mountpoint, const std::string& request,
                rapidjson::Document& reply) {
  auto text = control::CallMount(mountpoint, request, kCallTimeout);
  if (!text.ok()) {
    std::fprintf(stderr, "ossmount warmup: %s\n", text.status().message().c_str());
    return false;
  }
  // Bounded like every JSON parse: the reply is the daemon's, but cheap to check.
  Status parsed = ParseBoundedJson(*text, {control::kMaxControlRequestBytes}, &reply);
  if (!parsed.ok() || !reply.IsObject()) {
    std::fprintf(stderr, "ossmount warmup: the daemon sent a malformed reply%s%s\n",
                 parsed.ok() ? "" : ": ", parsed.message().c_str());
    return false;
  }
  auto ok = reply.FindMember("ok");
  if (ok == reply.MemberEnd() || !ok->value.IsBool() || !ok->value.GetBool()) {
    auto err = reply.FindMember("error");
    std::fprintf(stderr, "ossmount warmup: %s\n",
                 err != reply.MemberEnd() && err->value.IsString() ? err->value.GetString()
                                                                   : "the daemon refused");
    return false;
  }
  return true;
}

uint64_t U64(const rapidjson::Value& v, const char* name) {
  auto it = v.FindMember(name);
  return it != v.MemberEnd() && it->value.IsUint64() ? it->value.GetUint64() : 0;
}
std::string Str(const rapidjson::Value& v, const char* name) {
  auto it = v.FindMember(name);
  return it != v.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}
double Dbl(const rapidjson::Value& v, const char* name) {
  auto it = v.FindMember(name);
  return it != v.MemberEnd() && it->value.IsNumber() ? it->value.GetDouble() : 0;
}

std::string Duration(double s) {
  if (s < 0 || s > 1e7) return "?";
  auto t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  }
  return buf;
}

// One line about a job: files, bytes, rate, ETA.
std::string Progress(const rapidjson::Value& job, bool bar) {
  const uint64_t files_done = U64(job, "files_done"), files_total = U64(job, "files_total");
  const uint64_t bytes_done = U64(job, "bytes_done"), bytes_total = U64(job, "bytes_total");
  const double seconds = Dbl(job, "seconds");
  const bool listed = job.HasMember("listing_done") && job["listing_done"].GetBool();
  const double rate = seconds > 0 ? bytes_done / seconds : 0;
  std::string eta = "?";
  if (listed && rate > 0) eta = Duration((bytes_total - std::min(bytes_done, bytes_total)) / rate);
  std::string line;
  if (bar) {
    const int width = 24;
    const double frac =
        bytes_total > 0 ? std::min(1.0, static_cast<double>(bytes_done) / bytes_total) : 0;
    const int full = static_cast<int>(frac * width);
    line.reserve(width + 3);
    line.push_back('[');
    line.append(static_cast<size_t>(full), '#');
    line.append(static_cast<size_t>(width - full), '-');
    line.append("] ");
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "%llu/%llu%s files  %s/%s  %s/s  ETA %s",
                static_cast<unsigned long long>(files_done),
                static_cast<unsigned long long>(files_total), listed ? "" : "+",
                FormatBytes(static_cast<double>(bytes_done)).c_str(),
                FormatBytes(static_cast<double>(bytes_total)).c_str(), FormatBytes(rate).c_str(),
                eta.c_str());
  return line + buf;
}

const rapidjson::Value* FindJob(const rapidjson::Document& status, uint64_t id) {
  auto jobs = status.FindMember("jobs");
  if (jobs == status.MemberEnd() || !jobs->value.IsArray()) return nullptr;
  for (const auto& j : jobs->value.GetArray()) {
    if (U64(j, "id") == id) return &j;
  }
  return nullptr;
}

bool Running(const std::string& state) { return state == "listing" || state == "running"; }

int ExitFor(const rapidjson::Value& job) {
  const std::string state = Str(job, "state");
  const std::string message = Str(job, "message");
  const uint64_t failed = U64(job, "files_failed");
  std::fprintf(stderr,
               "warm-up %llu %s: %llu file(s) fetched, %llu already cached, %llu failed, "
               "%llu skipped, %s in %s\n",
               static_cast<unsigned long long>(U64(job, "id")), state.c_str(),
               static_cast<unsigned long long>(U64(job, "files_fetched")),
               static_cast<unsigned long long>(U64(job, "files_cached")),
               static_cast<unsigned long long>(failed),
               static_cast<unsigned long long>(U64(job, "files_skipped")),
               FormatBytes(static_cast<double>(U64(job, "bytes_done"))).c_str(),
               Duration(Dbl(job, "seconds")).c_str());
  if (!message.empty()) std::fprintf(stderr, "  %s\n", message.c_str());
  if (state == "done") return 0;
  if (state == "budget-full") return 3;
  return 1;
}

int Follow(const std::string& mountpoint, uint64_t id) {
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  auto last_line = std::chrono::steady_clock::time_point();
  while (true) {
    rapidjson::Document status;
    if (!CallDaemon(mountpoint, R"({"command":"warmup-status"})", status)) return 1;
    const rapidjson::Value* job = FindJob(status, id);
    if (!job) {
      std::fprintf(stderr, "ossmount warmup: job %llu is no longer known to the daemon\n",
                   static_cast<unsigned long long>(id));
      return 1;
    }
    const bool running = Running(Str(*job, "state"));
    if (tty) {
      std::fprintf(stderr, "\r\033[K%s", Progress(*job, true).c_str());
      if (!running) std::fprintf(stderr, "\n");
    } else if (!running || std::chrono::steady_clock::now() - last_line >= 2s) {
      std::fprintf(stderr, "warm-up %llu: %s\n", static_cast<unsigned long long>(id),
                   Progress(*job, false).c_str());
      last_line = std::chrono::steady_clock::now();
    }
    std::fflush(stderr);
    if (!running) return ExitFor(*job);
    std::this_thread::sleep_for(tty ? 250ms : 500ms);
  }
}

int PrintStatus(const std::string& mountpoint) {
  rapidjson::Document status;
  if (!CallDaemon(mountpoint, R"({"command":"warmup-status"})", status)) return 1;
  auto jobs = status.FindMember("jobs");
  if (jobs == status.MemberEnd() || !jobs->value.IsArray() || jobs->value.Empty()) {
    std::printf("no warm-up on %s\n", mountpoint.c_str());
  } else {
    for (const auto& j : jobs->value.GetArray()) {
      std::string paths;
      if (j.HasMember("paths") && j["paths"].IsArray()) {
        for (const auto& p : j["paths"].GetArray()) {
          paths += (paths.empty() ? "/" : " /") + std::string(p.GetString());
        }
      }
      std::printf("warm-up %llu %-11s %s  (%s)\n", static_cast<unsigned long long>(U64(j, "id")),
                  Str(j, "state").c_str(), Progress(j, false).c_str(), paths.c_str());
      if (!Str(j, "message").empty()) std::printf("    %s\n", Str(j, "message").c_str());
    }
  }
  if (status.HasMember("hints") && status["hints"].IsObject()) {
    const auto& h = status["hints"];
    auto print = [](const char* label, const rapidjson::Value& v) {
      // Files the kernel's page cache held were not fetched: said only when there are some.
      const uint64_t page_cached = U64(v, "page_cached");
      const std::string held =
          page_cached > 0 ? ", " + std::to_string(page_cached) + " held by the page cache" : "";
      std::printf("%s%llu file(s) in the list, %llu read, %llu prefetched%s, %llu ahead (%s)\n",
                  label, static_cast<unsigned long long>(U64(v, "files")),
                  static_cast<unsigned long long>(U64(v, "read")),
                  static_cast<unsigned long long>(U64(v, "fetched")), held.c_str(),
                  static_cast<unsigned long long>(U64(v, "outstanding_files")),
                  FormatBytes(static_cast<double>(U64(v, "outstanding_bytes"))).c_str());
    };
    const bool several =
        h.HasMember("senders") && h["senders"].IsArray() && h["senders"].GetArray().Size() > 1;
    if (U64(h, "files") > 0) print(several ? "hints, all lists: " : "hints: ", h);
    if (several) {
      for (const auto& l : h["senders"].GetArray()) {
        const std::string name = Str(l, "name");  // a sender the daemon cannot see
        const std::string label =
            "    from " +
            (name.empty() ? "pid " + std::to_string(U64(l, "pid")) : "'" + name + "'") + ": ";
        print(label.c_str(), l);
      }
    }
  }
  return 0;
}

}  // namespace

std::string RelativeToMount(const std::string& absolute_path, const std::string& mountpoint) {
  if (absolute_path.size() <= mountpoint.size()) return "";
  return absolute_path.substr(mountpoint.size() + (mountpoint == "/" ? 0 : 1));
}

std::string FindOssmountMount(const std::string& absolute_path, const std::string& mountinfo_text) {
  std::string best;
  std::istringstream lines(mountinfo_text);
  std::string line;
  while (std::getline(lines, line)) {
    // id parent major:minor root mountpoint options [optional...] - fstype source superopts
    std::istringstream fields(line);
    std::vector<std::string> f;
    std::string w;
    while (fields >> w) f.push_back(w);
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        dash = i;
        break;
      }
    }
    if (f.size() < 5 || dash == 0 || dash + 2 >= f.size()) continue;
    const std::string fstype = f[dash + 1];
    const std::string source = Unescape(f[dash + 2]);
    if (fstype.rfind("fuse", 0) != 0 || source.rfind("ossmount:", 0) != 0) continue;
    const std::string mp = Unescape(f[4]);
    const bool inside =
        absolute_path == mp || mp == "/" ||
        (absolute_path.size() > mp.size() && absolute_path.compare(0, mp.size(), mp) == 0 &&
         absolute_path[mp.size()] == '/');
    if (inside && mp.size() > best.size()) best = mp;
  }
  return best;
}

int WarmupCommand(const std::vector<std::string>& args) {
  int concurrency = 0;
  bool detach = false;
  std::string status_of, cancel_of;
  std::vector<std::string> paths;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* name) -> const std::string* {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "ossmount warmup: %s needs a value\n%s", name, kUsage);
        return nullptr;
      }
      return &args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::printf("%s", kUsage);
      return 0;
    } else if (a == "--detach") {
      detach = true;
    } else if (a == "--concurrency") {
      const std::string* v = value("--concurrency");
      if (!v) return 2;
      char* end = nullptr;
      long n = std::strtol(v->c_str(), &end, 10);
      if (v->empty() || *end != '\0' || n < 1 || n > 4096) {
        std::fprintf(stderr, "ossmount warmup: --concurrency: '%s' is not between 1 and 4096\n",
                     v->c_str());
        return 2;
      }
      concurrency = static_cast<int>(n);
    } else if (a == "--status" || a == "--cancel") {
      const std::string* v = value(a.c_str());
      if (!v) return 2;
      (a == "--status" ? status_of : cancel_of) = *v;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "ossmount warmup: unknown option '%s'\n%s", a.c_str(), kUsage);
      return 2;
    } else {
      paths.push_back(a);
    }
  }
  if (!status_of.empty() || !cancel_of.empty()) {
    if (!paths.empty() || (!status_of.empty() && !cancel_of.empty())) {
      std::fprintf(stderr, "ossmount warmup: --status/--cancel take one MOUNTPOINT only\n");
      return 2;
    }
    const std::string given = status_of.empty() ? cancel_of : status_of;
    const std::string real = RealPath(given);
    const std::string mp = real.empty() ? "" : FindOssmountMount(real, ReadMountinfo());
    if (mp.empty()) {
      std::fprintf(stderr, "ossmount warmup: %s is not in an ossmount mount\n", given.c_str());
      return 1;
    }
    if (!status_of.empty()) return PrintStatus(mp);
    rapidjson::Document reply;
    if (!CallDaemon(mp, R"({"command":"warmup-cancel"})", reply)) return 1;
    std::printf("cancelled %llu warm-up(s) on %s\n",
                static_cast<unsigned long long>(U64(reply, "cancelled")), mp.c_str());
    return 0;
  }
  if (paths.empty()) {
    std::fprintf(stderr, "ossmount warmup: give at least one PATH\n%s", kUsage);
    return 2;
  }
  const std::string mountinfo = ReadMountinfo();
  std::string mountpoint;
  std::string request = R"({"command":"warmup","paths":[)";
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string real = RealPath(paths[i]);
    if (real.empty()) {
      std::fprintf(stderr, "ossmount warmup: %s: no such file or directory\n", paths[i].c_str());
      return 1;
    }
    const std::string mp = FindOssmountMount(real, mountinfo);
    if (mp.empty()) {
      std::fprintf(stderr, "ossmount warmup: %s is not in an ossmount mount\n", paths[i].c_str());
      return 1;
    }
    if (!mountpoint.empty() && mp != mountpoint) {
      std::fprintf(stderr,
                   "ossmount warmup: %s and %s are in different mounts; run one warmup per "
                   "mount\n",
                   paths[0].c_str(), paths[i].c_str());
      return 2;
    }
    mountpoint = mp;
    if (i > 0) request.push_back(',');
    request += JsonString(RelativeToMount(real, mp));
  }
  request += "]";
  if (concurrency > 0) request += ",\"concurrency\":" + std::to_string(concurrency);
  request += "}";
  rapidjson::Document reply;
  if (!CallDaemon(mountpoint, request, reply)) return 1;
  const uint64_t id = U64(reply, "job");
  if (detach) {
    std::printf("warm-up %llu started on %s; `ossmount warmup --status %s` reports on it\n",
                static_cast<unsigned long long>(id), mountpoint.c_str(), mountpoint.c_str());
    return 0;
  }
  return Follow(mountpoint, id);
}

}  // namespace ossmount::daemon
