// StagingArea: local copies of files being written that cannot go up as they are written
// (written out of order, read back, truncated, an existing object changed in place). Each is
// a StagedFile: an unnamed file (O_TMPFILE) in the staging directory, gone when it is closed
// or the daemon dies, so nothing is ever left to clean up. Together they stay within a byte
// budget (--max-staging-size); a write that would pass it fails with kNoSpace (ENOSPC), and
// so does one the file system refuses for want of room.
//
// A file's size counts in the budget as written (holes included): a budget never lets the
// local disk be promised twice.
//
// Ownership: create with Open; staged files hold the area. Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/unique_fd.h"
#include "ossmount/status.h"

namespace ossmount::upload {

class StagedFile;

class StagingArea : public std::enable_shared_from_this<StagingArea> {
 public:
  // Opens (creating it, mode 0700) the directory `dir` for staged files of `max_bytes` in all.
  // kInvalidArgument naming the directory when it cannot hold files.
  static Result<std::shared_ptr<StagingArea>> Open(const std::string& dir, uint64_t max_bytes);

  // A new, empty staged file; kNoSpace when the file system refuses one.
  Result<std::shared_ptr<StagedFile>> Create();

  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }
  const std::string& dir() const { return dir_; }

 private:
  friend class StagedFile;
  StagingArea(std::string dir, uint64_t limit) : dir_(std::move(dir)), limit_(limit) {}
  // Grows a file's share from `from` to `to` bytes; false (nothing taken) past the limit.
  bool Grow(uint64_t from, uint64_t to);
  void Shrink(uint64_t from, uint64_t to);

  const std::string dir_;
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

// One staged file. Reads and writes at any offset; the size is the largest end written or
// the last truncation.
class StagedFile {
 public:
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  // kNoSpace past the area's budget or when the disk is full (nothing of it written then).
  Status Write(uint64_t offset, const char* data, size_t size);
  // Bytes at `offset` (fewer at the end, none past it); zeros in holes.
  Result<size_t> Read(uint64_t offset, char* out, size_t size) const;
  // Any size: smaller drops bytes, larger adds zeros. kNoSpace past the budget.
  Status Truncate(uint64_t size);
  uint64_t size() const;

 private:
  friend class StagingArea;
  StagedFile(std::shared_ptr<StagingArea> area, UniqueFd fd)
      : area_(std::move(area)), fd_(std::move(fd)) {}

  const std::shared_ptr<StagingArea> area_;
  const UniqueFd fd_;
  mutable std::mutex mu_;  // guards size_ (and orders size changes with the budget)
  uint64_t size_ = 0;
};

}  // namespace ossmount::upload
