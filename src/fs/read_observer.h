// ReadObserver: told what the filesystem's readers do, for whoever fetches ahead of them
// (the daemon attaches the dataset prefetcher: fs/prefetch_link.h). Set on an
// ObjectFilesystem with SetReadObserver; none by default.
//
// Thread-safety: called from FUSE and io threads, concurrently, with no filesystem lock
// held; implementations must not block, nor call back into the filesystem inline.
#pragma once

#include <string>

namespace ossmount::meta {
class DirSnapshot;
}

namespace ossmount::fs {

class ReadObserver {
 public:
  virtual ~ReadObserver() = default;

  // A handle holds `path`'s bytes now; or no READ will come for them (a large file, a
  // backing file), or a handle was released without one (the kernel's page cache served it).
  virtual void OnRead(const std::string& path) = 0;
  // Reopened files needed READs after all: the kernel's page cache no longer holds what it
  // was given (PageCacheTrust ended).
  virtual void OnPageCacheDistrusted() = 0;
  // A listing of directory `path` (relative to the root) was fetched from the server and
  // cached.
  virtual void OnListed(const std::string& path, const meta::DirSnapshot& listing) = 0;
};

}  // namespace ossmount::fs
