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

// The ossmount mount point containing `absolute_path` (the longest one; a bind mount of one
// of its directories counts), or "" if none. Exposed for tests.
std::string FindOssmountMount(const std::string& absolute_path, const std::string& mountinfo_text);

// `absolute_path` relative to `mountpoint` (which contains it), "" for the mount point
// itself: how a request names it (the daemon takes it from the directory the request comes
// through). Exposed for tests.
std::string RelativeToMount(const std::string& absolute_path, const std::string& mountpoint);

}  // namespace ossmount::daemon
