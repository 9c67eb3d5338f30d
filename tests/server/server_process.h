// TestServerProcess: runs ossmount-testserver as a child process for C++ tests.
//
// Start() launches the binary with "--port 0" plus the caller's arguments, reads the
// "listening on HOST:PORT" line from its stdout (20 s timeout) and returns the handle. The
// destructor sends SIGTERM and waits (SIGKILL after 10 s), so a failing test never leaves a
// server behind; the child also gets SIGTERM if the test process dies (PR_SET_PDEATHSIG).
//
// Thread-safety: not thread-safe; one owner.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ossmount/status.h"

namespace ossmount::testserver {

class TestServerProcess {
 public:
  // `binary` defaults to the ossmount-testserver built beside the tests.
  static Result<std::unique_ptr<TestServerProcess>> Start(std::vector<std::string> args,
                                                          std::string binary = "");
  ~TestServerProcess();
  TestServerProcess(const TestServerProcess&) = delete;
  TestServerProcess& operator=(const TestServerProcess&) = delete;

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Sends SIGTERM and waits; returns the exit status as from waitpid (WEXITSTATUS etc.),
  // or -1 if it had to be killed.
  int Stop();

 private:
  TestServerProcess() = default;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  uint16_t port_ = 0;
};

// A fresh empty directory under $TMPDIR (or /tmp); removed by the caller.
std::string MakeTempDir(const std::string& prefix);

}  // namespace ossmount::testserver
