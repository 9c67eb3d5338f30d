#include "upload/staging_area.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ossmount::upload {
namespace {

Status WriteError(const char* what) {
  const int e = errno;
  if (e == ENOSPC || e == EDQUOT || e == EFBIG) {
    return Status(
        ErrorCode::kNoSpace,
        std::string(what) + ": the staging directory's disk is full (" + std::strerror(e) + ")");
  }
  return Status(ErrorCode::kInternal, std::string(what) + ": " + std::strerror(e));
}

}  // namespace

Result<std::shared_ptr<StagingArea>> StagingArea::Open(const std::string& dir, uint64_t max_bytes) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status(ErrorCode::kInvalidArgument,
                  "cannot create the staging directory '" + dir + "': " + ec.message());
  }
  ::chmod(dir.c_str(), 0700);
  auto area = std::shared_ptr<StagingArea>(new StagingArea(dir, max_bytes));
  auto probe = area->Create();
  if (!probe.ok()) {
    return Status(
        ErrorCode::kInvalidArgument,
        "the staging directory '" + dir + "' cannot hold files: " + probe.status().message());
  }
  return area;
}

Result<std::shared_ptr<StagedFile>> StagingArea::Create() {
  // Unnamed: the file goes with its descriptor, whatever ends the daemon.
  UniqueFd fd(::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!fd && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // A file system without O_TMPFILE: a named file, unlinked at once.
    std::string name = dir_ + "/staged-XXXXXX";
    fd = UniqueFd(::mkostemp(name.data(), O_CLOEXEC));
    if (fd) ::unlink(name.c_str());
  }
  if (!fd) return WriteError(("creating a staged file in '" + dir_ + "'").c_str());
  return std::shared_ptr<StagedFile>(new StagedFile(shared_from_this(), std::move(fd)));
}

bool StagingArea::Grow(uint64_t from, uint64_t to) {
  if (to <= from) return true;
  const uint64_t more = to - from;
  uint64_t cur = used_.load(std::memory_order_relaxed);
  while (cur + more <= limit_) {
    if (used_.compare_exchange_weak(cur, cur + more, std::memory_order_relaxed)) return true;
  }
  return false;
}

void StagingArea::Shrink(uint64_t from, uint64_t to) {
  if (to < from) used_.fetch_sub(from - to, std::memory_order_relaxed);
}

StagedFile::~StagedFile() { area_->Shrink(size_, 0); }

Status StagedFile::Write(uint64_t offset, const char* data, size_t size) {
  std::lock_guard lock(mu_);
  const uint64_t end = offset + size;
  const uint64_t before = size_;
  if (end > size_ && !area_->Grow(size_, end)) {
    return Status(ErrorCode::kNoSpace, "the staging directory's budget (--max-staging-size, " +
                                           std::to_string(area_->limit() >> 20) + " MiB) is full");
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pwrite(fd_.get(), data + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = WriteError("writing a staged file");
      // What was written stays (the caller fails the file); the size did not change.
      if (end > before) area_->Shrink(end, before);
      ::ftruncate(fd_.get(), static_cast<off_t>(before));
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (end > size_) size_ = end;
  return Status::Ok();
}

Result<size_t> StagedFile::Read(uint64_t offset, char* out, size_t size) const {
  uint64_t file_size = 0;
  {
    std::lock_guard lock(mu_);
    file_size = size_;
  }
  if (offset >= file_size) return size_t{0};
  size = static_cast<size_t>(std::min<uint64_t>(size, file_size - offset));
  size_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pread(fd_.get(), out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status(ErrorCode::kInternal,
                    std::string("reading a staged file: ") + std::strerror(errno));
    }
    if (n == 0) {  // a hole at the end, past what was written: zeros
      std::memset(out + done, 0, size - done);
      break;
    }
    done += static_cast<size_t>(n);
  }
  return size;
}

Status StagedFile::Truncate(uint64_t size) {
  std::lock_guard lock(mu_);
  if (size > size_ && !area_->Grow(size_, size)) {
    return Status(ErrorCode::kNoSpace, "the staging directory's budget (--max-staging-size, " +
                                           std::to_string(area_->limit() >> 20) + " MiB) is full");
  }
  if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) {
    Status s = WriteError("truncating a staged file");
    if (size > size_) area_->Shrink(size, size_);
    return s;
  }
  if (size < size_) area_->Shrink(size_, size);
  size_ = size;
  return Status::Ok();
}

uint64_t StagedFile::size() const {
  std::lock_guard lock(mu_);
  return size_;
}

}  // namespace ossmount::upload
