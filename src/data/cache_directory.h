// OpenCacheDirectory: the disk cache's directory (--cache DIR), made or checked, locked for
// this process, and the layout new blocks get there.
//
// Creates DIR 0700 with its parents. Refuses (with a message saying what to fix) a DIR
// that is not a directory, belongs to another user, is writable by group or others
// (someone could plant blocks: the checksums catch corruption, not a forged block), or is
// not writable by this user; then takes the directory lock (directory_lock.h: waits up to
// options.lock_wait, telling options.on_notice), and resolves options.layout: kAuto
// becomes kHeaderInXattr when DIR's files take the header attribute, else kHeaderInFile;
// kHeaderInXattr where they do not is refused.
//
// Thread-safety: a function. The returned descriptor holds the lock until it is closed.
#pragma once

#include "common/unique_fd.h"
#include "data/disk_block_cache.h"
#include "ossmount/status.h"

namespace ossmount::data {

struct CacheDirectory {
  UniqueFd fd;         // DIR, locked; every file operation of the cache is relative to it
  BlockLayout layout;  // never kAuto
};

Result<CacheDirectory> OpenCacheDirectory(const DiskCacheOptions& options);

}  // namespace ossmount::data
