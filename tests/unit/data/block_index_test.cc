// BlockIndex alone: LRU order, byte accounting, eviction to the budget and by a shortfall
// (the free-space floor), generations, start-up loading. No files.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "data/block_file.h"
#include "data/block_index.h"

namespace {

using namespace ossmount::data;

BlockDigest IndexTestDigest(int n) { return DigestOf(BlockId{"key" + std::to_string(n), "e", 0}); }

// Records the digests an eviction hands out, as the numbers IndexTestDigest made them from.
struct EvictionLog {
  std::vector<int> numbers;
  BlockIndex::EvictedFn Fn() {
    return [this](const BlockDigest& d) {
      for (int n = 0; n < 100; ++n) {
        if (IndexTestDigest(n) == d) {
          numbers.push_back(n);
          return;
        }
      }
      numbers.push_back(-1);
    };
  }
};

}  // namespace

TEST_CASE("block index: insert, contains, touch and byte accounting") {
  BlockIndex index(1000);
  CHECK(index.blocks() == 0);
  CHECK(index.bytes() == 0);
  CHECK_FALSE(index.Contains(IndexTestDigest(1)));
  CHECK_FALSE(index.Touch(IndexTestDigest(1)).has_value());

  index.Insert(IndexTestDigest(1), 100);
  index.Insert(IndexTestDigest(2), 250);
  CHECK(index.Contains(IndexTestDigest(1)));
  CHECK(index.Contains(IndexTestDigest(2)));
  CHECK_FALSE(index.Contains(IndexTestDigest(3)));
  CHECK(index.blocks() == 2);
  CHECK(index.bytes() == 350);
  CHECK(index.max_bytes() == 1000);
  CHECK(index.evictions() == 0);
  CHECK(index.Touch(IndexTestDigest(1)).has_value());
}

TEST_CASE("block index: eviction takes the least recently used first, and a touch renews") {
  BlockIndex index(1 << 20);
  for (int n = 1; n <= 4; ++n) index.Insert(IndexTestDigest(n), 10);
  REQUIRE(index.Touch(IndexTestDigest(1)));  // order now 2, 3, 4, 1
  REQUIRE(index.Touch(IndexTestDigest(3)));  // order now 2, 4, 1, 3

  EvictionLog log;
  CHECK(index.EvictLeastRecent(1, log.Fn()) == 10);  // one block covers one byte
  CHECK(log.numbers == std::vector<int>{2});
  CHECK(index.EvictLeastRecent(20, log.Fn()) == 20);
  CHECK(log.numbers == std::vector<int>{2, 4, 1});
  CHECK(index.blocks() == 1);
  CHECK(index.bytes() == 10);
  CHECK(index.evictions() == 3);
  CHECK(index.Contains(IndexTestDigest(3)));
  CHECK_FALSE(index.Contains(IndexTestDigest(2)));
}

TEST_CASE("block index: EvictToFit keeps the total within the budget with the incoming bytes") {
  BlockIndex index(100);
  EvictionLog log;
  index.Insert(IndexTestDigest(1), 40);
  index.Insert(IndexTestDigest(2), 40);

  index.EvictToFit(20, log.Fn());  // 80 + 20 fits exactly
  CHECK(log.numbers.empty());
  CHECK(index.bytes() == 80);

  index.EvictToFit(21, log.Fn());  // 101 would not: the oldest goes
  CHECK(log.numbers == std::vector<int>{1});
  CHECK(index.bytes() == 40);
  index.Insert(IndexTestDigest(3), 21);

  index.EvictToFit(100, log.Fn());  // a block of the whole budget empties the index
  CHECK(log.numbers == std::vector<int>{1, 2, 3});
  CHECK(index.bytes() == 0);
  CHECK(index.blocks() == 0);

  index.EvictToFit(500, log.Fn());  // more than the budget with nothing left: no-op
  CHECK(log.numbers.size() == 3);
  CHECK(index.evictions() == 3);
}

TEST_CASE("block index: evicting by a shortfall frees at least it, or all there is") {
  // The free-space floor asks for bytes, not for a total: whole blocks go until they cover
  // the shortfall, and the bytes freed tell the caller whether the floor is met.
  BlockIndex index(1 << 20);
  EvictionLog log;
  index.Insert(IndexTestDigest(1), 30);
  index.Insert(IndexTestDigest(2), 30);
  index.Insert(IndexTestDigest(3), 30);

  CHECK(index.EvictLeastRecent(0, log.Fn()) == 0);
  CHECK(log.numbers.empty());
  CHECK(index.EvictLeastRecent(31, log.Fn()) == 60);  // two blocks to cover 31 bytes
  CHECK(log.numbers == std::vector<int>{1, 2});
  CHECK(index.EvictLeastRecent(1000, log.Fn()) == 30);  // short of the shortfall: all gone
  CHECK(index.EvictLeastRecent(1000, log.Fn()) == 0);
  CHECK(index.bytes() == 0);
  CHECK(index.evictions() == 3);
}

TEST_CASE("block index: Forget drops only the generation it names") {
  BlockIndex index(1 << 20);
  index.Insert(IndexTestDigest(1), 50);
  const auto first = index.Touch(IndexTestDigest(1));
  REQUIRE(first);
  CHECK_FALSE(index.Forget(IndexTestDigest(1), *first + 1));
  CHECK(index.Contains(IndexTestDigest(1)));
  CHECK_FALSE(index.Forget(IndexTestDigest(2), *first));

  // Dropped and indexed again (a reader found the file bad, a writer wrote it anew): the
  // reader's Forget of the old version leaves the new one alone.
  CHECK(index.Forget(IndexTestDigest(1), *first));
  CHECK(index.bytes() == 0);
  index.Insert(IndexTestDigest(1), 60);
  const auto second = index.Touch(IndexTestDigest(1));
  REQUIRE(second);
  CHECK(*second != *first);
  CHECK_FALSE(index.Forget(IndexTestDigest(1), *first));
  CHECK(index.bytes() == 60);
  CHECK(index.evictions() == 0);  // forgetting is not evicting
}

TEST_CASE("block index: blocks found at start-up are ordered by recency, oldest first") {
  BlockIndex index(1 << 20);
  index.Reserve(8);
  index.AddFound(IndexTestDigest(1), 10, 3000);
  index.AddFound(IndexTestDigest(2), 20, 1000);
  index.AddFound(IndexTestDigest(3), 30, 4000);
  index.AddFound(IndexTestDigest(4), 40, 2000);
  index.AddFound(IndexTestDigest(2), 99, 9000);  // already found: ignored
  CHECK(index.Contains(IndexTestDigest(3)));
  CHECK(index.blocks() == 4);
  CHECK(index.bytes() == 100);
  index.OrderFound();
  index.Insert(IndexTestDigest(5), 50);  // newer than anything found

  EvictionLog log;
  CHECK(index.EvictLeastRecent(150, log.Fn()) == 150);
  CHECK(log.numbers == std::vector<int>{2, 4, 1, 3, 5});
  CHECK(index.blocks() == 0);
}

TEST_CASE("block index: found blocks beyond the budget are evicted oldest first") {
  // A cache reopened with a smaller --max-cache-size.
  BlockIndex index(50);
  for (int n = 1; n <= 5; ++n) index.AddFound(IndexTestDigest(n), 20, 100 - n);  // 5 oldest
  index.OrderFound();
  EvictionLog log;
  index.EvictToFit(0, log.Fn());
  CHECK(log.numbers == std::vector<int>{5, 4, 3});
  CHECK(index.bytes() == 40);
  CHECK(index.blocks() == 2);
  CHECK(index.evictions() == 3);
}
