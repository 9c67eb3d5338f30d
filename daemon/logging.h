// Logging set-up for the daemon: one spdlog default logger for the whole process.
//
// Where lines go:
//   - foreground: stderr, no colour, "TIME LEVEL [thread] message"; when stderr is the
//     systemd journal (JOURNAL_STREAM names our stderr) "<N>LEVEL message" instead: journald
//     adds its own time stamps and reads the syslog priority <N>;
//   - --log-file (foreground or background): that file, rotated when it reaches
//     --log-max-size (NAME.log -> NAME.1.log -> ... NAME.N.log, --log-max-files kept; 0 =
//     never);
//   - background without --log-file: syslog (ident "ossmount"), stderr being /dev/null.
// Level: --log-level (or --debug). At run time SIGUSR2 toggles between debug and the
// configured level, and SIGHUP reopens the log file (and the audit log, through the hook)
// so logrotate's move-then-HUP works.
//
// Secrets never reach a log line: nothing here formats credentials, and the modules that
// hold them log only Describe() strings.
#pragma once

#include <functional>

#include "config/mount_config.h"
#include "ossmount/status.h"

namespace ossmount::daemon {

// REQUIRES: called once, before any thread is created.
Status SetupLogging(const config::DaemonSettings& settings, bool to_stderr);

// Reopens the log file (a no-op without --log-file). Thread-safe.
void ReopenLogFile();

// Toggles the level between debug and the configured one; returns the new level's name.
const char* ToggleDebugLevel();

// Starts a thread that handles SIGHUP (ReopenLogFile, then `on_reopen`, e.g. the audit
// log) and SIGUSR2 (ToggleDebugLevel). Call after the FUSE server installed its handlers:
// this replaces its SIGHUP handling (SIGHUP then no longer unmounts; SIGTERM and SIGINT
// do). The thread lives until the process exits.
void StartLogSignalThread(std::function<void()> on_reopen);

// True when stderr is connected to the systemd journal (JOURNAL_STREAM matches it).
bool StderrIsJournal();

}  // namespace ossmount::daemon
