// DiskBlockCache with more blocks than one directory of its file system can index.
//
// ext4 without the large_dir feature (Debian's default) indexes a directory in at most two
// htree levels and refuses new names beyond them with ENOSPC, though the disk has room: at
// 4 KiB blocks a directory of block-file names fills at a few million, at 84,000 to
// 120,000 at 1 KiB blocks (measured). This test makes a 1 KiB-block ext4 in a loop-mounted image,
// so the limit is reached in seconds, and stores 200,000 blocks (the flat layout of older versions
// wrote 118,227 of them, then failed with ENOSPC): every one must be written, indexed after a
// reopen and read back. It needs root and loop devices; without them it says SKIPPED and exits 77
// (ctest reports it as skipped). The image is mounted in a mount namespace of the test's own, so
// the mount goes with the process however it ends (a failed check, a crash, ctest's timeout).
#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "data/block_file.h"
#include "data/disk_block_cache.h"
#include "support/temp_dir.h"

namespace {

using namespace ossmount::data;
using ossmount::ByteBuffer;

[[noreturn]] void Skip(const std::string& why) {
  std::fprintf(stderr, "SKIPPED: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(77);
}

bool Run(const std::string& command) {
  return std::system(("{ " + command + "; } >/dev/null 2>&1").c_str()) == 0;
}

// A 1 KiB-block ext4 file system in an image under `tmp`, loop-mounted on tmp/mnt for the
// object's lifetime, in a private mount namespace: nobody else sees the mount, and the kernel
// removes it (and `mount -o loop`'s autoclear frees the loop device) when the process exits, even
// if the destructor never runs.
class SmallBlockExt4 {
 public:
  explicit SmallBlockExt4(const ossmount::testing::TempDir& tmp)
      : image_(tmp.Sub("ext4.img")), mountpoint_(tmp.Sub("mnt")) {
    if (::geteuid() != 0) Skip("a loop-mounted ext4 needs root");
    if (!Run("command -v mkfs.ext4 && command -v losetup")) Skip("mkfs.ext4 or losetup missing");
    if (::access("/dev/loop-control", F_OK) != 0) Skip("no /dev/loop-control");
    if (::unshare(CLONE_NEWNS) != 0) Skip("cannot make a mount namespace here");
    // Without this, mounts below shared ones (systemd makes / shared) would still propagate out.
    REQUIRE(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0);
    // 768 MiB sparse; 1 KiB blocks; inodes for every block file and then some.
    REQUIRE(Run("truncate -s 768M " + image_));
    REQUIRE(Run("mkfs.ext4 -q -F -b 1024 -N 260000 " + image_));
    REQUIRE(Run("mkdir -p " + mountpoint_));
    if (!Run("mount -o loop " + image_ + " " + mountpoint_)) {
      Skip("cannot loop-mount an image here (no free loop device?)");
    }
  }
  ~SmallBlockExt4() { ::umount2(mountpoint_.c_str(), MNT_DETACH); }

  const std::string& path() const { return mountpoint_; }

 private:
  std::string image_;
  std::string mountpoint_;
};

std::shared_ptr<const ByteBuffer> BlockBytes(int i) {
  const std::string text = "block " + std::to_string(i);
  return std::make_shared<ByteBuffer>(text.begin(), text.end());
}

BlockId IdOf(int i) {
  return BlockId{"train/c" + std::to_string(i / 1000) + "/" + std::to_string(i) + ".JPEG", "\"e\"",
                 kWholeObject};
}

}  // namespace

TEST_CASE("disk cache: more blocks than one directory of a small-block ext4 can index") {
  ossmount::testing::TempDir tmp;
  SmallBlockExt4 fs(tmp);
  constexpr int kBlocks = 200000;
  DiskCacheOptions o;
  o.dir = fs.path() + "/cache";
  o.max_pending_writes = 4096;
  {
    auto opened = DiskBlockCache::Open(o);
    REQUIRE(opened.ok());
    auto cache = *opened;
    for (int i = 0; i < kBlocks; ++i) {
      cache->Put(IdOf(i), BlockBytes(i));
      if (i % 1000 == 999) cache->Flush();  // the queue never overflows
    }
    cache->Flush();
    const DiskCacheStats s = cache->Stats();
    CHECK(s.dropped == 0);  // a full directory index fails writes with ENOSPC: dropped
    CHECK(s.writes == kBlocks);
  }
  auto reopened = DiskBlockCache::Open(o);
  REQUIRE(reopened.ok());
  auto cache = *reopened;
  CHECK(cache->Stats().blocks == kBlocks);
  std::mt19937 rng(7);
  for (int n = 0; n < 2000; ++n) {
    const int i = static_cast<int>(rng() % kBlocks);
    auto want = BlockBytes(i);
    auto got = cache->Get(IdOf(i), want->size());
    INFO(i);
    REQUIRE(got.has_value());
    CHECK(**got == *want);
  }
  CHECK(cache->Stats().corrupt == 0);
}
