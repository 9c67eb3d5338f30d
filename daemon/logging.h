// Logging set-up for the daemon: one spdlog default logger for the whole process.
//
// Foreground: stderr (plus --log-file when given). Background: --log-file when given,
// else syslog (ident "ossmount"), because stderr is /dev/null once the daemon detaches.
// Secrets never reach a log line: nothing here formats credentials, and the modules that
// hold them log only Describe() strings.
#pragma once

#include "config/mount_config.h"
#include "ossmount/status.h"

namespace ossmount::daemon {

// REQUIRES: called once, before any thread is created.
Status SetupLogging(const config::DaemonSettings& settings, bool to_stderr);

}  // namespace ossmount::daemon
