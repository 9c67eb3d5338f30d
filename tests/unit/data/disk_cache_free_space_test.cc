// The disk cache's free-space floor (--cache-min-free) against a real temporary directory
// whose file system is a model: its size is set by the test, and what is available is that
// size less the "other files" the test says are there, less every byte the cache directory
// really holds on disk (block and temporary files alike, counted by walking it).
#include <catch2/catch.hpp>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "data/disk_block_cache.h"
#include "data/free_space.h"
#include "support/temp_dir.h"

namespace {

using namespace ossmount::data;
using ossmount::ByteBuffer;
using ::ossmount::testing::TempDir;

constexpr uint64_t kMebibyte = 1 << 20;
constexpr size_t kImageBytes = 100'000;

std::shared_ptr<const ByteBuffer> RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  auto v = std::make_shared<ByteBuffer>(size);
  for (auto& c : *v) c = static_cast<char>(rng() & 0xff);
  return v;
}

BlockId ImageBlock(int i) {
  return BlockId{"train/" + std::to_string(i) + ".JPEG", "\"etag\"", kWholeObject};
}

// Bytes of every file under `dir`.
uint64_t DiskBytesUnder(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    std::error_code size_ec;
    if (e.is_regular_file(size_ec)) {
      const auto n = e.file_size(size_ec);
      if (!size_ec) total += n;
    }
  }
  return total;
}

// The modelled file system of the cache directory.
struct ModelledFileSystem {
  std::string dir;
  uint64_t size = 0;
  std::atomic<uint64_t> others{0};

  uint64_t available() const {
    const uint64_t used = others.load() + DiskBytesUnder(dir);
    return used >= size ? 0 : size - used;
  }
  FileSystemSpace space() const { return {size, available()}; }
};

std::shared_ptr<DiskBlockCache> OpenOnModel(const std::shared_ptr<ModelledFileSystem>& fs,
                                            FreeSpaceFloor floor,
                                            std::chrono::milliseconds interval,
                                            uint64_t max_size = 1ull << 30) {
  DiskCacheOptions o;
  o.dir = fs->dir;
  o.max_size = max_size;
  o.min_free = floor;
  o.space_check_interval = interval;
  o.space_for_test = [fs] { return std::optional<FileSystemSpace>(fs->space()); };
  auto r = DiskBlockCache::Open(o);
  if (!r.ok()) FAIL(r.status().message());
  return *r;
}

// Puts blocks first..last-1 one at a time, each written before the next (a fixed order).
void PutOneByOne(DiskBlockCache& cache, int first, int last) {
  for (int i = first; i < last; ++i) {
    cache.Put(ImageBlock(i), RandomBytes(kImageBytes, static_cast<uint32_t>(i)));
    cache.Flush();
  }
}

// Waits up to 20 s for `done` (the cache's watcher runs every few milliseconds here; the
// bound only keeps a broken build from hanging).
template <typename F>
bool WithinTwentySeconds(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace

TEST_CASE("free space: the floor is the larger of its size and its share of the file system") {
  const FileSystemSpace space{100 * kMebibyte, 30 * kMebibyte};
  CHECK(FloorBytes({0, 0.05}, space) == 5 * kMebibyte + 0);
  CHECK(FloorBytes({kMebibyte, 0.05}, space) == 5 * kMebibyte);
  CHECK(FloorBytes({10 * kMebibyte, 0.05}, space) == 10 * kMebibyte);
  CHECK(FloorBytes({0, 0}, space) == 0);
  CHECK(FloorBytes({0, 0.0001}, FileSystemSpace{12345, 0}) == 2);  // rounded up

  CHECK(Shortfall(space, 10 * kMebibyte, 20 * kMebibyte) == 0);
  CHECK(Shortfall(space, 10 * kMebibyte, 21 * kMebibyte) == kMebibyte);
  CHECK(Shortfall({100 * kMebibyte, 0}, 5 * kMebibyte, 0) == 5 * kMebibyte);
  CHECK(RoomAboveFloor(space, 10 * kMebibyte) == 20 * kMebibyte);
  CHECK(RoomAboveFloor(space, 40 * kMebibyte) == 0);
}

TEST_CASE("disk cache: a block that would leave less than the floor evicts the oldest first") {
  TempDir dir;
  auto fs = std::make_shared<ModelledFileSystem>();
  fs->dir = dir.path() + "/cache";
  fs->size = 4 * kMebibyte;
  fs->others = 2 * kMebibyte;  // room for 1 MiB of blocks above a 1 MiB floor
  auto cache = OpenOnModel(fs, {kMebibyte, 0}, std::chrono::hours(1));

  PutOneByOne(*cache, 0, 30);  // 3 MB of blocks
  const DiskCacheStats s = cache->Stats();
  CHECK(fs->available() >= kMebibyte);
  CHECK(s.bytes <= kMebibyte);
  CHECK(s.blocks >= 9);  // 10 blocks of 100,000 bytes fit in 1 MiB
  CHECK(s.space_evictions == 30 - s.blocks);
  CHECK(s.evictions == s.space_evictions);
  CHECK(s.no_space == 0);
  CHECK(s.writes == 30);
  // The most recently written blocks stayed, and read back intact.
  for (int i = 0; i < 30; ++i) {
    const bool kept = i >= 30 - static_cast<int>(s.blocks);
    CHECK(cache->Contains(ImageBlock(i)) == kept);
    if (kept) {
      auto got = cache->Get(ImageBlock(i), kImageBytes);
      REQUIRE(got.has_value());
      CHECK(**got == *RandomBytes(kImageBytes, static_cast<uint32_t>(i)));
    }
  }
  CHECK(cache->capacity() <= s.bytes + kImageBytes);
}

TEST_CASE("disk cache: when other files take the space, the cache gives way without a write") {
  TempDir dir;
  auto fs = std::make_shared<ModelledFileSystem>();
  fs->dir = dir.path() + "/cache";
  fs->size = 4 * kMebibyte;
  fs->others = kMebibyte;
  auto cache = OpenOnModel(fs, {kMebibyte, 0}, std::chrono::milliseconds(10));
  PutOneByOne(*cache, 0, 15);  // 1.5 MB: fits above the floor
  REQUIRE(cache->Stats().blocks == 15);
  REQUIRE(cache->Stats().space_evictions == 0);
  REQUIRE(
      cache->Get(ImageBlock(0), kImageBytes).has_value());  // block 0 is now the most recently used

  fs->others = 2 * kMebibyte + kMebibyte / 2;  // available: 4 - 2.5 - 1.5 = 0 MiB, under the floor
  REQUIRE(WithinTwentySeconds([&] { return fs->available() >= kMebibyte; }));
  const DiskCacheStats s = cache->Stats();
  CHECK(s.space_evictions > 0);
  CHECK(s.blocks == 15 - s.space_evictions);
  CHECK(s.writes == 15);
  CHECK(cache->Contains(ImageBlock(0)));  // used last: evicted last
  CHECK_FALSE(cache->Contains(ImageBlock(1)));
  CHECK(cache->Contains(ImageBlock(14)));
  REQUIRE(WithinTwentySeconds([&] { return cache->capacity() < 2 * kMebibyte; }));

  // The other files go away: the cache fills again, up to the floor.
  fs->others = 0;
  REQUIRE(WithinTwentySeconds([&] { return cache->capacity() >= 2 * kMebibyte; }));
  PutOneByOne(*cache, 100, 115);
  CHECK(cache->Stats().blocks >= 15);
}

TEST_CASE("disk cache: when even an empty cache leaves less than the floor, nothing is written") {
  TempDir dir;
  auto fs = std::make_shared<ModelledFileSystem>();
  fs->dir = dir.path() + "/cache";
  fs->size = 4 * kMebibyte;
  fs->others = 3 * kMebibyte + kMebibyte / 2;
  auto cache = OpenOnModel(fs, {kMebibyte, 0}, std::chrono::hours(1));
  CHECK(cache->capacity() == 0);
  cache->Put(ImageBlock(0), RandomBytes(kImageBytes, 0));
  cache->Flush();
  const DiskCacheStats s = cache->Stats();
  CHECK(s.no_space == 1);
  CHECK(s.dropped == 1);
  CHECK(s.writes == 0);
  CHECK(s.blocks == 0);
  CHECK(DiskBytesUnder(fs->dir) == 0);  // not even a temporary file was left
  CHECK_FALSE(cache->Get(ImageBlock(0), kImageBytes).has_value());
}

TEST_CASE("disk cache: capacity is --max-cache-size, or less when the floor leaves less room") {
  TempDir dir;
  auto fs = std::make_shared<ModelledFileSystem>();
  fs->dir = dir.path() + "/cache";
  fs->size = 100 * kMebibyte;
  auto cache = OpenOnModel(fs, {0, 0.05}, std::chrono::milliseconds(10), 10 * kMebibyte);
  CHECK(cache->capacity() == 10 * kMebibyte);
  PutOneByOne(*cache, 0, 10);  // 1 MB held

  fs->others = 90 * kMebibyte;  // room above the 5 MiB floor: 100 - 90 - 1 - 5, about 4 MiB
  REQUIRE(WithinTwentySeconds([&] { return cache->capacity() < 10 * kMebibyte; }));
  const uint64_t expected = cache->Stats().bytes + RoomAboveFloor(fs->space(), 5 * kMebibyte);
  CHECK(cache->capacity() <= expected + kImageBytes);
  CHECK(cache->capacity() + kImageBytes >= expected);
  CHECK(cache->Stats().space_evictions == 0);  // nothing had to go
}

TEST_CASE("disk cache: opening on a file system under the floor gives way before serving") {
  TempDir dir;
  auto fs = std::make_shared<ModelledFileSystem>();
  fs->dir = dir.path() + "/cache";
  fs->size = 4 * kMebibyte;
  {
    auto cache = OpenOnModel(fs, {kMebibyte, 0}, std::chrono::hours(1));
    PutOneByOne(*cache, 0, 20);  // 2 MB
    REQUIRE(cache->Stats().blocks == 20);
  }
  fs->others = 2 * kMebibyte;  // available: 4 - 2 - 2 = 0
  auto cache = OpenOnModel(fs, {kMebibyte, 0}, std::chrono::hours(1));
  CHECK(fs->available() >= kMebibyte);
  const DiskCacheStats s = cache->Stats();
  CHECK(s.space_evictions >= 9);  // 4 - 2 MiB less 2 MB held leaves about 0.19 MiB
  CHECK(s.blocks == 20 - s.space_evictions);
  CHECK(cache->Contains(ImageBlock(19)));  // the most recent block stayed
}

TEST_CASE("disk cache: without a reading of the file system only --max-cache-size applies") {
  TempDir dir;
  DiskCacheOptions o;
  o.dir = dir.path() + "/cache";
  o.max_size = 1 << 30;
  o.min_free = {1ull << 50, 0.5};  // would refuse every block if it were applied
  o.space_for_test = [] { return std::optional<FileSystemSpace>(); };
  auto cache = DiskBlockCache::Open(o);
  REQUIRE(cache.ok());
  (*cache)->Put(ImageBlock(0), RandomBytes(kImageBytes, 0));
  (*cache)->Flush();
  CHECK((*cache)->Contains(ImageBlock(0)));
  CHECK((*cache)->Stats().no_space == 0);
  CHECK((*cache)->capacity() == o.max_size);
}

TEST_CASE("disk cache: the default floor reads the real file system") {
  TempDir dir;
  DiskCacheOptions o;
  o.dir = dir.path() + "/cache";
  o.max_size = 1ull << 50;  // far beyond any disk: capacity is what the disk has room for
  auto cache = DiskBlockCache::Open(o);
  REQUIRE(cache.ok());
  const int fd = ::open(o.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  auto space = ReadFileSystemSpace(fd);
  ::close(fd);
  REQUIRE(space.has_value());
  CHECK(space->size > 0);
  CHECK((*cache)->capacity() < o.max_size);
  CHECK((*cache)->capacity() <= space->size);
}
