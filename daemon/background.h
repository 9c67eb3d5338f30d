// Going to the background the way mount(8) users expect: `ossmount ...` returns only once
// the mount answers (exit 0), or prints why it could not mount (exit 1).
//
// Under systemd (NOTIFY_SOCKET set, notify.h) the same moments are told to the service
// manager: Ready() sends READY=1, Fail() a STATUS= line, Stopping() STOPPING=1.
//
// ForkIntoBackground() forks; the parent waits on a pipe for the child's verdict and
// exits with it (it never returns). The child gets a StartupReporter, calls Ready() once
// the mount answers or Fail(message) otherwise. If the child dies without a verdict, the
// parent says so and exits 1.
//
// REQUIRES: no thread has been created yet (fork copies only the calling thread).
#pragma once

#include <string>
#include <utility>

#include "ossmount/status.h"

namespace ossmount::daemon {

class StartupReporter {
 public:
  StartupReporter() = default;  // foreground: reports go to stderr only
  explicit StartupReporter(int fd) : fd_(fd) {}
  StartupReporter(StartupReporter&& o) noexcept : fd_(o.fd_), reported_(o.reported_) { o.fd_ = -1; }
  StartupReporter& operator=(StartupReporter&& o) noexcept {
    std::swap(fd_, o.fd_);
    std::swap(reported_, o.reported_);
    return *this;
  }
  StartupReporter(const StartupReporter&) = delete;
  StartupReporter& operator=(const StartupReporter&) = delete;
  ~StartupReporter();

  bool background() const { return fd_ >= 0; }
  // Only the first of Ready()/Fail() counts. They are called from one thread at a time
  // (main thread before the FUSE loop starts, then the readiness thread).
  void Ready();
  void Fail(const std::string& message);
  // Something slow the user should know about while the start goes on (before a verdict):
  // the waiting parent prints it at once as "ossmount: MESSAGE" (newlines become spaces),
  // and under systemd it is the STATUS= line. In the foreground it only goes to systemd:
  // the log on stderr already said it.
  void Note(const std::string& message);
  // The daemon begins to unmount and exit (after a verdict).
  void Stopping();

 private:
  // Writes the verdict line and closes the pipe: only the first verdict counts.
  void Send(const std::string& line);
  int fd_ = -1;
  bool reported_ = false;
};

// In the child: returns the reporter; stdin/stdout/stderr are /dev/null and the child is
// a session leader. On fork/pipe failure, an error (the caller stays in the foreground).
Result<StartupReporter> ForkIntoBackground();

// chdir("/") so the daemon does not keep the caller's directory busy.
void DetachWorkingDirectory();

}  // namespace ossmount::daemon
