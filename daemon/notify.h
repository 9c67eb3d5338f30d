// The systemd service notification protocol (sd_notify(3)), by hand: one datagram per state
// change to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or '@' + an abstract name).
// Without NOTIFY_SOCKET every call does nothing, so the daemon behaves the same outside
// systemd. ossmount sends READY=1 once the mount answers (a stat of the mount point went
// through the FUSE loop) and STOPPING=1 when it starts to unmount (ossmount@.service is
// Type=notify).
//
// Thread-safety: the functions may be called from any thread.
#pragma once

#include <string>

#include "ossmount/status.h"

namespace ossmount::daemon {

// Sends `state` (e.g. "READY=1\nSTATUS=serving") to `socket_path` ("" = nothing), with
// descriptor `fd` attached when it is >= 0 (SCM_RIGHTS, as "FDSTORE=1" wants). Errors say
// what failed; callers log them and carry on (a lost notification makes systemd time the
// start out, which is the right outcome for a daemon that cannot talk to it).
Status NotifySocket(const std::string& socket_path, const std::string& state, int fd = -1);

// NotifySocket to $NOTIFY_SOCKET; OK and nothing sent when it is unset.
Status NotifySystemd(const std::string& state, int fd = -1);

}  // namespace ossmount::daemon
