#include "meta/dir_snapshot.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace ossmount::meta {

NodeAttr DirSnapshot::Child::attr() const {
  NodeAttr a;
  a.kind = kind;
  a.size = size;
  a.mtime_sec = mtime_sec;
  a.etag = std::string(etag);
  a.crc64 = crc64;
  a.appendable = appendable;
  return a;
}

DirSnapshot::DirSnapshot(const std::vector<DirChild>& children, HiddenCounts hidden)
    : hidden_(hidden) {
  static_assert(sizeof(Record) == 32, "the per-child cost the header states");
  size_t arena_size = 0;
  for (const DirChild& c : children) {
    arena_size += c.name.size() + c.attr.etag.size() + (c.attr.crc64 ? sizeof(uint64_t) : 0);
  }
  records_.reserve(children.size());
  arena_.reserve(arena_size);
  for (const DirChild& c : children) {
    assert(c.name.size() <= kNameMax);
    assert(records_.empty() || NameOf(records_.back()) < c.name);
    Record r{};
    r.size = c.attr.size;
    r.mtime_sec = c.attr.mtime_sec;
    r.offset = arena_.size();
    r.name_size = static_cast<uint16_t>(c.name.size());
    r.etag_size = static_cast<uint32_t>(c.attr.etag.size());
    r.flags = static_cast<uint8_t>(
        (c.attr.is_dir() ? kDir : 0) | (c.attr.is_symlink() ? kSymlink : 0) |
        (c.attr.appendable ? kAppendable : 0) | (c.attr.crc64 ? kHasCrc64 : 0));
    arena_.append(c.name);
    arena_.append(c.attr.etag);
    if (c.attr.crc64) {
      char crc[sizeof(uint64_t)];
      std::memcpy(crc, &*c.attr.crc64, sizeof(crc));
      arena_.append(crc, sizeof(crc));
    }
    records_.push_back(r);
  }
}

DirSnapshot::Child DirSnapshot::child(size_t i) const {
  const Record& r = records_[i];
  Child c;
  c.name = NameOf(r);
  c.kind = (r.flags & kDir)       ? NodeKind::kDir
           : (r.flags & kSymlink) ? NodeKind::kSymlink
                                  : NodeKind::kFile;
  c.appendable = (r.flags & kAppendable) != 0;
  c.size = r.size;
  c.mtime_sec = r.mtime_sec;
  const char* etag = arena_.data() + r.offset + r.name_size;
  c.etag = std::string_view(etag, r.etag_size);
  if (r.flags & kHasCrc64) {
    uint64_t crc;
    std::memcpy(&crc, etag + r.etag_size, sizeof(crc));
    c.crc64 = crc;
  }
  return c;
}

std::optional<size_t> DirSnapshot::Find(std::string_view name) const {
  auto it = std::lower_bound(records_.begin(), records_.end(), name,
                             [this](const Record& r, std::string_view n) { return NameOf(r) < n; });
  if (it == records_.end() || NameOf(*it) != name) return std::nullopt;
  return static_cast<size_t>(it - records_.begin());
}

size_t DirSnapshot::MemoryBytes() const {
  return sizeof(*this) + records_.capacity() * sizeof(Record) + arena_.capacity();
}

DirSnapshot DirSnapshot::Patched(std::string_view name, const std::optional<NodeAttr>& attr) const {
  std::vector<DirChild> children;
  children.reserve(size() + 1);
  bool placed = false;
  for (size_t i = 0; i < size(); ++i) {
    Child c = child(i);
    if (!placed && c.name >= name) {
      placed = true;
      if (attr) children.push_back(DirChild{std::string(name), *attr});
      if (c.name == name) continue;
    }
    children.push_back(DirChild{std::string(c.name), c.attr()});
  }
  if (!placed && attr) children.push_back(DirChild{std::string(name), *attr});
  return DirSnapshot(children, hidden_);
}

}  // namespace ossmount::meta
