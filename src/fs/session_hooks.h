// SessionHooks: what the mount's session needs of a filesystem beyond the POSIX operations:
// the FUSE server (passthrough, transport buffers, the directory of a control request) and
// the daemon once the mount is gone. ObjectFilesystem implements it; the daemon hands it to
// FuseServer::Mount beside the Filesystem.
//
// Thread-safety: every method may be called concurrently from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fs/filesystem.h"

namespace ossmount::fs {

class SessionHooks {
 public:
  virtual ~SessionHooks() = default;

  // Whether Open may hand out backing files (OpenReply::backing_file): on once the kernel
  // accepted FUSE passthrough. Off until called.
  virtual void SetBackingFilesWanted(bool wanted) = 0;
  // Buffers the transport holds for requests and replies (FUSE over io_uring's ring
  // entries, as they become resident): `bytes` more count in the data buffers' budget for
  // the rest of the session.
  virtual void CountTransportBuffers(uint64_t bytes) = 0;
  // The path of directory `ino` relative to the root ("" for the root) while the kernel
  // holds it; nullopt for an unknown inode or a file.
  virtual std::optional<std::string> DirectoryPath(InodeId ino) = 0;
  // The mount is gone and no request will come: releases the file handles the kernel never
  // released (their audit records say so).
  virtual void EndSession() = 0;
};

}  // namespace ossmount::fs
