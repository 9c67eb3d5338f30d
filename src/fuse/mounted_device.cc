#include "fuse/mounted_device.h"

#include <fuse_lowlevel.h>
#include <spdlog/spdlog.h>

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
  return std::unique_ptr<MountedDevice>(new MountedDevice(se));
}

MountedDevice::~MountedDevice() {
  Unmount();
  fuse_session_destroy(se_);
}

int MountedDevice::fd() const { return fuse_session_fd(se_); }

void MountedDevice::Unmount() {
  if (!mounted_) return;
  mounted_ = false;
  fuse_session_unmount(se_);
}

}  // namespace ossmount::fuse
