#include "data/free_space.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cmath>

namespace ossmount::data {

std::optional<FileSystemSpace> ReadFileSystemSpace(int dir_fd) {
  struct statvfs vfs {};
  if (::fstatvfs(dir_fd, &vfs) != 0) return std::nullopt;
  const uint64_t unit = vfs.f_frsize ? vfs.f_frsize : vfs.f_bsize;
  return FileSystemSpace{static_cast<uint64_t>(vfs.f_blocks) * unit,
                         static_cast<uint64_t>(vfs.f_bavail) * unit};
}

uint64_t FloorBytes(const FreeSpaceFloor& floor, const FileSystemSpace& space) {
  const double share = std::ceil(floor.fraction * static_cast<double>(space.size));
  const uint64_t by_fraction = share > 0 ? static_cast<uint64_t>(share) : 0;
  return std::max(by_fraction, floor.bytes);
}

uint64_t Shortfall(const FileSystemSpace& space, uint64_t floor_bytes, uint64_t incoming) {
  const uint64_t needed = floor_bytes + incoming;
  return space.available >= needed ? 0 : needed - space.available;
}

uint64_t RoomAboveFloor(const FileSystemSpace& space, uint64_t floor_bytes) {
  return space.available > floor_bytes ? space.available - floor_bytes : 0;
}

}  // namespace ossmount::data
