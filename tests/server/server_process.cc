#include "server_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace ossmount::testserver {

std::string MakeTempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) return "";
  return std::string(buf.data());
}

Result<std::unique_ptr<TestServerProcess>> TestServerProcess::Start(std::vector<std::string> args,
                                                                    std::string binary) {
#ifdef OSSMOUNT_TESTSERVER_BIN
  if (binary.empty()) binary = OSSMOUNT_TESTSERVER_BIN;
#endif
  if (binary.empty()) return Status(ErrorCode::kInvalidArgument, "no test server binary");
  int fds[2];
  if (::pipe(fds) != 0) return Status(ErrorCode::kInternal, "pipe failed");
  std::vector<std::string> argv_storage{binary, "--port", "0"};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return Status(ErrorCode::kInternal, "fork failed");
  if (pid == 0) {
    // Die with the test process even if it is killed before its destructors run.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::unique_ptr<TestServerProcess> p(new TestServerProcess());
  p->pid_ = pid;
  p->stdout_fd_ = fds[0];
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status(ErrorCode::kTimeout, "test server did not start");
    pollfd pfd{fds[0], POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[256];
    ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n <= 0) return Status(ErrorCode::kInternal, "test server exited: '" + line + "'");
    line.append(buf, static_cast<size_t>(n));
  }
  line = line.substr(0, line.find('\n'));
  size_t colon = line.rfind(':');
  if (line.rfind("listening on ", 0) != 0 || colon == std::string::npos) {
    return Status(ErrorCode::kInternal, "unexpected first line: '" + line + "'");
  }
  p->port_ = static_cast<uint16_t>(std::stoi(line.substr(colon + 1)));
  return p;
}

int TestServerProcess::Stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 1000; ++i) {
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return -1;
}

TestServerProcess::~TestServerProcess() {
  Stop();
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
}

}  // namespace ossmount::testserver
