// OpenFiles: the files this mount has open, by inode: how many readers, of which object
// version, and whether a writer has it. A reader and a writer of one inode, or readers of two
// versions, would share the kernel's page cache of that inode and see each other's pages, so
// the filesystem never lets them meet on one inode: a second version gets an inode of its own
// (InodeTable::Detach), and a writer's path is its own until released.
//
// Thread-safety: thread-safe; mu_ is a leaf lock.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "fs/filesystem.h"
#include "meta/key_mapping.h"

namespace ossmount::fs {

// The fingerprint of an object version that OpenFiles and the inode table keep: nonzero, and
// one for every version of an appendable object (it only grows).
uint64_t VersionFingerprint(const meta::NodeAttr& attr);

class OpenFiles {
 public:
  // The object version a reader pinned at open (its size and mtime answer a getattr of an
  // inode detached from its path while the reader has it open).
  struct Version {
    uint64_t fingerprint = 0;  // nonzero
    uint64_t size = 0;
    int64_t mtime_sec = 0;
  };

  enum class Verdict {
    kOpened,
    kOtherVersionOpen,  // readers of another version have the inode open
    kWriterOpen,        // a writer has it open
    kReadersOpen,       // readers have it open (for a writer)
  };

  // Registers a reader of `version` unless a writer, or a reader of another version, has the
  // inode open. Each kOpened needs one EndRead.
  Verdict BeginRead(InodeId ino, const Version& version);
  void EndRead(InodeId ino);
  // Registers a writer unless readers or a writer have the inode open. Each kOpened needs one
  // EndWrite. `shares`: an appending writer, whose readers may open the inode meanwhile
  // (they read what the server has, not the page cache: OpenReply::direct_io).
  Verdict BeginWrite(InodeId ino, bool shares = false);
  void EndWrite(InodeId ino);

  // The version the inode's readers pinned, while one has it open.
  std::optional<Version> ReadersVersion(InodeId ino) const;
  // Inodes with open files (for stats and tests).
  size_t size() const;

 private:
  struct State {
    Version version;
    uint32_t readers = 0;
    bool writer = false;
    bool writer_shares = false;
  };
  // Drops the state of an inode nobody has open. REQUIRES mu_.
  void EraseIfClosedLocked(std::unordered_map<InodeId, State>::iterator it);

  mutable std::mutex mu_;  // guards open_
  std::unordered_map<InodeId, State> open_;
};

}  // namespace ossmount::fs
