// DirSnapshot: the children of one directory as a complete listing showed them, sorted by
// name (bytewise) and unique. Immutable once built, and shared: a directory handle keeps the
// snapshot it read from even after the cache replaced it, so its offsets stay stable.
//
// Stored compactly, because a walk keeps one snapshot per directory for the metadata TTL
// (indefinitely by default), so a dataset of millions of files holds millions of children:
// every name and etag lives in one byte arena and each child takes a 32-byte record,
// about 80 bytes per child for names and etags of a typical dataset's length, against about
// 190 for a DirChild with its two heap strings.
//
// Thread-safety: immutable after construction; const methods may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "meta/key_mapping.h"

namespace ossmount::meta {

class DirSnapshot {
 public:
  // One child as stored. The views point into the snapshot and live as long as it does.
  struct Child {
    std::string_view name;
    NodeKind kind = NodeKind::kFile;
    uint64_t size = 0;
    int64_t mtime_sec = 0;
    std::string_view etag;
    std::optional<uint64_t> crc64;
    bool appendable = false;

    bool is_dir() const { return kind == NodeKind::kDir; }
    // The attributes as a NodeAttr that owns its etag.
    NodeAttr attr() const;
  };

  // An empty directory.
  DirSnapshot() = default;
  // REQUIRES: `children` sorted by name (bytewise) and unique, as DirectoryBuilder::Finish
  // returns them; every name a ValidComponent (at most kNameMax bytes).
  explicit DirSnapshot(const std::vector<DirChild>& children, HiddenCounts hidden = {});

  size_t size() const { return records_.size(); }
  bool empty() const { return records_.empty(); }
  // REQUIRES: i < size().
  Child child(size_t i) const;
  // The position of the child named `name`, if there is one.
  std::optional<size_t> Find(std::string_view name) const;
  // A copy with the child `name` set to `attr` (added or replaced), or removed when attr is
  // nullopt. REQUIRES: ValidComponent(name).
  DirSnapshot Patched(std::string_view name, const std::optional<NodeAttr>& attr) const;
  // What the listing hid, and why.
  const HiddenCounts& hidden() const { return hidden_; }
  // Bytes this snapshot holds (records, arena and the object itself), for the metrics.
  size_t MemoryBytes() const;

 private:
  // Where a child's strings are: its name at arena_[offset], its etag right after it, and,
  // when kHasCrc64 is set, 8 bytes of CRC-64 after the etag.
  struct Record {
    uint64_t size;
    int64_t mtime_sec;
    uint64_t offset;
    uint32_t etag_size;
    uint16_t name_size;
    uint8_t flags;
  };
  static constexpr uint8_t kDir = 1;
  static constexpr uint8_t kHasCrc64 = 2;
  static constexpr uint8_t kSymlink = 4;
  static constexpr uint8_t kAppendable = 8;

  std::string_view NameOf(const Record& r) const { return {arena_.data() + r.offset, r.name_size}; }

  std::vector<Record> records_;
  std::string arena_;
  HiddenCounts hidden_;
};

}  // namespace ossmount::meta
