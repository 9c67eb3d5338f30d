// FreeSpaceFloor: how much of its file system the disk cache leaves free (--cache-min-free),
// and the arithmetic that turns a statvfs reading into bytes to evict.
//
// The cache is a cache: when other files (checkpoints, logs, a second dataset) need the
// disk, its blocks give way, so that a full cache never makes another program's write fail
// with ENOSPC. Mountpoint for Amazon S3 keeps 5% of the file system free by default too;
// rclone (--vfs-cache-min-free-space) and s3fs (ensure_diskfree) have the same knob.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>

namespace ossmount::data {

// What the cache's file system has, in bytes.
struct FileSystemSpace {
  uint64_t size = 0;       // f_blocks x f_frsize: df's "Size"
  uint64_t available = 0;  // f_bavail x f_frsize: df's "Avail", what unprivileged writers get
};

// The larger of `bytes` and `fraction` of the file system's size stays free. Both zero: no
// floor, only --max-cache-size bounds the cache.
struct FreeSpaceFloor {
  uint64_t bytes = 0;
  double fraction = 0;  // 0.05 = 5%; below 1
};

// statvfs of the open directory `dir_fd`; nullopt when it fails (the floor is then not
// applied, and only --max-cache-size bounds the cache).
std::optional<FileSystemSpace> ReadFileSystemSpace(int dir_fd);

// The free bytes `floor` asks for on a file system of `space.size` bytes.
uint64_t FloorBytes(const FreeSpaceFloor& floor, const FileSystemSpace& space);

// Bytes to free so that `incoming` more bytes still leave `floor_bytes` available; 0 when
// they fit.
uint64_t Shortfall(const FileSystemSpace& space, uint64_t floor_bytes, uint64_t incoming);

// Bytes that may still be written before the floor is reached; 0 at or below it.
uint64_t RoomAboveFloor(const FileSystemSpace& space, uint64_t floor_bytes);

}  // namespace ossmount::data
