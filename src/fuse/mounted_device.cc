#include "fuse/mounted_device.h"

#include <fuse_lowlevel.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ossmount::fuse {

std::string KernelMountOptions(const FuseServerOptions& options) {
  std::string opts = std::string(options.read_only ? "ro" : "rw") +
                     ",default_permissions,fsname=" + options.fsname + ",subtype=ossmount";
  if (options.allow_other) opts += ",allow_other";
  if (options.allow_root) opts += ",allow_root";
  return opts;
}

Result<std::unique_ptr<MountedDevice>> MountedDevice::Mount(const FuseServerOptions& options) {
  const std::string opts = KernelMountOptions(options);
  fuse_args args = FUSE_ARGS_INIT(0, nullptr);
  fuse_opt_add_arg(&args, "ossmount");
  fuse_opt_add_arg(&args, "-o");
  fuse_opt_add_arg(&args, opts.c_str());
  static const fuse_lowlevel_ops kNoOps{};  // never served here
  fuse_session* se = fuse_session_new(&args, &kNoOps, sizeof(kNoOps), nullptr);
  fuse_opt_free_args(&args);
  if (se == nullptr) {
    return Status(ErrorCode::kInternal,
                  "creating the FUSE session failed (mount options '" + opts + "')");
  }
  if (fuse_session_mount(se, options.mountpoint.c_str()) != 0) {
    fuse_session_destroy(se);
    return Status(ErrorCode::kInternal, "mounting on '" + options.mountpoint +
                                            "' failed: check that /dev/fuse exists and is "
                                            "accessible, that fusermount3 is installed");
  }
  return std::unique_ptr<MountedDevice>(new MountedDevice(se, UniqueFd(), options.mountpoint));
}

bool MountedDevice::ConnectionAlive(int fd) {
  // The kernel answers POLLERR for a connection that has ended; a live one is readable or not,
  // and nothing is read here.
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) < 0) return false;
  return (p.revents & (POLLERR | POLLNVAL)) == 0;
}

std::unique_ptr<MountedDevice> MountedDevice::Adopt(UniqueFd fd, std::string mountpoint) {
  return std::unique_ptr<MountedDevice>(
      new MountedDevice(nullptr, std::move(fd), std::move(mountpoint)));
}

MountedDevice::~MountedDevice() {
  Unmount();
  Release();
}

int MountedDevice::fd() const { return se_ != nullptr ? fuse_session_fd(se_) : adopted_.get(); }

void MountedDevice::Unmount() {
  if (!mounted_) return;
  mounted_ = false;
  if (se_ != nullptr) {
    fuse_session_unmount(se_);
    return;
  }
  // Adopted: the session that mounted lives in another process. Lazily, as libfuse does.
  if (geteuid() == 0) {
    if (umount2(mountpoint_.c_str(), MNT_DETACH) != 0 && errno != EINVAL) {
      spdlog::warn("cannot unmount {}: {}", mountpoint_, std::strerror(errno));
    }
  } else {
    const pid_t pid = fork();
    if (pid == 0) {
      execlp("fusermount3", "fusermount3", "-u", "-z", "--", mountpoint_.c_str(), nullptr);
      _exit(127);
    }
    if (pid > 0) waitpid(pid, nullptr, 0);
  }
  adopted_.reset();
}

void MountedDevice::Release() {
  mounted_ = false;
  if (se_ != nullptr) {
    fuse_session_destroy(se_);  // closes the descriptor; unmounts nothing
    se_ = nullptr;
  }
  adopted_.reset();
}

}  // namespace ossmount::fuse
