#include "data/block_file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <string_view>

#include "common/write_all.h"

namespace ossmount::data {

namespace {

// A hit refreshes its block's mtime only when it is older than this.
constexpr std::time_t kMtimeRefreshAge = 600;

// Reads up to `size` bytes at `offset`; returns how many were read (short only at EOF), or
// -1 with errno set.
ssize_t ReadFull(int fd, char* buf, size_t size, off_t offset) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, buf + done, size - done, offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace

TempBlockFile WriteTempBlockFile(int dir_fd, const std::string& name, const BlockId& id,
                                 const ByteBuffer& data, BlockLayout layout) {
  TempBlockFile out;
  int fd =
      ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  out.created = fd >= 0;
  bool ok = out.created;
  int err = ok ? 0 : errno;
  bool in_file = layout == BlockLayout::kHeaderInFile;
  std::string header;
  if (ok && !in_file) {
    header = EncodeBlockHeader(id, data.data(), data.size(), BlockLayout::kHeaderInXattr);
    if (!WriteAll(fd, {data.data(), data.size()})) {
      ok = false;
      err = errno;
    } else if (::fsetxattr(fd, kBlockXattrName, header.data(), header.size(), 0) != 0) {
      // Refused after the probe said yes (a full inode and xattr block, a file system
      // that changed under us): this block keeps its header in the file instead.
      in_file = ::ftruncate(fd, 0) == 0 && ::lseek(fd, 0, SEEK_SET) == 0;
      if (!in_file) {
        ok = false;
        err = errno;
      }
    }
  }
  if (ok && in_file) {
    header = EncodeBlockHeader(id, data.data(), data.size(), BlockLayout::kHeaderInFile);
    if (!(WriteAll(fd, header) && WriteAll(fd, {data.data(), data.size()}))) {
      ok = false;
      err = errno;
    }
  }
  if (fd >= 0 && ::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  out.ok = ok;
  out.error = err;
  out.size = (in_file ? header.size() : 0) + data.size();
  return out;
}

BlockRead ReadBlockFile(int fd, const BlockId& id, uint64_t expected_length, bool xattr_only) {
  BlockRead out;
  out.data = std::make_shared<ByteBuffer>();
  ByteBuffer& data = *out.data;
  struct stat st;
  if (::fstat(fd, &st) != 0) return out;  // kTruncated
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  // The header: in the attribute (version 3) or, without one, at the file's start.
  std::string header(BlockHeaderSize(id), '\0');
  BlockLayout layout = BlockLayout::kHeaderInXattr;
  uint64_t data_offset = 0;
  ssize_t hn = ::fgetxattr(fd, kBlockXattrName, header.data(), header.size());
  if (hn < 0 && (errno == ENODATA || errno == ENOTSUP)) {
    if (xattr_only) {
      out.header_in_file = true;
      return out;
    }
    layout = BlockLayout::kHeaderInFile;
    header.resize(std::min<uint64_t>(header.size(), file_size));
    hn = ReadFull(fd, header.data(), header.size(), 0);
    data_offset = hn >= 0 ? static_cast<uint64_t>(hn) : 0;
  } else if (hn < 0 && errno == ERANGE) {
    out.check = BlockCheck::kWrongBlock;  // a longer header: another block's
  }
  if (hn >= 0) {
    header.resize(static_cast<size_t>(hn));
    // Never allocate more than the file can hold (a hostile expected_length).
    const uint64_t rest = file_size - std::min<uint64_t>(file_size, data_offset);
    data.resize(std::min(expected_length, rest));
    ssize_t dn = ReadFull(fd, data.data(), data.size(), static_cast<off_t>(data_offset));
    if (dn >= 0) {
      data.resize(static_cast<size_t>(dn));
      out.check = CheckBlock(header, layout, file_size, std::string_view(data.data(), data.size()),
                             id, expected_length);
    }
  }
  // Recency survives a restart through the mtime (the start-up scan orders by it).
  // Refreshed only when older than kMtimeRefreshAge: a journaled inode update on every
  // cached read showed in the profile of a cached epoch, and restart order needs no finer
  // grain.
  if (out.check == BlockCheck::kOk && std::time(nullptr) - st.st_mtime > kMtimeRefreshAge) {
    ::futimens(fd, nullptr);
  }
  return out;
}

}  // namespace ossmount::data
