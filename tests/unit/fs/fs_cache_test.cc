// Small files with the disk cache (--cache) and the memory budget (--max-memory).
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "data/block_file.h"
#include "data/disk_block_cache.h"
#include "fs_harness.h"
#include "support/temp_dir.h"

using namespace fstest;

namespace {

using ::ossmount::testing::TempDir;

std::shared_ptr<data::DiskBlockCache> OpenCache(const std::string& dir) {
  data::DiskCacheOptions o;
  o.dir = dir;
  auto r = data::DiskBlockCache::Open(o);
  REQUIRE(r.ok());
  return *r;
}

FsOptions WithCache(std::shared_ptr<data::DiskBlockCache> cache) {
  FsOptions o = Harness::DefaultOptions();
  o.disk_cache = std::move(cache);
  return o;
}

// The dataset: the same objects put in the same order get the same fake etags, so a new
// Harness is the same bucket "after a remount".
const std::vector<std::pair<std::string, std::string>>& Dataset() {
  static const auto* k = new std::vector<std::pair<std::string, std::string>>{
      {"a.jpg", Content(100 * 1024, 1)},
      {"b.jpg", Content(7, 2)},
      {"c.jpg", Content(1 << 20, 3)},
  };
  return *k;
}

// Returns the etag of each key.
std::map<std::string, std::string> Fill(Harness& h) {
  std::map<std::string, std::string> etags;
  for (const auto& [key, data] : Dataset()) etags[key] = h.fake->PutObject(key, data);
  return etags;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("Disk cache: a small file read again after its buffer was dropped costs no GET") {
  TempDir tmp;
  auto cache = OpenCache(tmp.Sub("cache"));
  Harness h(WithCache(cache));
  Fill(h);
  h.fake->ResetCounters();
  for (const auto& [key, data] : Dataset()) CHECK(h.ReadPath(key) == data);
  CHECK(h.fake->count(Op::kGet) == Dataset().size());
  cache->Flush();
  CHECK(Eventually([&] { return h.fs->stats().whole_objects == 0; }));  // none left in memory
  CHECK(cache->Stats().blocks == Dataset().size());

  for (const auto& [key, data] : Dataset()) CHECK(h.ReadPath(key) == data);
  CHECK(h.fake->count(Op::kGet) == Dataset().size());  // none more
  CHECK(cache->Stats().hits == Dataset().size());
}

TEST_CASE("Disk cache: after a remount over the same directory, zero GETs") {
  TempDir tmp;
  {
    auto cache = OpenCache(tmp.Sub("cache"));
    Harness h(WithCache(cache));
    Fill(h);
    for (const auto& [key, data] : Dataset()) CHECK(h.ReadPath(key) == data);
    cache->Flush();
  }
  auto cache = OpenCache(tmp.Sub("cache"));  // a new process, in effect
  Harness h(WithCache(cache));
  Fill(h);
  h.fake->ResetCounters();
  for (const auto& [key, data] : Dataset()) CHECK(h.ReadPath(key) == data);
  CHECK(h.fake->count(Op::kGet) == 0);
  CHECK(cache->Stats().hits == Dataset().size());

  // An object that changed (new etag) is fetched, never served from the old block.
  const std::string changed = Content(100 * 1024, 99);
  Harness fresh(WithCache(cache));  // the same bucket after a.jpg was overwritten
  Fill(fresh);
  fresh.fake->PutObject("a.jpg", changed);
  fresh.fake->ResetCounters();
  CHECK(fresh.ReadPath("a.jpg") == changed);
  CHECK(fresh.fake->count(Op::kGet) == 1);
  CHECK(fresh.ReadPath("b.jpg") == Dataset()[1].second);  // unchanged: still a hit
  CHECK(fresh.fake->count(Op::kGet) == 1);
}

TEST_CASE("Disk cache: a corrupted block is refetched with exactly one GET") {
  TempDir tmp;
  std::string etag;
  {
    auto cache = OpenCache(tmp.Sub("cache"));
    Harness h(WithCache(cache));
    etag = Fill(h)["a.jpg"];
    for (const auto& [key, data] : Dataset()) h.ReadPath(key);
    cache->Flush();
  }
  const std::string path =
      tmp.Sub("cache") + "/" + data::BlockFilePath({"a.jpg", etag, data::kWholeObject});
  std::string bytes = Slurp(path);
  REQUIRE(!bytes.empty());
  bytes[bytes.size() / 2] ^= 0x40;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;

  auto cache = OpenCache(tmp.Sub("cache"));
  Harness h(WithCache(cache));
  Fill(h);
  h.fake->ResetCounters();
  CHECK(h.ReadPath("a.jpg") == Dataset()[0].second);
  CHECK(h.fake->count(Op::kGet) == 1);
  CHECK(cache->Stats().corrupt == 1);
  // The refetched bytes are cached again.
  cache->Flush();
  CHECK(h.ReadPath("a.jpg") == Dataset()[0].second);
  CHECK(h.fake->count(Op::kGet) == 1);
}

TEST_CASE("Memory budget: transport buffers count in it for the rest of the session") {
  FsOptions o = Harness::DefaultOptions();
  o.max_memory = 64u << 20;
  Harness h(o);
  Fill(h);
  const auto& budget = h.fs->memory_budget();
  REQUIRE(budget);
  h.fs->CountTransportBuffers(32u << 20);  // FUSE over io_uring: 2 queues x 16 x 1 MiB
  h.fs->CountTransportBuffers(16u << 20);
  CHECK(budget->used() == (48u << 20));
  // Prefetch has only the rest: 16 MiB.
  CHECK_FALSE(budget->TryReserve((16u << 20) + 1));
  REQUIRE(budget->TryReserve(16u << 20));
  budget->Release(16u << 20);
  // Reads come and go; the transport's share stays.
  const auto& [key, data] = Dataset()[0];
  auto e = h.Lookup(kRootInode, key);
  REQUIRE(e.ok());
  auto fh = h.Open(e->attr.ino);
  REQUIRE(fh.ok());
  CHECK(*h.Read(e->attr.ino, fh->fh, 0, data.size()) == data);
  h.fs->Release(e->attr.ino, fh->fh);
  CHECK(Eventually([&] { return budget->used() == (48u << 20); }));
}

TEST_CASE("Memory budget: small-file buffers are accounted while open and released after") {
  TempDir tmp;
  auto cache = OpenCache(tmp.Sub("cache"));
  for (bool with_cache : {false, true}) {
    INFO("disk cache " << with_cache);
    FsOptions o = with_cache ? WithCache(cache) : Harness::DefaultOptions();
    o.max_memory = 1 << 20;  // smaller than what is read at once: reads are never refused
    Harness h(o);
    Fill(h);
    const auto& budget = h.fs->memory_budget();
    REQUIRE(budget);
    CHECK(budget->limit() == (1u << 20));
    std::vector<std::pair<InodeId, uint64_t>> open;
    uint64_t total = 0;
    for (int round = 0; round < 2; ++round) {  // round 2: from the disk cache if any
      for (const auto& [key, data] : Dataset()) {
        auto e = h.Lookup(kRootInode, key);
        REQUIRE(e.ok());
        auto fh = h.Open(e->attr.ino);
        REQUIRE(fh.ok());
        CHECK(*h.Read(e->attr.ino, fh->fh, 0, data.size()) == data);
        open.emplace_back(e->attr.ino, fh->fh);
        if (round == 0) total += data.size();
      }
      CHECK(budget->used() == total);  // one buffer per object, however many handles
      if (round == 0) {
        for (auto [ino, fh] : open) h.fs->Release(ino, fh);
        open.clear();
        cache->Flush();  // queued disk writes hold buffers too
        CHECK(Eventually([&] { return budget->used() == 0; }));
      }
    }
    for (auto [ino, fh] : open) h.fs->Release(ino, fh);
    cache->Flush();
    CHECK(Eventually([&] { return budget->used() == 0; }));
    CHECK(Eventually([&] { return h.fs->stats().whole_objects == 0; }));
  }
}
