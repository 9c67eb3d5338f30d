#include "meta/inode_table.h"

#include <limits>
#include <vector>

namespace ossmount::meta {

size_t InodeTable::NodeBytes(const Node& node) {
  // The node and its by_path_ entry, each with the hash table's per-node overhead, and the
  // path's heap bytes (libstdc++ keeps 15 inline).
  constexpr size_t kPerNode = sizeof(std::pair<const InodeId, Node>) +
                              sizeof(std::pair<const std::string_view, InodeId>) + 2 * 48;
  return kPerNode + (node.path.capacity() > 15 ? node.path.capacity() + 1 : 0);
}

InodeTable::InodeTable() {
  Node& root = by_ino_[kRootInodeId];
  root.is_dir = true;
  root.nlookup = 1;
  by_path_[root.path] = kRootInodeId;
  *bytes_ = NodeBytes(root);
}

namespace {

constexpr uint64_t kDirFlag = 1;
constexpr uint64_t kDetachedFlag = 2;
// A node record's payload: flags (8 bytes), the path's length (8) and the path.
constexpr size_t kPayloadFixed = 16;
// A node's record: its flags, then its path (Restore reads it back).
std::string NodePayload(const InodeTable::Node& node) {
  const uint64_t flags = (node.is_dir ? kDirFlag : 0) | (node.detached ? kDetachedFlag : 0);
  return RecordWriter().U64(flags).Str(node.path).bytes();
}

// A restored node's lookup count: the kernel can never forget it down to zero.
constexpr uint64_t kRestoredLookups = std::numeric_limits<uint64_t>::max() / 2;

}  // namespace

void InodeTable::RecordTo(std::unique_ptr<RecordLog> log) {
  std::lock_guard lock(mu_);
  log_ = std::move(log);
  CompactLocked();  // what was restored, in the new log
}

Status InodeTable::record_error() const {
  std::lock_guard lock(mu_);
  return log_ ? log_->error() : Status::Ok();
}

size_t InodeTable::Restore(const RecordLog::Records& records) {
  std::lock_guard lock(mu_);
  size_t restored = 0;
  for (const auto& [ino, payload] : records) {
    RecordReader in(payload);
    uint64_t flags = 0;
    std::string path;
    if (ino == kRootInodeId || !in.U64(flags) || !in.Str(path)) continue;
    Node& node = by_ino_[ino];
    node.path = std::move(path);
    node.is_dir = (flags & kDirFlag) != 0;
    node.detached = (flags & kDetachedFlag) != 0;
    node.nlookup = kRestoredLookups;
    // The kernel's page cache of the inode may hold bytes of any version.
    node.page_version = kUnknownPages;
    if (!node.detached) by_path_[node.path] = ino;
    *bytes_ += NodeBytes(node);
    next_ = std::max(next_, ino + 1);
    ++restored;
  }
  return restored;
}

void InodeTable::RecordLocked(InodeId ino, Node& node) {
  if (!log_ || ino == kRootInodeId || node.nlookup == 0) return;
  // The node's earlier record dies (about the same size: a move changes the path).
  if (node.recorded) log_->MarkDead(kPayloadFixed + node.path.size());
  log_->Put(ino, NodePayload(node));
  node.recorded = true;
  if (log_->CompactionDue()) CompactLocked();
}

void InodeTable::RecordDropLocked(InodeId ino, const Node& node) {
  if (log_ && node.recorded) {
    log_->MarkDead(kPayloadFixed + node.path.size());
    log_->Erase(ino);
    // (The dropped node has no kernel reference: a rewrite leaves it out.)
    if (log_->CompactionDue()) CompactLocked();
  }
}

void InodeTable::CompactLocked() {
  if (!log_) return;
  log_->Rewrite([this](const RecordLog::Emit& emit) {
    for (auto& [ino, node] : by_ino_) {
      if (ino == kRootInodeId || node.nlookup == 0) continue;
      emit(ino, NodePayload(node));
      node.recorded = true;
    }
  });
}

InodeId InodeTable::Ensure(const std::string& path, bool is_dir, uint64_t lookups,
                           uint64_t shown_version) {
  std::lock_guard lock(mu_);
  return EnsureLocked(path, is_dir, lookups, 0, shown_version);
}

InodeId InodeTable::Pin(const std::string& path, bool is_dir, uint64_t shown_version) {
  std::lock_guard lock(mu_);
  return EnsureLocked(path, is_dir, 0, 1, shown_version);
}

InodeId InodeTable::EnsureLocked(const std::string& path, bool is_dir, uint64_t lookups,
                                 uint32_t pins, uint64_t shown_version) {
  auto it = by_path_.find(path);
  if (it != by_path_.end()) {
    Node& node = by_ino_.at(it->second);
    if (node.is_dir == is_dir || it->second == kRootInodeId) {
      node.nlookup += lookups;
      node.pins += pins;
      if (!node.recorded) RecordLocked(it->second, node);
      if (shown_version != 0) ShowVersionLocked(node, shown_version);
      return it->second;
    }
    // Kind changed: detach the old inode (it stays until forgotten and unpinned, or goes
    // now if unused).
    const InodeId old = it->second;
    const bool unused = node.nlookup == 0 && node.pins == 0;
    by_path_.erase(it);  // before the node whose path its key views
    node.detached = true;
    if (unused) {
      RecordDropLocked(old, node);
      *bytes_ -= NodeBytes(node);
      by_ino_.erase(old);
    } else if (node.recorded) {
      RecordLocked(old, node);
    }
  }
  InodeId ino = next_++;
  Node& node = by_ino_[ino];
  node.path = path;
  node.is_dir = is_dir;
  node.nlookup = lookups;
  node.pins = pins;
  node.shown_version = shown_version;
  by_path_[node.path] = ino;
  *bytes_ += NodeBytes(node);
  RecordLocked(ino, node);
  return ino;
}

void InodeTable::Move(const std::string& from, const std::string& to) {
  auto under = [](const std::string& path, const std::string& dir) {
    return path == dir || (path.size() > dir.size() && path[dir.size()] == '/' &&
                           path.compare(0, dir.size(), dir) == 0);
  };
  std::lock_guard lock(mu_);
  std::vector<InodeId> moving, replaced;
  for (const auto& [path, ino] : by_path_) {
    if (ino == kRootInodeId) continue;
    if (under(std::string(path), from))
      moving.push_back(ino);
    else if (under(std::string(path), to))
      replaced.push_back(ino);
  }
  for (InodeId ino : replaced) {
    by_path_.erase(by_ino_.at(ino).path);
    by_ino_.at(ino).detached = true;
    if (!DropIfUnusedLocked(ino) && by_ino_.at(ino).recorded) RecordLocked(ino, by_ino_.at(ino));
  }
  for (InodeId ino : moving) {
    Node& node = by_ino_.at(ino);
    by_path_.erase(node.path);  // before the string its key views changes
    *bytes_ -= NodeBytes(node);
    node.path = to + node.path.substr(from.size());
    *bytes_ += NodeBytes(node);
  }
  for (InodeId ino : moving) {
    Node& node = by_ino_.at(ino);
    by_path_[node.path] = ino;
    if (node.recorded) RecordLocked(ino, node);
  }
}

bool InodeTable::DropIfUnusedLocked(InodeId ino) {
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end() || ino == kRootInodeId) return false;
  const Node& node = it->second;
  if (node.nlookup > 0 || node.pins > 0) return false;
  auto p = by_path_.find(node.path);
  if (p != by_path_.end() && p->second == ino) by_path_.erase(p);
  RecordDropLocked(ino, node);
  *bytes_ -= NodeBytes(node);
  by_ino_.erase(it);
  return true;
}

bool InodeTable::Unpin(InodeId ino) {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end() || it->second.pins == 0) return false;
  --it->second.pins;
  return DropIfUnusedLocked(ino);
}

bool InodeTable::AddLookup(InodeId ino) {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return false;
  ++it->second.nlookup;
  if (!it->second.recorded) RecordLocked(ino, it->second);
  return true;
}

void InodeTable::MarkPageCached(InodeId ino) {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it != by_ino_.end()) it->second.page_cached = true;
}

bool InodeTable::ShowVersion(InodeId ino, uint64_t version) {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  return it != by_ino_.end() && ShowVersionLocked(it->second, version);
}

bool InodeTable::ShowVersionLocked(Node& node, uint64_t version) {
  const bool changed = node.shown_version != 0 && node.shown_version != version;
  node.shown_version = version;
  if (changed) node.page_cached = false;  // those pages are of the version shown before
  return changed;
}

bool InodeTable::OpenPages(InodeId ino, uint64_t version) {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return false;
  Node& node = it->second;
  const bool clean = node.page_version == kNoPages || node.page_version == version;
  node.page_version = version;
  return clean;
}

void InodeTable::ForgetPages(InodeId ino) {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it != by_ino_.end()) it->second.page_version = kUnknownPages;
}

bool InodeTable::Detach(InodeId ino) {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end() || ino == kRootInodeId || it->second.detached) return false;
  Node& node = it->second;
  auto p = by_path_.find(node.path);
  if (p == by_path_.end() || p->second != ino) return false;
  by_path_.erase(p);
  node.detached = true;
  if (!DropIfUnusedLocked(ino) && node.recorded) RecordLocked(ino, node);
  return true;
}

bool InodeTable::PageCached(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = by_path_.find(path);
  if (it == by_path_.end()) return false;
  auto node = by_ino_.find(it->second);
  return node != by_ino_.end() && node->second.page_cached;
}

bool InodeTable::Forget(InodeId ino, uint64_t n) {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return false;
  Node& node = it->second;
  node.nlookup = n >= node.nlookup ? 0 : node.nlookup - n;
  return DropIfUnusedLocked(ino);
}

std::optional<InodeTable::Node> InodeTable::Get(InodeId ino) const {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return std::nullopt;
  return it->second;
}

std::optional<InodeId> InodeTable::Find(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = by_path_.find(path);
  if (it == by_path_.end()) return std::nullopt;
  return it->second;
}

size_t InodeTable::size() const {
  std::lock_guard lock(mu_);
  return by_ino_.size();
}

}  // namespace ossmount::meta
