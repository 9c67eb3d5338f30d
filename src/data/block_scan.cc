#include "data/block_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "data/block_file.h"

namespace ossmount::data {

namespace {

// Calls `each(name)` for every entry of the directory `dir_fd` but "." and "..".
Status ForEachName(int dir_fd, const std::string& what,
                   const std::function<void(const char* name)>& each) {
  int fd = ::dup(dir_fd);
  if (fd < 0) return Status(ErrorCode::kInternal, std::string("dup: ") + std::strerror(errno));
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return Status(ErrorCode::kInvalidArgument,
                  "cannot list cache directory '" + what + "': " + std::strerror(errno));
  }
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    each(e->d_name);
  }
  ::closedir(d);
  return Status::Ok();
}

// Creates (0700) or checks the 256 block subdirectories of the cache directory `dir_fd`.
// One that is not a directory of this user, private to it, is refused, as the top level is.
Status MakeSubdirectories(int dir_fd, const std::string& dir) {
  for (int i = 0; i < 256; ++i) {
    const std::string sub = BlockSubdirectory(static_cast<unsigned char>(i));
    if (::mkdirat(dir_fd, sub.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status(ErrorCode::kInvalidArgument,
                    "cannot create '" + dir + "/" + sub + "': " + std::strerror(errno));
    }
    struct stat st;
    if (::fstatat(dir_fd, sub.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      return Status(ErrorCode::kAccessDenied,
                    "'" + dir + "/" + sub +
                        "' is not a private directory of this user, so the cache cannot keep "
                        "its blocks there; remove it");
    }
  }
  return Status::Ok();
}

// What SweepTopLevel did, logged once the scan is done.
struct Swept {
  size_t temps = 0;  // temporary files deleted
  size_t moved = 0;  // blocks moved into their subdirectories
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// Deletes the temporary files at the top level and moves the blocks there into their
// subdirectories.
Status SweepTopLevel(int dir_fd, const std::string& dir,
                     const std::function<void(const std::string&)>& on_notice, Swept* swept) {
  bool announced = false;
  return ForEachName(dir_fd, dir, [&](const char* name) {
    if (std::string_view(name).substr(0, kTempPrefix.size()) == kTempPrefix) {
      if (::unlinkat(dir_fd, name, 0) == 0) ++swept->temps;
      return;
    }
    std::optional<BlockDigest> digest = ParseBlockFileName(name);
    if (!digest) return;  // a subdirectory, or not ours: leave it alone
    struct stat st;
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) return;
    if (!announced) {
      announced = true;
      const std::string notice =
          "disk cache: moving the blocks in '" + dir +
          "' into its 256 subdirectories (a cache written by an older version; once, a few "
          "seconds per 100,000 blocks)";
      spdlog::info("{}", notice);
      if (on_notice) on_notice(notice);
    }
    if (::renameat(dir_fd, name, dir_fd, BlockFilePath(*digest).c_str()) == 0) ++swept->moved;
  });
}

void LogSwept(const Swept& swept) {
  if (swept.temps > 0) {
    spdlog::info("disk cache: removed {} unfinished block file(s)", swept.temps);
  }
  if (swept.moved > 0) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - swept.start);
    spdlog::info("disk cache: moved {} block(s) into subdirectories in {} ms", swept.moved,
                 ms.count());
  }
}

// A block file found: its digest, size and mtime (nanoseconds since the epoch).
struct FoundBlock {
  BlockDigest digest;
  uint64_t size;
  uint64_t mtime_ns;
};

// Appends the blocks in subdirectory `i` (of 256) to `found`. Files that are not blocks,
// or blocks of another subdirectory (never looked for there), are left alone.
Status ReadSubdirectory(int dir_fd, const std::string& dir, int i, std::vector<FoundBlock>* found) {
  const auto first_byte = static_cast<unsigned char>(i);
  const std::string sub = BlockSubdirectory(first_byte);
  UniqueFd sub_fd(::openat(dir_fd, sub.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!sub_fd) {
    return Status(ErrorCode::kInvalidArgument,
                  "cannot open '" + dir + "/" + sub + "': " + std::strerror(errno));
  }
  return ForEachName(sub_fd.get(), dir + "/" + sub, [&](const char* name) {
    std::optional<BlockDigest> digest = ParseBlockFileName(name);
    if (!digest || digest->bytes[0] != first_byte) return;
    struct stat st;
    if (::fstatat(sub_fd.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    if (!S_ISREG(st.st_mode)) return;
    const uint64_t mtime_ns = st.st_mtim.tv_sec < 0
                                  ? 0
                                  : static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000u +
                                        static_cast<uint64_t>(st.st_mtim.tv_nsec);
    found->push_back({*digest, static_cast<uint64_t>(st.st_size), mtime_ns});
  });
}

void AddAllFound(const std::vector<FoundBlock>& found, BlockIndex* index) {
  for (const FoundBlock& f : found) index->AddFound(f.digest, f.size, f.mtime_ns);
}

}  // namespace

Status ScanBlocks(int dir_fd, const std::string& dir,
                  const std::function<void(const std::string&)>& on_notice, BlockIndex* index) {
  if (Status made = MakeSubdirectories(dir_fd, dir); !made.ok()) return made;
  Swept swept;
  if (Status top = SweepTopLevel(dir_fd, dir, on_notice, &swept); !top.ok()) return top;

  // Blocks go into the index as their files are found, unordered; the index orders them
  // by mtime once all are in. Subdirectory 0 first, alone: digests spread blocks evenly
  // over the subdirectories, so it tells how many the index will hold, and the index grows
  // once instead of rehashing at every doubling.
  std::vector<FoundBlock> found;
  if (Status listed = ReadSubdirectory(dir_fd, dir, 0, &found); !listed.ok()) return listed;
  index->Reserve(found.size() * 256);
  AddAllFound(found, index);

  // The rest are read by several threads (the work is a stat per block: file system
  // metadata, which after a reboot comes from the disk, where requests in parallel are
  // answered sooner), each adding one subdirectory's blocks at a time, in turns.
  std::atomic<int> next{1};
  std::mutex insert_mu;  // guards `index` and `error`
  Status error = Status::Ok();
  auto reader = [&] {
    std::vector<FoundBlock> mine;
    for (int i; (i = next.fetch_add(1)) < 256;) {
      mine.clear();
      Status listed = ReadSubdirectory(dir_fd, dir, i, &mine);
      std::lock_guard insert_lock(insert_mu);
      if (!listed.ok()) {
        if (error.ok()) error = listed;
        next = 256;
        return;
      }
      AddAllFound(mine, index);
    }
  };
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(reader);
  reader();
  for (auto& h : helpers) h.join();
  if (!error.ok()) return error;
  index->OrderFound();
  LogSwept(swept);
  return Status::Ok();
}

}  // namespace ossmount::data
