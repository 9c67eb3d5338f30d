#include "background.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "common/write_all.h"
#include "notify.h"

namespace ossmount::daemon {
namespace {

constexpr std::string_view kNotePrefix = "NOTE ";

// The parent side: print the child's notes ("NOTE <message>\n", any number) as they come,
// then read its verdict ("OK\n" or "ERR <message>") and exit.
[[noreturn]] void WaitForChild(int fd, pid_t child) {
  std::string got;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
    size_t end;
    while (got.rfind(kNotePrefix, 0) == 0 && (end = got.find('\n')) != std::string::npos) {
      std::fprintf(stderr, "ossmount: %s\n",
                   got.substr(kNotePrefix.size(), end - kNotePrefix.size()).c_str());
      got.erase(0, end + 1);
    }
  }
  close(fd);
  if (got.rfind("OK", 0) == 0) std::exit(0);
  if (got.rfind("ERR ", 0) == 0) {
    std::fprintf(stderr, "ossmount: %s\n", got.substr(4).c_str());
  } else {
    int status = 0;
    pid_t r = waitpid(child, &status, 0);
    if (r == child && WIFSIGNALED(status)) {
      std::fprintf(stderr, "ossmount: the daemon died (signal %d) before the mount was ready\n",
                   WTERMSIG(status));
    } else {
      std::fprintf(stderr, "ossmount: the daemon exited before the mount was ready\n");
    }
  }
  std::exit(1);
}

}  // namespace

StartupReporter::~StartupReporter() {
  if (fd_ >= 0) close(fd_);
}

void StartupReporter::Send(const std::string& line) {
  int fd = fd_;
  if (fd < 0) return;
  fd_ = -1;  // only the first verdict counts
  WriteAll(fd, line);
  close(fd);
}

void StartupReporter::Note(const std::string& message) {
  if (reported_) return;
  std::string line = message;
  std::replace(line.begin(), line.end(), '\n', ' ');
  if (fd_ >= 0) WriteAll(fd_, std::string(kNotePrefix) + line + "\n");
  (void)NotifySystemd("STATUS=" + line);
}

void StartupReporter::Ready() {
  if (std::exchange(reported_, true)) return;
  Send("OK\n");
  if (Status st = NotifySystemd("READY=1\nSTATUS=mounted; serving"); !st.ok()) {
    spdlog::warn("{}", st.message());
  }
}

void StartupReporter::Fail(const std::string& message) {
  if (std::exchange(reported_, true)) return;
  Send("ERR " + message);
  (void)NotifySystemd("STATUS=failed: " + message);
}

void StartupReporter::Stopping() {
  if (Status st = NotifySystemd("STOPPING=1\nSTATUS=unmounting"); !st.ok()) {
    spdlog::warn("{}", st.message());
  }
}

Result<StartupReporter> ForkIntoBackground() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return Status(ErrorCode::kInternal, std::string("pipe: ") + std::strerror(errno));
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Status(ErrorCode::kInternal, std::string("fork: ") + std::strerror(errno));
  }
  if (pid > 0) {
    close(fds[1]);
    WaitForChild(fds[0], pid);
  }
  close(fds[0]);
  setsid();
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    if (null > STDERR_FILENO) close(null);
  }
  return StartupReporter(fds[1]);
}

void DetachWorkingDirectory() {
  if (chdir("/") != 0) {
    // Nothing useful to do: the daemon still works, it just pins the old directory.
  }
}

}  // namespace ossmount::daemon
