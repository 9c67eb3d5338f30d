// InodeTable: inode numbers for paths, with the kernel's lookup counts.
//
// A path keeps its inode number while the kernel references it (lookup count > 0) or while
// an open directory handle that listed it pins it; numbers are never reused within a mount
// (a counter). An inode with neither is dropped (the root never is). Entries a readdir
// reply hands out are pinned by their directory handle (Pin) until it is released
// (Unpin): a readdirplus entry gains its kernel reference (AddLookup) before that and
// lives on; a plain readdir entry, or one that did not fit in the reply, is dropped then,
// so memory does not grow with the number of names ever listed.
// When a path changes kind (a file became a directory), Ensure gives it a fresh inode and
// the old one lives on, detached from the path, until the kernel forgets it: the kernel
// must never see one inode change type. Detach does the same on request: a new version of a
// file opened while another version is open gets an inode (and a page cache) of its own.
//
// A table may keep a RecordLog of the nodes the kernel references (RecordTo), written before
// the kernel is handed each one, so that the next daemon process on the same FUSE connection
// can Restore them: a node is recorded from its first kernel reference until it is dropped,
// with each change of its path or detachment. Nodes only pinned by a listing are not.
//
// Thread-safety: all methods are thread-safe (one mutex, mu_, a leaf lock: no callbacks or
// other locks are taken while it is held).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/record_log.h"

namespace ossmount::meta {

using InodeId = uint64_t;
constexpr InodeId kRootInodeId = 1;

class InodeTable {
 public:
  // Fields ordered to pack: a walk of a dataset keeps one node per name the kernel holds.
  struct Node {
    std::string path;
    uint64_t nlookup = 0;
    // A fingerprint of the object version whose attributes the kernel was last handed for
    // this inode (by a lookup, getattr, readdirplus or open); 0 when none yet. The kernel
    // keeps those attributes (the file's size above all) until its attribute timeout, so
    // an open that finds another version must tell it to drop them (ShowVersion).
    uint64_t shown_version = 0;
    // The object version whose bytes the kernel's page cache of this inode may hold
    // (OpenPages): kNoPages while no file of it was opened, kUnknownPages after a writer.
    uint64_t page_version = kNoPages;
    uint32_t pins = 0;  // open directory handles that listed it (Pin/Unpin)
    bool is_dir = false;
    // Bytes of this inode were replied to a READ: the kernel's page cache of the inode,
    // which lives as long as the kernel references it, may hold them.
    bool page_cached = false;
    // No longer the inode of `path` (Detach, or the path changed kind): it lives on for the
    // kernel's references and open files, and `path` is where it was.
    bool detached = false;
    bool recorded = false;  // in the record log (RecordTo)
  };
  static constexpr uint64_t kNoPages = 0;
  static constexpr uint64_t kUnknownPages = ~uint64_t{0};

  InodeTable();

  // Records from now on the nodes the kernel references in `log` (the key is the inode; the
  // payload its kind, detachment and path). Call before the first lookup, after Restore.
  void RecordTo(std::unique_ptr<RecordLog> log);
  // The first error writing the record log (OK without one).
  Status record_error() const;
  // Brings back the nodes an earlier process recorded on the same connection (RecordLog::Load
  // of its log), with their numbers, paths and kinds. Each gets a lookup count that never
  // reaches zero: the kernel's count of it died with that process, and a count too high only
  // keeps a node in memory while one too low would drop a node the kernel still uses. New
  // inodes are numbered after the highest restored. Before the first use; returns how many
  // nodes came back (records that cannot be read are skipped).
  size_t Restore(const RecordLog::Records& records);

  // The inode of `path` with kind `is_dir`, created if needed; adds `lookups` to its count.
  // A nonzero `shown_version` is recorded as the version the kernel is being handed (another
  // one than before clears page_cached, as ShowVersion does).
  InodeId Ensure(const std::string& path, bool is_dir, uint64_t lookups,
                 uint64_t shown_version = 0);
  // The inode of `path` like Ensure(path, is_dir, 0, shown_version), pinned once more: it
  // is not dropped before the matching Unpin, whatever the kernel's count.
  InodeId Pin(const std::string& path, bool is_dir, uint64_t shown_version = 0);
  // Releases one Pin. Returns true when the inode was dropped (no pin and no reference).
  bool Unpin(InodeId ino);
  // Adds one kernel reference. False when the inode is unknown.
  bool AddLookup(InodeId ino);
  // Subtracts n (saturating at 0). Returns true when the inode was dropped.
  bool Forget(InodeId ino, uint64_t n);
  std::optional<Node> Get(InodeId ino) const;
  // Sets the inode's page_cached (no-op for an unknown inode).
  void MarkPageCached(InodeId ino);
  // Records that the kernel is being handed the attributes of `version` (nonzero) of the
  // inode's object. Returns true when it was handed another version before: the size and
  // pages it may still hold are of that one. page_cached is cleared then. False for an
  // unknown inode or the same version.
  bool ShowVersion(InodeId ino, uint64_t version);
  // The page_cached of the current inode of `path` (false when it has none).
  bool PageCached(const std::string& path) const;
  // A file of `version` (nonzero) of the inode's object is being opened for reading. The
  // kernel's page cache of an inode is shared by all its open files and kept across opens
  // (keep_cache): returns true when it can hold nothing of another version (no file of the
  // inode was opened yet, or the last was of this version and no writer came since), so the
  // kernel may keep it; false when the open must have the kernel drop it. Either way the page
  // cache holds `version` from now on. False for an unknown inode.
  bool OpenPages(InodeId ino, uint64_t version);
  // A writer opened the inode: its page cache may hold bytes of no complete version.
  void ForgetPages(InodeId ino);
  // Detaches the inode from its path: the path's next Ensure makes a new inode, while this
  // one lives on (its kernel references, pins and open files) until unused. True when it was
  // the path's inode.
  bool Detach(InodeId ino);
  // A rename: the inode of `from`, and of every path under it, now has the path `to` (or the
  // same path under `to`), keeping its number, as the kernel expects. Inodes that had those
  // paths before are detached (they live on until the kernel forgets them).
  void Move(const std::string& from, const std::string& to);
  // The current inode of a path, if any (for tests and diagnostics).
  std::optional<InodeId> Find(const std::string& path) const;
  size_t size() const;
  // The bytes the table holds (estimated): about 150 plus the path per inode. Lock-free, so
  // that the metadata cache can weigh it against their shared budget.
  size_t bytes() const { return bytes_->load(std::memory_order_relaxed); }
  // The counter bytes() reads, for whoever must read it after the table is gone.
  std::shared_ptr<const std::atomic<size_t>> bytes_counter() const { return bytes_; }

 private:
  InodeId EnsureLocked(const std::string& path, bool is_dir, uint64_t lookups, uint32_t pins,
                       uint64_t shown_version);
  // ShowVersion for a node found under mu_.
  static bool ShowVersionLocked(Node& node, uint64_t version);
  // Drops `ino` if it has no kernel reference and no pin (never the root).
  bool DropIfUnusedLocked(InodeId ino);
  static size_t NodeBytes(const Node& node);
  // Writes the node's record (when the kernel references it) or its erasure. REQUIRES mu_.
  void RecordLocked(InodeId ino, Node& node);
  void RecordDropLocked(InodeId ino, const Node& node);
  void CompactLocked();

  // mu_ guards by_ino_, by_path_ and next_.
  mutable std::mutex mu_;
  std::unordered_map<InodeId, Node> by_ino_;
  // Keyed by a view of the path its inode's Node holds: each path is stored once. A node
  // never moves (unordered_map nodes are stable) and its path never changes, and an entry
  // here goes no later than the node it views (a node detached by a kind change lives on
  // without one).
  std::unordered_map<std::string_view, InodeId> by_path_;
  InodeId next_ = kRootInodeId + 1;
  std::unique_ptr<RecordLog> log_;  // null: nothing recorded
  // Written under mu_.
  const std::shared_ptr<std::atomic<size_t>> bytes_ = std::make_shared<std::atomic<size_t>>(0);
};

}  // namespace ossmount::meta
