// The I/O of one disk cache block file: writing a block to a temporary file, reading and
// verifying a block file. No index, no locks (DiskBlockCache holds those and renames or
// unlinks the files); the format and the names are block_file.h's.
//
// Thread-safety: functions; calls on different files are independent. A file unlinked or
// renamed over while it is read is read whole through its descriptor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/byte_buffer.h"
#include "data/block_file.h"
#include "data/disk_block_cache.h"

namespace ossmount::data {

// What WriteTempBlockFile did.
struct TempBlockFile {
  bool created = false;  // a file of that name exists now: rename it into place or unlink it
  bool ok = false;       // the block is complete in it
  int error = 0;         // errno when !ok
  uint64_t size = 0;     // the file's size when ok: the bytes, plus the header if in the file
};

// Writes block `id` with bytes `data` to a new file `name` (0600, O_EXCL, O_NOFOLLOW) in the
// directory `dir_fd`, its header as `layout` says (kHeaderInFile or kHeaderInXattr); when
// the attribute is refused after all, the header goes in the file. Not fsynced.
TempBlockFile WriteTempBlockFile(int dir_fd, const std::string& name, const BlockId& id,
                                 const ByteBuffer& data, BlockLayout layout);

// What ReadBlockFile found.
struct BlockRead {
  bool header_in_file = false;                // and xattr_only: nothing was read or checked
  BlockCheck check = BlockCheck::kTruncated;  // kOk: `data` is the block, intact
  std::shared_ptr<ByteBuffer> data;
};

// Reads the block file open at `fd` (header from the attribute, else from the file's start)
// and checks it against `id` and `expected_length` (CheckBlock). An intact block's mtime,
// the recency a restart sees, is refreshed when it is more than 10 minutes old.
// `xattr_only` (for passthrough) stops at a file that keeps its header in the file.
BlockRead ReadBlockFile(int fd, const BlockId& id, uint64_t expected_length, bool xattr_only);

}  // namespace ossmount::data
