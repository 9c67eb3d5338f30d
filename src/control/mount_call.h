// Clients of a running mount's daemon: the ioctl channel through the mount
// (ossmount/control_ioctl.h) and, for a daemon that predates it, the control socket.
//
// Thread-safety: stateless.
#pragma once

#include <chrono>
#include <string>

#include "ossmount/status.h"

namespace ossmount::control {

// Client side: sends `request_json` through an ioctl on `directory` (a directory of the
// mount) and returns the answer without its newline. kNotSupported when the daemon has no
// such channel (ENOTTY: an older daemon, or not an ossmount mount).
Result<std::string> CallThroughMount(const std::string& directory, const std::string& request_json);

// What `ossmount stats`, `ossmount warmup` and the Python module do: the mount's ioctl
// channel on `mountpoint` (as this process sees it), and the control socket of that mount
// point when the daemon predates the channel. `timeout` bounds the socket call only; an
// ioctl waits like any other request to the mount.
Result<std::string> CallMount(const std::string& mountpoint, const std::string& request_json,
                              std::chrono::milliseconds timeout);

}  // namespace ossmount::control
