// ScanBlocks: at start-up, puts the blocks a cache directory already holds into the index,
// so that they are served after a restart.
//
// In the directory `dir_fd` (named `dir` in messages): creates (0700) or checks the 256
// block subdirectories, refusing one that is not a private directory of this user; deletes
// the temporary files left at the top level; moves the blocks a cache written before
// subdirectories kept at the top level into theirs (announced through `on_notice` first,
// as it can take a while; a rename keeps the mtime); then adds every block file of the
// subdirectories to `index`, least recently used first by mtime (which hits refresh).
// Files that are not block files are left alone. Logs what it removed and moved.
//
// Thread-safety: reads the subdirectories on the calling thread and up to 7 more, which
// it joins before returning; nothing else may use `index` meanwhile.
#pragma once

#include <functional>
#include <string>

#include "data/block_index.h"
#include "ossmount/status.h"

namespace ossmount::data {

Status ScanBlocks(int dir_fd, const std::string& dir,
                  const std::function<void(const std::string&)>& on_notice, BlockIndex* index);

}  // namespace ossmount::data
