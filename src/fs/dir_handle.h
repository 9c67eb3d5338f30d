// DirHandle: one open directory. The first listing attached stays for the handle's life, so
// offsets are stable; the inodes its replies pinned (InodeTable::Pin) are handed back at its
// release, so entries the kernel took no reference to are dropped then. A directory too large
// to hold whole is read through a DirStream instead, attached the same way.
//
// Thread-safety: thread-safe; mu_ is a leaf lock.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fs/dir_stream.h"
#include "fs/filesystem.h"
#include "meta/dir_snapshot.h"

namespace ossmount::fs {

class DirHandle {
 public:
  DirHandle(InodeId ino, std::string path) : ino_(ino), path_(std::move(path)) {}

  InodeId ino() const { return ino_; }
  const std::string& path() const { return path_; }

  // Null until the first listing is attached.
  std::shared_ptr<const meta::DirSnapshot> snapshot() const {
    std::lock_guard lock(mu_);
    return snapshot_;
  }
  // Attaches `listing` unless one is attached already; returns the one attached.
  std::shared_ptr<const meta::DirSnapshot> Attach(
      std::shared_ptr<const meta::DirSnapshot> listing) {
    std::lock_guard lock(mu_);
    if (!snapshot_) snapshot_ = std::move(listing);
    return snapshot_;
  }
  // Null unless the directory is read page by page.
  std::shared_ptr<DirStream> stream() const {
    std::lock_guard lock(mu_);
    return stream_;
  }
  // Attaches `stream` unless a listing or a stream is attached already; returns the stream
  // attached (null when a listing was).
  std::shared_ptr<DirStream> AttachStream(std::shared_ptr<DirStream> stream) {
    std::lock_guard lock(mu_);
    if (!snapshot_ && !stream_) stream_ = std::move(stream);
    return stream_;
  }
  // Whether the kernel released the handle (its reader closed the directory).
  bool released() const {
    std::lock_guard lock(mu_);
    return released_;
  }
  // Keeps `pinned` until the release; false when released already (the caller unpins them).
  bool KeepPinned(const std::vector<InodeId>& pinned) {
    std::lock_guard lock(mu_);
    if (released_) return false;
    pinned_.insert(pinned_.end(), pinned.begin(), pinned.end());
    return true;
  }
  // Marks the handle released; returns the inodes to unpin.
  std::vector<InodeId> Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    return std::exchange(pinned_, {});
  }

 private:
  const InodeId ino_;
  const std::string path_;
  mutable std::mutex mu_;  // guards the members below
  std::shared_ptr<const meta::DirSnapshot> snapshot_;
  std::shared_ptr<DirStream> stream_;
  std::vector<InodeId> pinned_;
  bool released_ = false;
};

}  // namespace ossmount::fs
