// `ossmount warmup`: asks the daemon of a running mount to fetch everything under some paths
// into its disk cache (or memory, without --cache), and shows the progress.
//
//   ossmount warmup [--concurrency N] [--detach] PATH...   start (PATHs inside one mount)
//   ossmount warmup --status MOUNTPOINT                     report on the mount's warm-ups
//   ossmount warmup --cancel MOUNTPOINT                     stop them
//
// The mount is found from /proc/self/mountinfo (the ossmount mount containing the PATHs, also
// a bind mount of one of its directories, as in a container), its daemon through an ioctl
// on the mount point (control::CallMount; the control socket for an older daemon). Without
// --detach the command follows its job to the end: a progress bar (files, bytes, rate,
// ETA) when stderr is a terminal, plain progress lines otherwise.
//
// Exit status: 0 done; 3 stopped at the cache (or memory) budget, with the reason printed;
// 1 failed, cancelled, or no daemon answers; 2 bad command line.
#pragma once

#include <string>
#include <vector>

namespace ossmount::daemon {

int WarmupCommand(const std::vector<std::string>& args);

// The control commands behind it are registered by the mount session (mount_session.cc):
// "warmup" {"paths":[...], "concurrency":N} -> {"job":ID}; "warmup-status" -> the
// prefetcher's status; "warmup-cancel" -> {"cancelled":N}; "hints" {"paths":[...]} ->
// {"files":N}.

// An ossmount mount as this process sees it.
struct OssmountMount {
  std::string mountpoint;  // "" when there is none
  // The directory of the daemon's tree mounted there: "/" for the daemon's own mount,
  // "/train" for a bind mount of its directory train (mountinfo's fourth field).
  std::string root = "/";

  // `absolute_path` (inside mountpoint) as the daemon names it: relative to its root, "" for
  // the root itself.
  std::string DaemonPath(const std::string& absolute_path) const;
};

// The ossmount mount containing `absolute_path` (the longest mount point), or one with an
// empty mountpoint if none. Exposed for tests.
OssmountMount FindOssmountMount(const std::string& absolute_path,
                                const std::string& mountinfo_text);

}  // namespace ossmount::daemon
