// LockDirectory: see directory_lock.h.
#include "data/directory_lock.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/read_file.h"

namespace ossmount::data {

namespace {

constexpr std::chrono::milliseconds kPollInterval{100};

// "pid 1234, ossmount" when /proc tells who holds the lock on the directory `dir_fd`, else
// "another process".
std::string DescribeHolder(int dir_fd) {
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0) return "another process";
  auto pid = FlockHolder(ReadFileOrEmpty("/proc/locks"), st.st_dev, st.st_ino);
  if (!pid) return "another process";
  std::string text = "pid " + std::to_string(*pid);
  std::string comm = ReadFileOrEmpty("/proc/" + std::to_string(*pid) + "/comm");
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == ' ')) comm.pop_back();
  if (!comm.empty()) text += ", " + comm;
  if (*pid == ::getpid()) text += ", this very process";
  return text;
}

// "10 s", or "250 ms" under a second.
std::string DescribeWait(std::chrono::milliseconds wait) {
  if (wait.count() % 1000 != 0 || wait.count() == 0) return std::to_string(wait.count()) + " ms";
  return std::to_string(wait.count() / 1000) + " s";
}

}  // namespace

std::optional<pid_t> FlockHolder(std::string_view proc_locks, dev_t dev, ino_t ino) {
  // "1: FLOCK  ADVISORY  WRITE 1234 fe:01:1234567 0 EOF"; the device as hex major:minor.
  char want[64];
  std::snprintf(want, sizeof(want), "%02x:%02x:%llu", major(dev), minor(dev),
                static_cast<unsigned long long>(ino));
  std::istringstream lines{std::string(proc_locks)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string id, kind, mode, access, pid, where;
    fields >> id >> kind;
    if (kind == "->") continue;  // waiting for the lock, not holding it
    fields >> mode >> access >> pid >> where;
    if (kind != "FLOCK" || where != want) continue;
    char* end = nullptr;
    long value = std::strtol(pid.c_str(), &end, 10);
    if (end != pid.c_str() && *end == '\0' && value > 0) return static_cast<pid_t>(value);
  }
  return std::nullopt;
}

Status LockDirectory(int dir_fd, const std::string& dir, std::chrono::milliseconds wait,
                     const std::function<void(const std::string&)>& on_wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  bool announced = false;
  for (;;) {
    if (::flock(dir_fd, LOCK_EX | LOCK_NB) == 0) {
      if (announced) spdlog::info("disk cache: '{}' was released; using it", dir);
      return Status::Ok();
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err != EWOULDBLOCK) {
      spdlog::warn(
          "disk cache: cannot lock '{}' ({}); another mount using the same directory would "
          "go unnoticed, so give each mount its own --cache",
          dir, std::strerror(err));
      return Status::Ok();
    }
    const bool out_of_time = std::chrono::steady_clock::now() >= deadline;
    if (announced && !out_of_time) {
      std::this_thread::sleep_for(kPollInterval);
      continue;
    }
    // Only for the two messages: not a read of /proc/locks per poll.
    const std::string holder = DescribeHolder(dir_fd);
    if (out_of_time) {
      return Status(ErrorCode::kInvalidArgument,
                    "cache directory '" + dir + "' is in use by " + holder +
                        (announced ? " and was not released within " + DescribeWait(wait) : "") +
                        "; two mounts cannot share a cache directory: give each mount its own "
                        "--cache (or stop the other one first)");
    }
    const std::string note = "disk cache: '" + dir + "' is in use by " + holder +
                             "; waiting up to " + DescribeWait(wait) + " for it to let go";
    spdlog::warn("{}", note);
    if (on_wait) on_wait(note);
    announced = true;
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace ossmount::data
