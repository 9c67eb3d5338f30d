// DiskCacheOptions: how the disk cache (--cache DIR) is laid out and bounded, filled by
// src/config and handed to DiskBlockCache::Open. A leaf: plain values only, so the
// configuration needs no class of src/data.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "data/free_space.h"

namespace ossmount::data {

// Where block files keep their header (see block_file.h).
enum class BlockLayout {
  kAuto,           // kHeaderInXattr when the directory's file system takes user xattrs
  kHeaderInFile,   // header, then the bytes
  kHeaderInXattr,  // exactly the bytes; the header in an extended attribute
};

struct DiskCacheOptions {
  std::string dir;
  // How new blocks are written; blocks of either layout already there are read.
  BlockLayout layout = BlockLayout::kAuto;
  uint64_t max_size = 10ull << 30;
  // What the cache leaves free on DIR's file system (--cache-min-free). Kept to within the
  // blocks being written at that moment (at most writer_threads of them): each write makes
  // room for itself first, counting the others in progress.
  FreeSpaceFloor min_free{0, 0.05};
  // How often the free space is checked while no block is written, so that a cache that
  // only serves hits still gives way to other files filling the disk.
  std::chrono::milliseconds space_check_interval{1000};
  // Blocks waiting for the writer threads; a Put beyond this is dropped (counted), never
  // blocks. The queued buffers are the callers' own (shared, not copied).
  size_t max_pending_writes = 1024;
  // ... and at most this many bytes of them (large-file parts are big); one block is always
  // accepted into an empty queue.
  uint64_t max_pending_bytes = 256ull << 20;
  // Threads writing blocks (create, write, rename: file system metadata work that one
  // thread did at a few hundred small blocks a second here, so a fast epoch dropped most of
  // them). Blocks are independent files, so writers need no ordering.
  int writer_threads = 4;
  // How long Open waits for another process to let go of the directory: one process uses a
  // cache directory at a time (directory_lock.h). A daemon unmounted just before is still
  // writing its queued blocks for a moment; a second live mount on the same directory is a
  // mistake, refused once this has passed.
  std::chrono::milliseconds lock_wait{10000};
  // Called (during Open only) with the logged message when Open starts something that can
  // take a while, for a user waiting on the start (the daemon's background parent prints
  // it): that wait, or moving the blocks of a cache written before subdirectories.
  std::function<void(const std::string&)> on_notice;
  // Tests only: runs on the writer thread before each block is written (to hold it).
  std::function<void()> before_write_for_test;
  // Tests only: reads the file system's space instead of fstatvfs of DIR.
  std::function<std::optional<FileSystemSpace>()> space_for_test;
};

}  // namespace ossmount::data
