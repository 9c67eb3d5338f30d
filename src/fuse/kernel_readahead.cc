#include "fuse/kernel_readahead.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace ossmount::fuse {

Status SetKernelReadahead(const std::string& mountpoint, uint64_t bytes) {
  struct stat st {};
  if (stat(mountpoint.c_str(), &st) != 0) {
    return Status(ErrorCode::kInternal, "stat " + mountpoint + ": " + std::strerror(errno));
  }
  const std::string path = "/sys/class/bdi/" + std::to_string(major(st.st_dev)) + ":" +
                           std::to_string(minor(st.st_dev)) + "/read_ahead_kb";
  std::ofstream out(path);
  if (!out) {
    return Status(ErrorCode::kInternal, "cannot open " + path + ": " + std::strerror(errno));
  }
  out << (bytes >> 10) << '\n';
  out.flush();
  if (!out) {
    return Status(ErrorCode::kInternal, "cannot write " + path + ": " + std::strerror(errno));
  }
  return Status();
}

}  // namespace ossmount::fuse
