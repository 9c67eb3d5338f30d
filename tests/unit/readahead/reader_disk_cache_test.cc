// SequentialReader with the real DiskBlockCache (src/data): parts survive a new reader and
// a reopened cache, and a hit costs no GET.
#include <stdlib.h>

#include <filesystem>

#include "reader_harness.h"
#include "support/temp_dir.h"

using namespace readaheadtest;

namespace {

using ::ossmount::testing::TempDir;

std::shared_ptr<data::DiskBlockCache> OpenCache(const std::string& dir) {
  data::DiskCacheOptions o;
  o.dir = dir;
  o.max_size = 1ull << 30;
  auto cache = data::DiskBlockCache::Open(o);
  REQUIRE(cache.ok());
  return *cache;
}

std::string ReadSequentially(SequentialReader& reader, uint64_t size) {
  std::string out;
  for (uint64_t off = 0; off < size; off += 128 * KiB) {
    auto r = Harness::Read(reader, off, 128 * KiB);
    REQUIRE(r.ok());
    out += *r;
  }
  return out;
}

}  // namespace

TEST_CASE("Real disk cache: parts written after GETs are read back without a GET after reopen") {
  TempDir tmp;
  Harness h;
  const std::string data = Content(5 * MiB + 321, 40);
  h.fake->PutObject("big", data);
  {
    auto cache = OpenCache(tmp.Sub("cache"));
    auto reader = std::make_shared<SequentialReader>(h.io, h.fake, "big", data.size(),
                                                     h.fake->Info("big")->etag, SmallParts(),
                                                     SharedReadState{h.budget, h.slots, cache});
    CHECK(ReadSequentially(*reader, data.size()) == data);
    reader->Close();
    cache->Flush();
    CHECK(cache->Stats().blocks == 6);
  }
  CHECK(h.fake->count(Op::kGet) == 6);
  h.fake->ResetCounters();

  auto cache = OpenCache(tmp.Sub("cache"));  // a restart: the index is rebuilt from disk
  auto reader = std::make_shared<SequentialReader>(h.io, h.fake, "big", data.size(),
                                                   h.fake->Info("big")->etag, SmallParts(),
                                                   SharedReadState{h.budget, h.slots, cache});
  CHECK(ReadSequentially(*reader, data.size()) == data);
  CHECK(*Harness::Read(*reader, 3 * MiB + 5, 100) == data.substr(3 * MiB + 5, 100));
  CHECK(h.fake->count(Op::kGet) == 0);
  CHECK(cache->Stats().hits >= 6);
  reader->Close();
  CHECK(Eventually([&] { return h.budget->used() == 0; }));
}
