// The kernel's switch for FUSE over io_uring: the fuse module's parameter enable_uring
// (Linux 6.14+ built with CONFIG_FUSE_IO_URING; off by default). The kernel reads it when
// it sends a new connection's INIT, so it must be on before the mount is made; it then
// applies to every FUSE mount made while it is on whose daemon asks for the rings (libfuse
// 3.14's do not).
//
// Thread-safety: free functions on a file; no state.
#pragma once

#include <string>

#include "ossmount/status.h"

namespace ossmount::fuse {

inline constexpr const char* kUringSwitchPath = "/sys/module/fuse/parameters/enable_uring";

enum class UringSwitch { kAbsent, kOff, kOn };

// Reads the switch at `path` ('Y'/'1' on, 'N'/'0' off); kAbsent when there is no such file
// (a kernel without the feature, or the fuse module not loaded yet: LoadFuseModule).
UringSwitch ReadUringSwitch(const std::string& path);

// Opens and closes /dev/fuse, which loads the fuse module if it is one and is not loaded
// yet, so that its parameters exist. Errors are left to the mount itself.
void LoadFuseModule();

// Why the rings cannot be used with the switch in `state`, for the log and the errors of
// --fuse-io-uring on; "" when it is on.
std::string UringSwitchProblem(UringSwitch state, const std::string& path);

// Turns the switch on if it is off (writing 'Y' to `path`, which takes root); OK when it is
// on afterwards. The error says what to do.
Status TurnOnUringSwitch(const std::string& path);

}  // namespace ossmount::fuse
