// WarmHolds: the bytes memory-mode warm-up fetched (no disk cache), held by path until the
// file's first read, after which the reader's handle holds them; and the paths being
// fetched, so that a file read while its fetch is in flight is not held afterwards.
//
// Thread-safety: none; the prefetcher guards it. Ownership: owns the holds; released ones go
// to the caller (Drops) to free outside its lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "prefetch/fetch_result.h"

namespace ossmount::prefetch {

class WarmHolds {
 public:
  // A fetch of `path` to be held has started.
  void Fetching(const std::string& path) { read_while_fetching_[path] = false; }
  // The fetch of `path` ended: whether the file was read meanwhile (then the reader has the
  // bytes and will not read again: they are not held).
  bool Fetched(const std::string& path);
  // Holds `hold` (`bytes` of `path`) until its read; a hold it replaces goes to `drop`.
  void Hold(const std::string& path, std::shared_ptr<const void> hold, uint64_t bytes, Drops& drop);
  // `path` was read: its hold goes to `drop`. Returns whether it had one.
  bool OnRead(const std::string& path, Drops& drop);
  uint64_t bytes() const { return bytes_; }

 private:
  struct Held {
    std::shared_ptr<const void> hold;
    uint64_t bytes = 0;
  };
  std::unordered_map<std::string, Held> held_;
  uint64_t bytes_ = 0;
  std::unordered_map<std::string, bool> read_while_fetching_;
};

}  // namespace ossmount::prefetch
