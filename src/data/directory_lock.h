// LockDirectory: at most one process uses a cache directory at a time.
//
// Two daemons sharing one --cache directory (two mounts whose config files both name
// /var/cache/ossmount/dataset, say) would each keep its own index and its own size budget:
// together they fill the disk to twice --max-cache-size, neither evicts the other's blocks,
// and a starting daemon's sweep of temporary files deletes the blocks the other is writing.
// So the cache holds an exclusive flock(2) on the directory itself (no lock file to go stale)
// for as long as it has the directory open. The kernel drops the lock when the descriptor's
// last holder exits, however it exits (kill -9 included), so a crash never leaves a lock
// behind that would block the restart.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "ossmount/status.h"

namespace ossmount::data {

// Takes an exclusive flock on `dir_fd` (an open descriptor of the directory named `dir`;
// the lock lives as long as that open file description). When another process holds it,
// waits up to `wait`, checking every 100 ms: a daemon that was just unmounted still writes
// its queued blocks before it exits, and a remount right after should not fail for that.
// The wait is logged once when it starts, and the same message goes to `on_wait` (if set). If the
// lock is still held after `wait`, fails (kInvalidArgument: a configuration to fix) with a message
// naming the directory, the holder (pid and command, when /proc/locks tells) and what to do. A file
// system without flock support (some network file systems) is not refused: a warning says that
// sharing would go undetected.
Status LockDirectory(int dir_fd, const std::string& dir, std::chrono::milliseconds wait,
                     const std::function<void(const std::string&)>& on_wait = {});

// The pid holding a flock on the inode (dev, ino), from the text of /proc/locks; nullopt when
// none is listed. Lines of processes waiting for a lock ("->") are skipped.
std::optional<pid_t> FlockHolder(std::string_view proc_locks, dev_t dev, ino_t ino);

}  // namespace ossmount::data
