#include "config/mountpoint_check.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace ossmount::config {

Status CheckMountPoint(const std::string& path, bool allow_nonempty) {
  auto fail = [&](std::string what) {
    return Status(ErrorCode::kInvalidArgument, "mount point '" + path + "' " + what);
  };
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) return fail("does not exist; create it first (mkdir -p " + path + ")");
    if (err == ENOTCONN) {
      return fail(
          "is a disconnected FUSE mount (a previous daemon died); run "
          "'fusermount3 -u " +
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
    if (err == ENOTCONN) {
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
