// The mount's /dev/fuse descriptor in systemd's file-descriptor store, so that the FUSE
// connection outlives every process of the unit: `systemctl restart`, and a restart by
// Restart= after the unit's processes were killed (`systemctl kill -s KILL`). A supervisor
// under systemd stores the descriptor once the mount serves; systemd passes it to the next
// start of the unit (LISTEN_FDS, LISTEN_FDNAMES) while the unit restarts, and drops it when
// the unit stops. Debian 12's systemd (252) does not tell a service whether a stop is half of
// a restart, so the supervisor asks (SystemdRestartsThisUnit): it keeps the mount for a
// restart and unmounts for a stop. The unit needs FileDescriptorStoreMax=1 or more.
//
// Thread-safety: functions only; TakePassedDescriptor changes the environment (call it before
// any thread exists).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "common/unique_fd.h"
#include "ossmount/status.h"

namespace ossmount::daemon {

// The name the mount's descriptor is stored under (FDNAME).
constexpr std::string_view kStoredFuseName = "ossmount-fuse";

// The descriptor named `name` among those systemd passed to this process; the others are
// closed, and LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES removed, so that children do not take
// them for theirs. Nothing when none was passed.
std::optional<UniqueFd> TakePassedDescriptor(std::string_view name);
// The number of the descriptor named `name`, from the three variables' values (null when
// unset) as a process `self` sees them; for TakePassedDescriptor and tests.
std::optional<int> FindPassedDescriptor(const char* listen_pid, const char* listen_fds,
                                        const char* listen_fdnames, pid_t self,
                                        std::string_view name);

// Stores `fd` under `name` (FDSTORE=1), or removes what is stored under it (FDSTOREREMOVE=1).
// OK and nothing sent outside systemd (no NOTIFY_SOCKET).
Status StoreDescriptor(int fd, std::string_view name);
Status RemoveStoredDescriptor(std::string_view name);

// The unit in /proc/self/cgroup's text (the last path element ending in ".service"), or "".
std::string UnitOfCgroup(std::string_view cgroup_text);
// Whether `list_jobs` (`systemctl list-jobs --no-legend --plain --full`) shows a restart job
// (restart, try-restart, reload-or-restart) of `unit`.
bool ListsRestartOf(std::string_view list_jobs, std::string_view unit);

// Whether the stop this process's unit is in is half of a restart that keeps the stored
// descriptor: systemd has a restart job for the unit and FileDescriptorStoreMax is above 0.
// Asks with systemctl (5 s at most each); false with the reason in `why` when it cannot tell.
bool SystemdRestartsThisUnit(std::string* why);

}  // namespace ossmount::daemon
