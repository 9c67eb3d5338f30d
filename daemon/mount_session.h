// One mount from start to finish: build the object client and filesystem, check the
// bucket, mount, serve until a signal or an unmount, then stop cleanly.
#pragma once

#include "background.h"
#include "config/mount_config.h"
#include "supervised_run.h"

namespace ossmount::daemon {

// Returns the process exit status: 0 after a clean unmount, 1 when the mount could not
// be made (the reason went to the reporter and the log).
// `supervised`: the supervisor's mount to serve (and resume, after a restart), or null to
// mount here.
// REQUIRES: logging is set up; config.daemon.mountpoint is absolute and checked.
int RunMountSession(const config::MountConfig& config, StartupReporter& reporter,
                    const SupervisedRun* supervised = nullptr);

}  // namespace ossmount::daemon
