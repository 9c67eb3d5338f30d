#include "fs/open_files.h"

#include <functional>
#include <string_view>

#include "meta/inode_table.h"

namespace ossmount::fs {

uint64_t VersionFingerprint(const meta::NodeAttr& attr) {
  // An appendable object only grows: its bytes stay, so its readers keep one inode and one
  // version while it does (each append changes its etag and size).
  if (attr.appendable) return 0xA99E7DAB1Eull;
  const uint64_t h = std::hash<std::string_view>{}(attr.etag) ^ (attr.size * 0x9E3779B97F4A7C15ull);
  return h == meta::InodeTable::kNoPages || h == meta::InodeTable::kUnknownPages ? 1 : h;
}

OpenFiles::Verdict OpenFiles::BeginRead(InodeId ino, const Version& version) {
  std::lock_guard lock(mu_);
  State& state = open_[ino];
  if (state.writer && !state.writer_shares) return Verdict::kWriterOpen;
  if (state.readers > 0 && state.version.fingerprint != version.fingerprint) {
    return Verdict::kOtherVersionOpen;
  }
  if (state.readers == 0) state.version = version;
  ++state.readers;
  return Verdict::kOpened;
}

void OpenFiles::EndRead(InodeId ino) {
  std::lock_guard lock(mu_);
  auto it = open_.find(ino);
  if (it == open_.end() || it->second.readers == 0) return;
  --it->second.readers;
  EraseIfClosedLocked(it);
}

OpenFiles::Verdict OpenFiles::BeginWrite(InodeId ino, bool shares) {
  std::lock_guard lock(mu_);
  State& state = open_[ino];
  if (state.writer) return Verdict::kWriterOpen;
  if (state.readers > 0) return Verdict::kReadersOpen;
  state.writer = true;
  state.writer_shares = shares;
  return Verdict::kOpened;
}

void OpenFiles::EndWrite(InodeId ino) {
  std::lock_guard lock(mu_);
  auto it = open_.find(ino);
  if (it == open_.end()) return;
  it->second.writer = false;
  EraseIfClosedLocked(it);
}

std::optional<OpenFiles::Version> OpenFiles::ReadersVersion(InodeId ino) const {
  std::lock_guard lock(mu_);
  auto it = open_.find(ino);
  if (it == open_.end() || it->second.readers == 0) return std::nullopt;
  return it->second.version;
}

size_t OpenFiles::size() const {
  std::lock_guard lock(mu_);
  return open_.size();
}

void OpenFiles::EraseIfClosedLocked(std::unordered_map<InodeId, State>::iterator it) {
  if (it->second.readers == 0 && !it->second.writer) open_.erase(it);
}

}  // namespace ossmount::fs
