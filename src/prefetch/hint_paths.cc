#include "prefetch/hint_paths.h"

#include <cassert>
#include <cstring>
#include <functional>

namespace ossmount::prefetch {

uint64_t HintPaths::BytesFor(uint64_t count, uint64_t bytes) {
  return bytes + count * (sizeof(uint32_t) * 2) + TableSize(count) * sizeof(uint32_t);
}

uint64_t HintPaths::Bytes() const {
  return arena_.capacity() +
         (ends_.capacity() + next_.capacity() + table_.capacity()) * sizeof(uint32_t);
}

void HintPaths::Reserve(size_t count, uint64_t bytes) {
  assert(Fits(count, bytes) && ends_.empty());
  arena_.reserve(bytes);
  ends_.reserve(count);
}

void HintPaths::Add(std::string_view path) {
  assert(table_.empty() && Fits(ends_.size() + 1, arena_.size() + path.size()));
  arena_.insert(arena_.end(), path.begin(), path.end());
  ends_.push_back(static_cast<uint32_t>(arena_.size()));
}

size_t HintPaths::Slot(std::string_view path) const {
  // Multiply-shift maps the hash onto a table of any size, so the table is sized to the
  // list (3/2 of it), not rounded up to a power of two.
  const uint64_t h = std::hash<std::string_view>{}(path);
  return static_cast<size_t>((static_cast<unsigned __int128>(h) * table_.size()) >> 64);
}

void HintPaths::Index() {
  const size_t n = ends_.size();
  next_.reserve(n);  // exact: Bytes() is what BytesFor said
  next_.assign(n, kNone);
  table_.reserve(TableSize(n));
  table_.assign(TableSize(n), kNone);
  // From the last position to the first: each path's slot ends up holding its first
  // position, and each position chains to the next one of the same path, without a
  // "last seen" array.
  for (size_t pos = n; pos-- > 0;) {
    const std::string_view path = (*this)[pos];
    size_t slot = Slot(path);
    while (true) {
      const uint32_t at = table_[slot];
      if (at == kNone) {
        table_[slot] = static_cast<uint32_t>(pos);
        break;
      }
      if ((*this)[at] == path) {
        next_[pos] = at;
        table_[slot] = static_cast<uint32_t>(pos);
        break;
      }
      if (++slot == table_.size()) slot = 0;
    }
  }
}

uint32_t HintPaths::First(std::string_view path) const {
  if (table_.empty()) return kNone;
  size_t slot = Slot(path);
  while (true) {
    const uint32_t at = table_[slot];
    if (at == kNone || (*this)[at] == path) return at;
    if (++slot == table_.size()) slot = 0;
  }
}

HintPaths HintPaths::Concat(const HintPaths& a, const HintPaths& b) {
  HintPaths out;
  out.Reserve(a.size() + b.size(), a.path_bytes() + b.path_bytes());
  out.arena_.insert(out.arena_.end(), a.arena_.begin(), a.arena_.end());
  out.arena_.insert(out.arena_.end(), b.arena_.begin(), b.arena_.end());
  out.ends_.insert(out.ends_.end(), a.ends_.begin(), a.ends_.end());
  const auto shift = static_cast<uint32_t>(a.path_bytes());
  for (uint32_t end : b.ends_) out.ends_.push_back(end + shift);
  out.Index();
  return out;
}

}  // namespace ossmount::prefetch
