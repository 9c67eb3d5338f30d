// MountedDevice: a FUSE mount made and held, but not served: the supervisor's
// (daemon/supervisor.h), whose descriptor the process that serves the mount inherits
// (FuseServerOptions::resumable). The connection lives while any process holds the
// descriptor, so a serving process may die and another take its place.
//
// Thread-safety: none; one owner.
#pragma once

#include <memory>
#include <string>

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
  ~MountedDevice();
  MountedDevice(const MountedDevice&) = delete;
  MountedDevice& operator=(const MountedDevice&) = delete;

  // The /dev/fuse descriptor (close-on-exec: a child that serves it clears the flag).
  int fd() const;
  // Unmounts (lazily, as FuseServer does) and closes the descriptor: requests still waiting
  // on the connection then fail. Idempotent.
  void Unmount();

 private:
  explicit MountedDevice(fuse_session* se) : se_(se) {}
  fuse_session* se_;
  bool mounted_ = true;
};

}  // namespace ossmount::fuse
