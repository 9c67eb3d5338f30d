// HintPaths: the paths of one sampler-order hint list, compactly, and the positions of each.
//
// One arena of path bytes with a 32-bit end offset per position, an open-addressing table
// (load at most 2/3) from a path to its first position, and the positions of the same path
// chained in list order. Beside the path's own bytes a position costs 4 (offset) + 4 (chain)
// + 6 (table) = 14 bytes: 50 bytes for "train/n01440764/n01440764_10026.JPEG" against 280 for
// a vector<string> with an unordered_map<string, vector<size_t>> (measured with mallinfo2 on
// 1.28 million such paths). The control channel's memory budget charges Bytes(), and
// BytesFor predicts it before anything is allocated: every buffer is reserved exactly once.
//
// Limits (Fits): fewer than 2^32 - 1 positions and 4 GiB of path bytes in one list.
// Building: Reserve, Add each path, then Index() once; after that it is immutable.
// Thread-safety: none while building; an indexed HintPaths may be read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace ossmount::prefetch {

class HintPaths {
 public:
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

  // Whether a list of `count` paths totalling `bytes` can be held at all.
  static bool Fits(uint64_t count, uint64_t bytes) {
    return count < kNone && bytes <= std::numeric_limits<uint32_t>::max();
  }
  // Bytes() of an indexed list of `count` paths totalling `bytes`.
  static uint64_t BytesFor(uint64_t count, uint64_t bytes);

  // Room for `count` paths of `bytes` in all; REQUIRES Fits(count, bytes) and nothing added.
  void Reserve(size_t count, uint64_t bytes);
  // REQUIRES: not indexed, Fits(size() + 1, path_bytes() + path.size()).
  void Add(std::string_view path);
  // Builds the table and the chains (after the last Add).
  void Index();
  // `a` followed by `b`, indexed.
  static HintPaths Concat(const HintPaths& a, const HintPaths& b);

  bool indexed() const { return !table_.empty(); }
  size_t size() const { return ends_.size(); }
  uint64_t path_bytes() const { return arena_.size(); }
  std::string_view operator[](size_t pos) const {
    const uint32_t begin = pos == 0 ? 0 : ends_[pos - 1];
    return std::string_view(arena_.data() + begin, ends_[pos] - begin);
  }
  // The first position of `path`, or kNone; then Next(pos) until kNone, in list order.
  uint32_t First(std::string_view path) const;
  uint32_t Next(uint32_t pos) const { return next_[pos]; }
  // What the buffers hold, from their capacities.
  uint64_t Bytes() const;

 private:
  static uint64_t TableSize(uint64_t count) { return count + count / 2 + 1; }
  size_t Slot(std::string_view path) const;

  std::vector<char> arena_;
  std::vector<uint32_t> ends_;   // ends_[i]: the end of path i in arena_
  std::vector<uint32_t> next_;   // the next position of the same path, or kNone
  std::vector<uint32_t> table_;  // first positions of distinct paths; kNone: empty slot
};

}  // namespace ossmount::prefetch
