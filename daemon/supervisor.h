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
//
// Under systemd the supervisor keeps the descriptor in systemd's store too
// (daemon/systemd_store.h): a SIGTERM that is half of `systemctl restart` stops the daemon as
// for a hand-over and leaves the mount to the unit's next start, and a unit whose processes
// were all killed resumes its mount when Restart= starts it again.
#pragma once

#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include "background.h"
#include "common/unique_fd.h"
#include "config/mount_config.h"
#include "supervised_run.h"

namespace ossmount::daemon {

// Deaths in a row (each child served less than kSteadyRun) before the supervisor gives up;
// the first kImmediateRestarts of them are restarted at once, later ones after 100 ms doubling
// up to 5 s.
constexpr int kMaxQuickDeaths = 10;
constexpr int kImmediateRestarts = 5;
constexpr std::chrono::seconds kSteadyRun{10};

// Blocks the signals the supervisor takes through a signalfd, in this thread and in every
// thread created after (logging's), and returns the mask before, which children get back.
// Call before any thread is created.
sigset_t BlockSupervisorSignals();

// Mounts, runs children until a clean stop, unmounts. Returns the exit status: 0 after a
// clean stop; 1 when the first child could not start (its reason went to `reporter`) or
// children kept dying. `args`: the command line the children get (the daemon's own).
// REQUIRES: BlockSupervisorSignals() before any thread, logging set up, and
// config.daemon.mountpoint absolute and checked.
// `stored_mount`: the descriptor of this systemd unit's last mount (systemd_store.h), which
// the supervisor then resumes instead of mounting; invalid for none.
int RunSupervisor(const config::MountConfig& config, StartupReporter& reporter,
                  const std::vector<std::string>& args, const sigset_t& child_mask,
                  UniqueFd stored_mount);

}  // namespace ossmount::daemon
