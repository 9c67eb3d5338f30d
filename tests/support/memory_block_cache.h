// MemoryBlockCache: a DiskBlockCache in memory, for tests of its users.
//
// Like the real cache it keeps a copy of what it is given (the real one drops the caller's
// buffer once the block is written, so buffers that carry a memory reservation release it),
// and a Get of another length misses. It counts hits, misses and puts for assertions.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "data/disk_block_cache.h"

namespace ossmount::testing {

class MemoryBlockCache : public data::DiskBlockCache {
 public:
  std::optional<std::shared_ptr<const ByteBuffer>> Get(const data::BlockId& id,
                                                       uint64_t expected_length) override {
    std::lock_guard lock(mu_);
    auto it = blocks_.find(Name(id));
    if (it == blocks_.end() || it->second->size() != expected_length) {
      ++misses;
      return std::nullopt;
    }
    ++hits;
    return it->second;
  }
  void Put(const data::BlockId& id, std::shared_ptr<const ByteBuffer> bytes) override {
    auto copy = std::make_shared<const ByteBuffer>(*bytes);
    std::lock_guard lock(mu_);
    ++puts;
    blocks_[Name(id)] = std::move(copy);
  }
  bool Contains(const data::BlockId& id) const override {
    std::lock_guard lock(mu_);
    return blocks_.count(Name(id)) > 0;
  }
  uint64_t max_size() const override { return 1ull << 30; }
  void Flush() override {}
  data::DiskCacheStats Stats() const override {
    data::DiskCacheStats s;
    s.blocks = blocks();
    return s;
  }
  size_t blocks() const {
    std::lock_guard lock(mu_);
    return blocks_.size();
  }

  std::atomic<int> hits{0}, misses{0}, puts{0};

 private:
  static std::string Name(const data::BlockId& id) {
    return id.key + "|" + id.etag + "|" + std::to_string(id.index);
  }
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const ByteBuffer>> blocks_;
};

}  // namespace ossmount::testing
