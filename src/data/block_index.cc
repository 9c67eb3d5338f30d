#include "data/block_index.h"

#include <algorithm>

namespace ossmount::data {

bool BlockIndex::Contains(const BlockDigest& digest) const {
  return index_.count(Entry(digest)) > 0;
}

std::optional<uint64_t> BlockIndex::Touch(const BlockDigest& digest) {
  auto it = index_.find(Entry(digest));
  if (it == index_.end()) return std::nullopt;
  lru_.splice(lru_.end(), lru_, lru_.iterator_to(Mutable(*it)));
  return it->generation;
}

void BlockIndex::Insert(const BlockDigest& digest, uint64_t size) {
  auto [it, inserted] = index_.emplace(digest);
  it->size = size;
  it->generation = ++generation_;
  lru_.push_back(Mutable(*it));
  bytes_ += size;
}

bool BlockIndex::Forget(const BlockDigest& digest, uint64_t generation) {
  auto it = index_.find(Entry(digest));
  if (it == index_.end() || it->generation != generation) return false;
  Erase(it);
  return true;
}

uint64_t BlockIndex::EvictLeastRecent(uint64_t bytes, const EvictedFn& evicted) {
  uint64_t freed = 0;
  while (freed < bytes && !lru_.empty()) {
    auto it = index_.find(lru_.front());
    freed += it->size;
    evicted(it->digest);
    Erase(it);
    ++evictions_;
  }
  return freed;
}

void BlockIndex::EvictToFit(uint64_t incoming, const EvictedFn& evicted) {
  const uint64_t wanted = bytes_ + incoming;
  EvictLeastRecent(wanted > max_bytes_ ? wanted - max_bytes_ : 0, evicted);
}

void BlockIndex::Reserve(size_t blocks) {
  index_.reserve(blocks);
  found_.reserve(blocks);
}

void BlockIndex::AddFound(const BlockDigest& digest, uint64_t size, uint64_t recency) {
  auto [it, inserted] = index_.emplace(digest);
  if (!inserted) return;
  it->size = size;
  it->generation = recency;
  bytes_ += size;
  found_.push_back(&*it);
}

void BlockIndex::OrderFound() {
  // One sort of pointers: 8 bytes per block at the peak, where a list of what was found
  // would take 48 (half a gigabyte for a cache of ten million blocks).
  std::sort(found_.begin(), found_.end(),
            [](const Entry* a, const Entry* b) { return a->generation < b->generation; });
  for (const Entry* e : found_) {
    e->generation = ++generation_;
    lru_.push_back(Mutable(*e));
  }
  found_ = {};
}

void BlockIndex::Erase(Index::iterator it) {
  bytes_ -= it->size;
  lru_.erase(lru_.iterator_to(Mutable(*it)));
  index_.erase(it);
}

}  // namespace ossmount::data
