// Checks on the mount point before anything is mounted, with messages that say what to
// fix. Touches the filesystem (stat, opendir) but nothing else.
//
// Thread-safety: stateless.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ossmount/status.h"

namespace ossmount::config {

// "/dev/fd/N" as the mount point: the number N of a /dev/fuse descriptor that a launcher
// opened and mounted and passed on (as Mountpoint and ossfs 2.0 accept), so the daemon needs
// no privilege to mount. nullopt for any other path.
std::optional<int> FuseFdMountPoint(std::string_view path);
// OK when descriptor `fd` is open on /dev/fuse; otherwise an error that says what to pass.
Status CheckFuseFd(int fd);

// OK when `path` exists, is a directory, and is empty (or allow_nonempty). A stale FUSE
// mount (ENOTCONN, or ECONNABORTED after a daemon that used io_uring rings) gets a hint to run
// `fusermount3 -u`.
Status CheckMountPoint(const std::string& path, bool allow_nonempty);

// One line of /proc/self/mountinfo, the fields we use.
struct MountEntry {
  std::string mountpoint;  // unescaped (\040 -> ' ')
  std::string fstype;      // "fuse.ossmount" for ours
  std::string source;      // "ossmount:BUCKET" for ours
};

// Parses mountinfo text (the format of /proc/self/mountinfo) and returns the last entry
// mounted exactly on `path` (the one on top), or nullopt.
std::optional<MountEntry> FindMountEntry(std::string_view mountinfo, const std::string& path);

// True for a mount an ossmount daemon made (fstype fuse.ossmount or source ossmount:...).
bool IsOssmountEntry(const MountEntry& entry);

// When `path` is a dead FUSE mount (stat or statfs gives ENOTCONN or ECONNABORTED: the daemon
// was killed), and it
// is ours, detaches it (umount2(MNT_DETACH), which needs root, then `fusermount3 -u -z`) and
// returns a sentence saying what was done, for the log. Returns "" when `path` is not a
// dead mount. A dead mount that is not ossmount's, or one that cannot be detached, is an
// error that says exactly what to run. `mountinfo_path` is for tests.
Result<std::string> RecoverDeadMount(const std::string& path,
                                     const std::string& mountinfo_path = "/proc/self/mountinfo");

// `path` made absolute against the current directory (no symlink resolution), so it stays
// valid after the daemon's chdir("/").
Result<std::string> AbsoluteMountPoint(const std::string& path);

}  // namespace ossmount::config
