// ManifestIndex: the objects a manifest file names (--manifest), held compactly and
// answering ListObjectsV2 questions without a server.
//
// Layout (what keeps a million entries well under 200 bytes each): one arena of bytes
// holding every key (relative to the mounted prefix) followed by its etag, and one vector of
// fixed 24-byte records (arena offset, size, key length, etag length), sorted by key
// (bytewise, as OSS and S3 order keys). No std::string, map node or allocation per entry.
// Directories are not stored: a directory is the range of records sharing a prefix, found
// by binary search, so a delimiter listing skips a whole subtree in O(log n).
//
// Keys are stored as the manifest gave them, hostile ones included ('a//b', '../x'): the
// listing hands them on exactly as a server would, and meta::DirectoryBuilder hides them
// exactly as it hides such keys in a real listing.
//
// Build with ManifestIndex::Builder (meta/manifest_parser.h does). Immutable afterwards.
// Thread-safety: every const method may be called concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ossmount::meta {

class ManifestIndex {
 public:
  // Size of an entry the manifest gave without one (connector format, "KEY [LABEL]").
  static constexpr uint64_t kUnknownSize = UINT64_MAX;

  struct Entry {
    std::string_view key;   // relative to the mounted prefix
    uint64_t size = 0;      // kUnknownSize when the manifest did not say
    std::string_view etag;  // without quotes; empty when the manifest did not say
    bool complete() const { return size != kUnknownSize && !etag.empty(); }
  };

  // One page of a ListObjectsV2 over the index, in relative keys.
  struct Page {
    std::vector<size_t> objects;        // entry indexes, in key order
    std::vector<std::string> prefixes;  // common prefixes (relative), each ends with delimiter
    bool truncated = false;
    std::string next_token;  // opaque; pass back as `token` for the next page
  };

  // One entry: key bytes at arena[offset], the etag right after them.
 private:
  struct Record {
    uint64_t offset = 0;  // key bytes at arena_[offset], the etag right after them
    uint64_t size = 0;
    uint32_t key_len = 0;
    uint16_t etag_len = 0;
    uint16_t reserved = 0;
  };
  static_assert(sizeof(Record) == 24, "records must stay compact");

 public:
  class Builder {
   public:
    // Appends an entry; `line` is where it came from (for the duplicate report).
    // REQUIRES: key.size() < 2^32, etag.size() < 2^16.
    void Add(std::string_view key, uint64_t size, std::string_view etag, uint32_t line);
    size_t size() const { return records_.size(); }
    // A key given twice: the later line and the earlier one.
    struct Duplicate {
      std::string key;
      uint32_t line = 0;
      uint32_t first_line = 0;
    };
    // Sorts and hands over the index; fills `duplicates` (every key given more than once:
    // the index keeps the first).
    ManifestIndex Finish(std::vector<Duplicate>* duplicates);

   private:
    std::vector<char> arena_;
    std::vector<Record> records_;
    std::vector<uint32_t> lines_;  // parallel to records_; dropped by Finish
  };

  ManifestIndex() = default;

  size_t size() const { return records_.size(); }
  Entry at(size_t i) const;
  // The entry with exactly this relative key.
  std::optional<size_t> Find(std::string_view key) const;
  // The first entry whose key is >= key (size() if none).
  size_t LowerBound(std::string_view key) const;

  // ListObjectsV2 semantics: keys starting with `prefix`; with a delimiter, keys with the
  // delimiter after the prefix roll up into one common prefix (counted once against
  // max_keys, like an object); the page ends after max_keys objects and prefixes.
  // An unknown or malformed token starts from the beginning of `prefix`.
  Page List(std::string_view prefix, std::string_view delimiter, std::string_view token,
            int max_keys) const;

  // Bytes held by the index (arena plus records), for logs and the benchmark.
  size_t MemoryBytes() const;

 private:
  std::string_view KeyOf(const Record& r) const {
    return std::string_view(arena_.data() + r.offset, r.key_len);
  }

  std::vector<char> arena_;
  std::vector<Record> records_;
};

}  // namespace ossmount::meta
