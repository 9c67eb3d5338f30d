#include "systemd_store.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "notify.h"

extern char** environ;

namespace ossmount::daemon {
namespace {

constexpr int kFirstPassedFd = 3;  // SD_LISTEN_FDS_START
constexpr auto kSystemctlTimeout = std::chrono::seconds(5);

std::optional<long> ParseNumber(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 0) return std::nullopt;
  return value;
}

// Runs systemctl with `args` and returns what it printed, or an error that says why not.
Result<std::string> Systemctl(const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Status(ErrorCode::kInternal, std::string("pipe: ") + std::strerror(errno));
  }
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);  // the supervisor blocks the signals it reads
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::vector<std::string> argv_text = {"systemctl"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawn_error = posix_spawnp(&pid, "systemctl", &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  write_end.reset();
  if (spawn_error != 0) {
    return Status(ErrorCode::kNotFound,
                  std::string("cannot run systemctl: ") + std::strerror(spawn_error));
  }
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + kSystemctlTimeout;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{read_end.get(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) break;
    char buf[4096];
    const ssize_t n = read(read_end.get(), buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status(ErrorCode::kTimeout, "systemctl did not answer within " +
                                           std::to_string(kSystemctlTimeout.count()) + " s");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status(ErrorCode::kInternal, "systemctl " + args.front() + " failed");
  }
  return out;
}

}  // namespace

std::optional<int> FindPassedDescriptor(const char* listen_pid, const char* listen_fds,
                                        const char* listen_fdnames, pid_t self,
                                        std::string_view name) {
  const std::optional<long> pid = ParseNumber(listen_pid);
  const std::optional<long> count = ParseNumber(listen_fds);
  if (!pid || *pid != self || !count || listen_fdnames == nullptr) return std::nullopt;
  std::string_view names(listen_fdnames);
  for (long i = 0; i < *count; ++i) {
    const size_t colon = names.find(':');
    if (names.substr(0, colon) == name) return kFirstPassedFd + static_cast<int>(i);
    if (colon == std::string_view::npos) break;
    names.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

std::optional<UniqueFd> TakePassedDescriptor(std::string_view name) {
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  const char* names = std::getenv("LISTEN_FDNAMES");
  std::optional<int> found = FindPassedDescriptor(pid, fds, names, getpid(), name);
  const std::optional<long> count = ParseNumber(fds);
  const bool ours = ParseNumber(pid) == std::optional<long>(getpid());
  std::optional<UniqueFd> result;
  if (ours && count) {
    for (long i = 0; i < *count; ++i) {
      const int fd = kFirstPassedFd + static_cast<int>(i);
      if (found && fd == *found) {
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        result.emplace(fd);
      } else {
        close(fd);  // nothing else of ours is stored; a stranger's must not leak to children
      }
    }
  }
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  return result;
}

Status StoreDescriptor(int fd, std::string_view name) {
  return NotifySystemd("FDSTORE=1\nFDNAME=" + std::string(name), fd);
}

Status RemoveStoredDescriptor(std::string_view name) {
  return NotifySystemd("FDSTOREREMOVE=1\nFDNAME=" + std::string(name));
}

std::string UnitOfCgroup(std::string_view cgroup_text) {
  // "0::/system.slice/system-ossmount.slice/ossmount@data.service" (cgroup v2), or
  // "1:name=systemd:/system.slice/..." (v1 and hybrid layouts).
  std::istringstream lines{std::string(cgroup_text)};
  std::string line;
  std::string unit;
  while (std::getline(lines, line)) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    if (!controllers.empty() && controllers != "name=systemd") continue;
    std::string_view path(line);
    path.remove_prefix(second + 1);
    while (!path.empty()) {
      const size_t slash = path.rfind('/');
      std::string_view element = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
      if (element.size() > 8 && element.substr(element.size() - 8) == ".service") {
        unit = std::string(element);
        break;
      }
      if (slash == std::string_view::npos) break;
      path = path.substr(0, slash);
    }
    if (!unit.empty()) break;
  }
  return unit;
}

bool ListsRestartOf(std::string_view list_jobs, std::string_view unit) {
  std::istringstream lines{std::string(list_jobs)};
  std::string line;
  while (std::getline(lines, line)) {
    // JOB UNIT TYPE STATE
    std::istringstream fields(line);
    std::string id, job_unit, type;
    if (!(fields >> id >> job_unit >> type)) continue;
    if (job_unit == unit && type.find("restart") != std::string::npos) return true;
  }
  return false;
}

bool SystemdRestartsThisUnit(std::string* why) {
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  const std::string unit = UnitOfCgroup(text.str());
  if (unit.empty()) {
    *why = "this process is in no systemd service";
    return false;
  }
  auto jobs = Systemctl({"list-jobs", "--no-legend", "--plain", "--full", unit});
  if (!jobs.ok()) {
    *why = jobs.status().message();
    return false;
  }
  if (!ListsRestartOf(*jobs, unit)) {
    *why = "systemd stops " + unit + " without restarting it";
    return false;
  }
  auto max = Systemctl({"show", "--property=FileDescriptorStoreMax", "--value", unit});
  if (!max.ok()) {
    *why = max.status().message();
    return false;
  }
  if (std::atoi(max->c_str()) <= 0) {
    *why = unit + " has FileDescriptorStoreMax=0, so systemd keeps no descriptor across a restart";
    return false;
  }
  return true;
}

}  // namespace ossmount::daemon
