// Checks on the mount point before anything is mounted, with messages that say what to
// fix. Touches the filesystem (stat, opendir) but nothing else.
//
// Thread-safety: stateless.
#pragma once

#include <string>

#include "ossmount/status.h"

namespace ossmount::config {

// OK when `path` exists, is a directory, and is empty (or allow_nonempty). A stale FUSE
// mount (ENOTCONN) gets a hint to run `fusermount3 -u`.
Status CheckMountPoint(const std::string& path, bool allow_nonempty);

// `path` made absolute against the current directory (no symlink resolution), so it stays
// valid after the daemon's chdir("/").
Result<std::string> AbsoluteMountPoint(const std::string& path);

}  // namespace ossmount::config
