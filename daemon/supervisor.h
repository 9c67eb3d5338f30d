// The supervisor: ossmount's own process when supervision is on (the default; --no-supervise
// turns it off). It mounts /dev/fuse, keeps the descriptor, and runs the daemon proper as its
// one child: the same binary, told by its environment (SupervisedRun) to serve the inherited
// descriptor. When the child dies (a signal, an abort, an OOM kill, an exit other than a clean
// stop) the supervisor starts another on the same connection, which resumes it: the kernel
// keeps the mount and its waiting callers while any process holds the descriptor, and the new
// child replays the recorded INIT, restores the recorded nodes and handles, and has the kernel
// resend what the dead one left unanswered. Children that keep dying are started after a
// growing delay; past kMaxQuickDeaths in a row the supervisor unmounts and exits 1.
//
// Upgrades: `ossmount ... --take-over` starts a supervisor that asks the one serving the mount
// for its connection (daemon/handover.h) instead of mounting; the old one stops its daemon once
// the files open for writing are closed, hands the descriptor over, and exits 0 once the new
// one's daemon serves.
//
// Signals: SIGTERM, SIGINT and SIGHUP stop the child (which drains) and then the supervisor;
// SIGUSR2 is passed on (debug logging). The child gets SIGTERM if the supervisor dies.
// Readiness (the background parent's verdict, systemd's READY=1) is the first child's.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "background.h"
#include "config/mount_config.h"

namespace ossmount::daemon {

// Deaths in a row (each child served less than kSteadyRun) before the supervisor gives up;
// the first kImmediateRestarts of them are restarted at once, later ones after 100 ms doubling
// up to 5 s.
constexpr int kMaxQuickDeaths = 10;
constexpr int kImmediateRestarts = 5;
constexpr std::chrono::seconds kSteadyRun{10};

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
  int64_t died_ns = 0;           // CLOCK_MONOTONIC when it did
  int64_t longest_pause_ms = 0;  // the longest pause a restart caused before this one
};

// The restarts before this daemon process, for `ossmount stats` and the metrics
// (RegisterRestartMetrics). Thread-safety: the pause is set once, read from any thread.
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

// The supervised child's run, from its environment; nullopt in a process nobody supervises.
std::optional<SupervisedRun> SupervisedRunFromEnvironment();

// The history of `run` (null: an unsupervised daemon), with its metrics registered:
// ossmount_daemon_restarts_total, ossmount_daemon_take_overs_total,
// ossmount_daemon_restart_pause_seconds (this restart's) and
// ossmount_daemon_longest_restart_pause_seconds.
std::shared_ptr<RestartHistory> RegisterRestartMetrics(const SupervisedRun* run);

// The directory of `mountpoint`'s records (beside its control socket).
std::string StateDirForMountpoint(const std::string& absolute_mountpoint);

// Blocks the signals the supervisor takes through a signalfd, in this thread and in every
// thread created after (logging's), and returns the mask before, which children get back.
// Call before any thread is created.
sigset_t BlockSupervisorSignals();

// Mounts, runs children until a clean stop, unmounts. Returns the exit status: 0 after a
// clean stop; 1 when the first child could not start (its reason went to `reporter`) or
// children kept dying. `args`: the command line the children get (the daemon's own).
// REQUIRES: BlockSupervisorSignals() before any thread, logging set up, and
// config.daemon.mountpoint absolute and checked.
int RunSupervisor(const config::MountConfig& config, StartupReporter& reporter,
                  const std::vector<std::string>& args, const sigset_t& child_mask);

}  // namespace ossmount::daemon
