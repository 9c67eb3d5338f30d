// MountedDevice: a FUSE mount made and held, but not served: the supervisor's
// (daemon/supervisor.h), whose descriptor the process that serves the mount inherits
// (FuseServerOptions::resumable). The connection lives while any process holds the
// descriptor, so a serving process may die and another take its place, and the descriptor may
// be handed to another supervisor (Adopt, Release).
//
// Thread-safety: none; one owner.
#pragma once

#include <memory>
#include <string>

#include "common/unique_fd.h"
#include "fuse/fuse_server.h"
#include "ossmount/status.h"

struct fuse_session;

namespace ossmount::fuse {

// The mount options FuseServer and MountedDevice give the kernel for `options`.
std::string KernelMountOptions(const FuseServerOptions& options);

class MountedDevice {
 public:
  // Mounts /dev/fuse on options.mountpoint with the options FuseServer::Mount would use.
  static Result<std::unique_ptr<MountedDevice>> Mount(const FuseServerOptions& options);
  // The descriptor of a mount on `mountpoint` that another process made and handed over.
  static std::unique_ptr<MountedDevice> Adopt(UniqueFd fd, std::string mountpoint);
  // Whether the connection of /dev/fuse descriptor `fd` still lives (it ends when its mount
  // is unmounted or aborted, or when every descriptor of it was closed before).
  static bool ConnectionAlive(int fd);
  ~MountedDevice();
  MountedDevice(const MountedDevice&) = delete;
  MountedDevice& operator=(const MountedDevice&) = delete;

  // The /dev/fuse descriptor (close-on-exec: a child that serves it clears the flag).
  int fd() const;
  // Unmounts (lazily, as FuseServer does) and closes the descriptor: requests still waiting
  // on the connection then fail. Idempotent.
  void Unmount();
  // Closes the descriptor and leaves the mount to whoever holds the connection now (a
  // supervisor it was handed to). Idempotent; Unmount does nothing after it.
  void Release();

 private:
  MountedDevice(fuse_session* se, UniqueFd adopted, std::string mountpoint)
      : se_(se), adopted_(std::move(adopted)), mountpoint_(std::move(mountpoint)) {}
  fuse_session* se_;  // the session that mounted (null when adopted or released)
  UniqueFd adopted_;  // the descriptor when adopted
  const std::string mountpoint_;
  bool mounted_ = true;
};

}  // namespace ossmount::fuse
