// The kernel's readahead for one FUSE mount.
//
// The kernel reads a FUSE file ahead of the reader by the mount's bdi readahead
// (/sys/class/bdi/MAJOR:MINOR/read_ahead_kb), which the FUSE INIT handshake caps at 128 KiB.
// With that cap a sequential reader sends the daemon one 128 KiB request at a time and
// waits for each, which costs a round trip per 128 KiB; a larger value lets the kernel keep
// several requests of up to 1 MiB (max_pages) in flight. Raising it is allowed after INIT,
// through sysfs, by root only.
#pragma once

#include <cstdint>
#include <string>

#include "ossmount/status.h"

namespace ossmount::fuse {

// Sets the readahead of the filesystem mounted on `mountpoint` (which must already answer:
// the INIT handshake would overwrite an earlier value) to `bytes`, rounded down to KiB.
// Fails (and changes nothing) when the mount's bdi is not writable, e.g. when not root.
Status SetKernelReadahead(const std::string& mountpoint, uint64_t bytes);

}  // namespace ossmount::fuse
