// BlockIndex: which blocks the disk cache holds, the size of each one's file, their order of
// use, and the byte total that --max-cache-size bounds.
//
// Pure: no I/O, no threads. One node per block (binary digest, size, generation,
// intrusive LRU links; 72 bytes, no other allocation). Eviction drops least recently used
// entries and calls `evicted` with each one's digest first, so that the owner removes the
// file under the same lock. A block's generation changes whenever it is indexed anew, so a
// Forget for a version that was found bad never drops a newer one.
//
// Thread-safety: none; the owner serializes every call (DiskBlockCache under its mu_).
#pragma once

#include <boost/intrusive/list.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_set>
#include <vector>

#include "data/block_file.h"

namespace ossmount::data {

class BlockIndex {
 public:
  // Called for each evicted block, before its entry is dropped; must not use the index.
  using EvictedFn = std::function<void(const BlockDigest&)>;

  // `max_bytes`: the budget EvictToFit keeps the total within.
  explicit BlockIndex(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  BlockIndex(const BlockIndex&) = delete;
  BlockIndex& operator=(const BlockIndex&) = delete;

  bool Contains(const BlockDigest& digest) const;
  // Makes the block the most recently used; its generation, or nullopt when not indexed.
  std::optional<uint64_t> Touch(const BlockDigest& digest);
  // REQUIRES: `digest` not indexed. Indexes it as the most recently used block.
  void Insert(const BlockDigest& digest, uint64_t size);
  // Drops the block if it is still the version `generation`; true when it was dropped.
  bool Forget(const BlockDigest& digest, uint64_t generation);

  // Evicts least recently used blocks until at least `bytes` are freed or none is left;
  // returns the bytes freed (for the free-space floor: evicting by a shortfall).
  uint64_t EvictLeastRecent(uint64_t bytes, const EvictedFn& evicted);
  // Evicts least recently used blocks until `incoming` more bytes fit within max_bytes.
  void EvictToFit(uint64_t incoming, const EvictedFn& evicted);

  // Start-up loading: AddFound for every block found, in any order, then OrderFound once.
  // In between, only Reserve, AddFound, Contains, bytes() and blocks() may be called.
  void Reserve(size_t blocks);
  // Indexes a block outside the LRU order for now; `recency` (an mtime) orders it later. A
  // digest already indexed is ignored.
  void AddFound(const BlockDigest& digest, uint64_t size, uint64_t recency);
  // Puts the found blocks in LRU order, least recent first, as the most recently used.
  void OrderFound();

  uint64_t max_bytes() const { return max_bytes_; }
  uint64_t bytes() const { return bytes_; }
  size_t blocks() const { return index_.size(); }
  uint64_t evictions() const { return evictions_; }  // since construction

 private:
  using LruHook = boost::intrusive::list_member_hook<
      boost::intrusive::link_mode<boost::intrusive::normal_link>>;
  // The set finds entries by `digest` alone, which never changes; the other fields are
  // mutable so that they change in place.
  struct Entry {
    explicit Entry(const BlockDigest& d) : digest(d) {}
    BlockDigest digest;
    mutable LruHook lru;              // in lru_ exactly while in index_ (but while loading)
    mutable uint64_t size = 0;        // of the file, header included
    mutable uint64_t generation = 0;  // while loading: the recency AddFound was given
  };
  struct EntryHash {
    size_t operator()(const Entry& e) const noexcept { return BlockDigestHash()(e.digest); }
  };
  struct EntryEqual {
    bool operator()(const Entry& a, const Entry& b) const noexcept { return a.digest == b.digest; }
  };
  using Index = std::unordered_set<Entry, EntryHash, EntryEqual>;
  using Lru =
      boost::intrusive::list<Entry, boost::intrusive::member_hook<Entry, LruHook, &Entry::lru>,
                             boost::intrusive::constant_time_size<false>>;

  // The set hands out const entries; the LRU list needs the entry itself.
  static Entry& Mutable(const Entry& e) { return const_cast<Entry&>(e); }
  void Erase(Index::iterator it);

  const uint64_t max_bytes_;
  Index index_;
  Lru lru_;  // front = least recently used; declared after index_, so destroyed first
  std::vector<const Entry*> found_;  // AddFound's entries until OrderFound
  uint64_t bytes_ = 0;
  uint64_t generation_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace ossmount::data
