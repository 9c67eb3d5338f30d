// What a supervised daemon (the supervisor's child, daemon/supervisor.h) is told by its
// supervisor, through its environment, and what it makes of it: whether to resume the
// connection, and the restart history `ossmount stats` and the metrics show.
//
// Thread-safety: RestartHistory's pause is set once and read from any thread; the rest are
// values.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ossmount::daemon {

// What a supervised child learns from its environment.
struct SupervisedRun {
  int device_fd = -1;       // the mounted /dev/fuse descriptor
  int report_fd = -1;       // where its start is reported (StartupReporter's protocol)
  std::string state_dir;    // the records that let the next child resume (nodes, handles, INIT)
  uint64_t restarts = 0;    // children the supervisors of this mount restarted after a death
  uint64_t take_overs = 0;  // supervisors that took this mount over from the one before
  bool resume = false;      // another daemon served the connection before this one
  // A daemon of this supervisor, with these options, served already: the bucket answered
  // them, so a restart need not ask again (no start-up probe or root listing).
  bool verified = false;
  std::string last_cause;        // how the child before ended ("killed by signal 9", ...)
  int64_t died_ns = 0;           // CLOCK_MONOTONIC when it did (0: none did)
  int64_t longest_pause_ms = 0;  // the longest pause a restart caused before this one
};

// The environment entries ("NAME=value") that tell a child `run` (report_fd included).
std::vector<std::string> SupervisedRunEnvironment(const SupervisedRun& run);
// Whether `entry` ("NAME=value") is one of those, which a child must not inherit otherwise.
bool IsSupervisedRunEntry(const std::string& entry);
// The supervised child's run, from its environment (whose entries it then removes, so that
// processes it starts do not inherit them); nullopt in a process nobody supervises.
std::optional<SupervisedRun> SupervisedRunFromEnvironment();

// CLOCK_MONOTONIC in nanoseconds: comparable between the supervisor and its children.
int64_t MonotonicNs();

// The restarts before this daemon process, for `ossmount stats` and the metrics.
struct RestartHistory {
  uint64_t restarts = 0;              // 0: the first daemon of its mount, or unsupervised
  uint64_t take_overs = 0;            // supervisors that took the mount over (upgrades)
  std::string last_cause;             // how the daemon before this one ended
  int64_t longest_pause_ms = 0;       // over every restart so far, this one's once it serves
  std::atomic<int64_t> pause_ms{-1};  // this restart's: from that death until it serves

  // This daemon serves: its pause is measured from the death before (`died_ns`, 0 when this
  // is the mount's first daemon).
  void Served(int64_t died_ns);
};

// The history of `run` (null: an unsupervised daemon), with its metrics registered:
// ossmount_daemon_restarts_total, ossmount_daemon_take_overs_total,
// ossmount_daemon_restart_pause_seconds (this restart's) and
// ossmount_daemon_longest_restart_pause_seconds.
std::shared_ptr<RestartHistory> RegisterRestartMetrics(const SupervisedRun* run);

// The directory of `mountpoint`'s records (beside its control socket).
std::string StateDirForMountpoint(const std::string& absolute_mountpoint);

}  // namespace ossmount::daemon
