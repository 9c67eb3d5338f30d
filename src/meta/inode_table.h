// InodeTable: inode numbers for paths, with the kernel's lookup counts.
//
// A path keeps its inode number while the kernel references it (lookup count > 0) or while
// nobody dropped it yet; numbers are never reused within a mount (a counter). An inode
// whose count reaches zero is dropped (the root never is). Inodes handed out by ReadDir
// without a kernel reference (count 0) stay until the path is looked up and forgotten.
// When a path changes kind (a file became a directory), Ensure gives it a fresh inode and
// the old one lives on, detached from the path, until the kernel forgets it: the kernel
// must never see one inode change type.
//
// Thread-safety: all methods are thread-safe (one mutex, mu_, a leaf lock: no callbacks or
// other locks are taken while it is held).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace ossmount::meta {

using InodeId = uint64_t;
constexpr InodeId kRootInodeId = 1;

class InodeTable {
 public:
  struct Node {
    std::string path;
    bool is_dir = false;
    uint64_t nlookup = 0;
  };

  InodeTable();

  // The inode of `path` with kind `is_dir`, created if needed; adds `lookups` to its count.
  InodeId Ensure(const std::string& path, bool is_dir, uint64_t lookups);
  // Adds one kernel reference. False when the inode is unknown.
  bool AddLookup(InodeId ino);
  // Subtracts n (saturating at 0). Returns true when the inode was dropped.
  bool Forget(InodeId ino, uint64_t n);
  std::optional<Node> Get(InodeId ino) const;
  // The current inode of a path, if any (for tests and diagnostics).
  std::optional<InodeId> Find(const std::string& path) const;
  size_t size() const;

 private:
  // mu_ guards by_ino_, by_path_ and next_.
  mutable std::mutex mu_;
  std::unordered_map<InodeId, Node> by_ino_;
  std::unordered_map<std::string, InodeId> by_path_;
  InodeId next_ = kRootInodeId + 1;
};

}  // namespace ossmount::meta
