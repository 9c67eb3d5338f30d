#include "data/cache_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "data/block_file.h"
#include "data/directory_lock.h"

namespace ossmount::data {

namespace {

// mkdir -p, each directory it creates 0700.
Status MakeDirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status(ErrorCode::kInvalidArgument,
                    "cannot create cache directory '" + part + "': " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

// Refuses a directory others could plant blocks in, or that this user cannot write.
Status CheckOwnership(int fd, const std::string& dir) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status(ErrorCode::kInvalidArgument, "cache directory '" + dir + "' is not a directory");
  }
  if (st.st_uid != ::geteuid()) {
    return Status(ErrorCode::kAccessDenied,
                  "cache directory '" + dir + "' is owned by uid " + std::to_string(st.st_uid) +
                      ", not by this user (uid " + std::to_string(::geteuid()) +
                      "); use a directory of your own");
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status(ErrorCode::kAccessDenied,
                  "cache directory '" + dir + "' is writable by group or others (mode " + mode +
                      "), so others could plant blocks; run chmod 700 on it");
  }
  if (::faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
    return Status(ErrorCode::kAccessDenied,
                  "cache directory '" + dir + "' is not writable by this user");
  }
  return Status::Ok();
}

// Whether files in the directory `dir_fd` take the block header attribute (ext4, xfs,
// btrfs and tmpfs do; some network and FUSE file systems do not).
bool TakesBlockXattr(int dir_fd) {
  const std::string probe = std::string(kTempPrefix) + "xattr-probe." + std::to_string(::getpid());
  int fd =
      ::openat(dir_fd, probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  const bool ok = ::fsetxattr(fd, kBlockXattrName, "probe", 5, 0) == 0;
  ::close(fd);
  ::unlinkat(dir_fd, probe.c_str(), 0);
  return ok;
}

}  // namespace

Result<CacheDirectory> OpenCacheDirectory(const DiskCacheOptions& options) {
  if (Status st = MakeDirs(options.dir); !st.ok()) return st;
  UniqueFd fd(::open(options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    return Status(ErrorCode::kInvalidArgument,
                  "cannot open cache directory '" + options.dir + "': " + std::strerror(errno));
  }
  if (Status st = CheckOwnership(fd.get(), options.dir); !st.ok()) return st;
  // Before anything is written or swept: a second process must not delete the first one's
  // temporary files.
  if (Status locked = LockDirectory(fd.get(), options.dir, options.lock_wait, options.on_notice);
      !locked.ok()) {
    return locked;
  }
  const bool xattrs = TakesBlockXattr(fd.get());
  BlockLayout layout = options.layout;
  if (layout == BlockLayout::kAuto) {
    layout = xattrs ? BlockLayout::kHeaderInXattr : BlockLayout::kHeaderInFile;
  } else if (layout == BlockLayout::kHeaderInXattr && !xattrs) {
    return Status(ErrorCode::kInvalidArgument,
                  "cache directory '" + options.dir +
                      "' is on a file system without user extended attributes");
  }
  return CacheDirectory{std::move(fd), layout};
}

}  // namespace ossmount::data
