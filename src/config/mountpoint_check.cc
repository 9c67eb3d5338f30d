#include "config/mountpoint_check.h"

#include <dirent.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/read_file.h"

extern char** environ;

namespace ossmount::config {

std::optional<int> FuseFdMountPoint(std::string_view path) {
  constexpr std::string_view kPrefix = "/dev/fd/";
  if (path.substr(0, kPrefix.size()) != kPrefix || path.size() == kPrefix.size())
    return std::nullopt;
  int fd = 0;
  for (char c : path.substr(kPrefix.size())) {
    if (c < '0' || c > '9' || fd > 100000) return std::nullopt;
    fd = fd * 10 + (c - '0');
  }
  return fd;
}

Status CheckFuseFd(int fd) {
  struct stat st {};
  // /dev/fuse is character device 10:229 (the misc major).
  if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != 10 ||
      minor(st.st_rdev) != 229) {
    return Status(ErrorCode::kInvalidArgument,
                  "mount point /dev/fd/" + std::to_string(fd) + ": descriptor " +
                      std::to_string(fd) +
                      " is not an open /dev/fuse; the process that starts ossmount must open "
                      "/dev/fuse, mount it (mount -t fuse.ossmount -o fd=N,...) and pass the "
                      "descriptor on");
  }
  return Status::Ok();
}

// What a FUSE mount whose daemon died answers: ENOTCONN over /dev/fuse, ECONNABORTED when
// the kernel was handing requests to the daemon through io_uring rings.
namespace {
bool IsDeadMountErrno(int err) { return err == ENOTCONN || err == ECONNABORTED; }
}  // namespace

Status CheckMountPoint(const std::string& path, bool allow_nonempty) {
  auto fail = [&](std::string what) {
    return Status(ErrorCode::kInvalidArgument, "mount point '" + path + "' " + what);
  };
  struct stat st {};
  struct statvfs vfs {};
  if (stat(path.c_str(), &st) != 0 || statvfs(path.c_str(), &vfs) != 0) {
    int err = errno;
    if (err == ENOENT) return fail("does not exist; create it first (mkdir -p " + path + ")");
    if (IsDeadMountErrno(err)) {
      return fail(
          "is a disconnected FUSE mount (a previous daemon died); run "
          "'fusermount3 -u -z " +
          path + "' first");
    }
    if (err == EACCES) return fail("cannot be reached: permission denied");
    return fail(std::string("cannot be checked: ") + std::strerror(err));
  }
  if (!S_ISDIR(st.st_mode)) return fail("is not a directory");
  if (allow_nonempty) return Status::Ok();
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) {
    int err = errno;
    if (IsDeadMountErrno(err)) {
      return fail(
          "is a disconnected FUSE mount (a previous daemon died); run "
          "'fusermount3 -u " +
          path + "' first");
    }
    return fail(std::string("cannot be listed: ") + std::strerror(err));
  }
  bool empty = true;
  while (dirent* e = readdir(dir)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") {
      empty = false;
      break;
    }
  }
  closedir(dir);
  if (!empty) {
    return fail(
        "is not empty; mount on an empty directory, or pass --nonempty (-o nonempty) "
        "to hide its contents while mounted");
  }
  return Status::Ok();
}

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string UnescapeMountField(std::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' && field[i + 1] <= '3' &&
        field[i + 2] >= '0' && field[i + 2] <= '7' && field[i + 3] >= '0' && field[i + 3] <= '7') {
      out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                               (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

std::vector<std::string_view> SplitSpaces(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// Runs argv (searched in PATH) with stdio inherited; returns its exit status, or -1.
int RunProgram(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A FUSE mount whose daemon died answers ENOTCONN (or ECONNABORTED) to everything the
// kernel cannot answer from its caches. stat of the root may still succeed from the attribute
// cache (long timeouts with --metadata-ttl indefinite); statfs always asks the daemon.
bool StatGivesEnotconn(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return IsDeadMountErrno(errno);
  struct statvfs vfs {};
  return statvfs(path.c_str(), &vfs) != 0 && IsDeadMountErrno(errno);
}

}  // namespace

std::optional<MountEntry> FindMountEntry(std::string_view mountinfo, const std::string& path) {
  std::optional<MountEntry> found;
  size_t start = 0;
  while (start < mountinfo.size()) {
    size_t end = mountinfo.find('\n', start);
    if (end == std::string_view::npos) end = mountinfo.size();
    auto fields = SplitSpaces(mountinfo.substr(start, end - start));
    start = end + 1;
    // id parent major:minor root mountpoint options [optional...] - fstype source super
    size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (fields.size() < 5 || dash + 2 >= fields.size() || dash < 6) continue;
    if (UnescapeMountField(fields[4]) != path) continue;
    found = MountEntry{UnescapeMountField(fields[4]), UnescapeMountField(fields[dash + 1]),
                       UnescapeMountField(fields[dash + 2])};
  }
  return found;
}

bool IsOssmountEntry(const MountEntry& entry) {
  return entry.fstype == "fuse.ossmount" || entry.source.rfind("ossmount:", 0) == 0;
}

Result<std::string> RecoverDeadMount(const std::string& path, const std::string& mountinfo_path) {
  if (!StatGivesEnotconn(path)) return std::string();
  auto entry = FindMountEntry(ReadFileOrEmpty(mountinfo_path), path);
  const std::string fix = "run 'fusermount3 -u -z " + path + "' (or, as root, 'umount -l " + path +
                          "') and mount again";
  if (!entry) {
    return Status(ErrorCode::kInvalidArgument,
                  "mount point '" + path +
                      "' is a disconnected mount (stat: Transport endpoint is not connected) "
                      "that is not listed in " +
                      mountinfo_path + "; " + fix);
  }
  if (!IsOssmountEntry(*entry)) {
    return Status(ErrorCode::kInvalidArgument,
                  "mount point '" + path + "' is a disconnected " + entry->fstype + " mount of '" +
                      entry->source + "', not an ossmount one, so it is left alone; " + fix);
  }
  std::string how;
  if (umount2(path.c_str(), MNT_DETACH) == 0) {
    how = "umount2(MNT_DETACH)";
  } else {
    int umount_errno = errno;
    int code = RunProgram({"fusermount3", "-u", "-z", path});
    if (code == 0) {
      how = "fusermount3 -u -z";
    } else {
      return Status(ErrorCode::kInvalidArgument,
                    "mount point '" + path + "' is the disconnected mount '" + entry->source +
                        "' of an ossmount daemon that died, and it could not be detached "
                        "(umount2: " +
                        std::strerror(umount_errno) + "; fusermount3 -u -z exited " +
                        std::to_string(code) + "); " + fix);
    }
  }
  if (StatGivesEnotconn(path)) {
    return Status(ErrorCode::kInvalidArgument, "mount point '" + path +
                                                   "' is still disconnected after " + how +
                                                   " (another dead mount below it?); " + fix);
  }
  return "mount point " + path + " was the disconnected mount '" + entry->source +
         "' of an ossmount daemon that died; detached it with " + how + " and mounting again";
}

Result<std::string> AbsoluteMountPoint(const std::string& path) {
  if (path.empty()) return Status(ErrorCode::kInvalidArgument, "mount point is empty");
  std::string out;
  if (path.front() == '/') {
    out = path;
  } else {
    char buf[4096];
    if (getcwd(buf, sizeof buf) == nullptr) {
      return Status(ErrorCode::kInvalidArgument,
                    std::string("cannot resolve the mount point: getcwd: ") + std::strerror(errno));
    }
    out = std::string(buf) + "/" + path;
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace ossmount::config
