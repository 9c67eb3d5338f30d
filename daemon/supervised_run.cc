#include "supervised_run.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "common/metrics.h"
#include "handover.h"

namespace ossmount::daemon {
namespace {

// OSSMOUNT_SUPERVISED holds the numbers, comma-separated: fd, report fd, restarts, died_ns,
// longest pause (ms), resume (0/1), take-overs, verified (0/1).
constexpr const char* kEnvRun = "OSSMOUNT_SUPERVISED";
constexpr const char* kEnvStateDir = "OSSMOUNT_STATE_DIR";
constexpr const char* kEnvLastCause = "OSSMOUNT_LAST_CAUSE";

}  // namespace

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::vector<std::string> SupervisedRunEnvironment(const SupervisedRun& run) {
  return {std::string(kEnvRun) + "=" + std::to_string(run.device_fd) + "," +
              std::to_string(run.report_fd) + "," + std::to_string(run.restarts) + "," +
              std::to_string(run.died_ns) + "," + std::to_string(run.longest_pause_ms) + "," +
              (run.resume ? "1" : "0") + "," + std::to_string(run.take_overs) + "," +
              (run.verified ? "1" : "0"),
          std::string(kEnvStateDir) + "=" + run.state_dir,
          std::string(kEnvLastCause) + "=" + run.last_cause};
}

bool IsSupervisedRunEntry(const std::string& entry) {
  for (const char* name : {kEnvRun, kEnvStateDir, kEnvLastCause}) {
    const std::string prefix = std::string(name) + "=";
    if (entry.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::optional<SupervisedRun> SupervisedRunFromEnvironment() {
  const char* run = std::getenv(kEnvRun);
  const char* dir = std::getenv(kEnvStateDir);
  if (run == nullptr || dir == nullptr) return std::nullopt;
  SupervisedRun r;
  long long fd = -1, report = -1, died = 0, longest = 0;
  unsigned long long restarts = 0, take_overs = 0;
  int resume = 0, verified = 0;
  if (std::sscanf(run, "%lld,%lld,%llu,%lld,%lld,%d,%llu,%d", &fd, &report, &restarts, &died,
                  &longest, &resume, &take_overs, &verified) != 8 ||
      fd < 0 || report < 0) {
    return std::nullopt;
  }
  r.resume = resume != 0;
  r.verified = verified != 0;
  r.take_overs = take_overs;
  r.device_fd = static_cast<int>(fd);
  r.report_fd = static_cast<int>(report);
  r.restarts = restarts;
  r.died_ns = died;
  r.longest_pause_ms = longest;
  r.state_dir = dir;
  if (const char* cause = std::getenv(kEnvLastCause)) r.last_cause = cause;
  // Not for the children this process may start (a shell in a test, say).
  unsetenv(kEnvRun);
  unsetenv(kEnvStateDir);
  unsetenv(kEnvLastCause);
  return r;
}

void RestartHistory::Served(int64_t died_ns) {
  if (died_ns == 0) return;
  const int64_t pause = (MonotonicNs() - died_ns) / 1000000;
  pause_ms.store(pause);
  longest_pause_ms = std::max(longest_pause_ms, pause);
}

std::shared_ptr<RestartHistory> RegisterRestartMetrics(const SupervisedRun* run) {
  auto history = std::make_shared<RestartHistory>();
  if (run != nullptr) {
    history->restarts = run->restarts;
    history->take_overs = run->take_overs;
    history->last_cause = run->last_cause;
    history->longest_pause_ms = run->longest_pause_ms;
  }
  auto& r = metrics::Registry::Global();
  r.SetCallbackCounter("ossmount_daemon_restarts_total",
                       "Daemon processes the supervisor started again on this mount after one "
                       "died.",
                       {}, [history] { return static_cast<double>(history->restarts); });
  r.SetCallbackCounter("ossmount_daemon_take_overs_total",
                       "Supervisors that took this mount over from the one before (upgrades "
                       "with --take-over).",
                       {}, [history] { return static_cast<double>(history->take_overs); });
  r.SetCallbackGauge("ossmount_daemon_restart_pause_seconds",
                     "From the death of the daemon before this one until this one served the "
                     "mount (0 when there was none).",
                     {},
                     [history] { return std::max<int64_t>(0, history->pause_ms.load()) / 1e3; });
  r.SetCallbackGauge("ossmount_daemon_longest_restart_pause_seconds",
                     "The longest pause any restart of this mount's daemon caused.", {}, [history] {
                       return std::max(history->longest_pause_ms, history->pause_ms.load()) / 1e3;
                     });
  return history;
}

std::string StateDirForMountpoint(const std::string& absolute_mountpoint) {
  return BesideControlSocket(absolute_mountpoint, ".state");
}

}  // namespace ossmount::daemon
