// UploadOptions: how files written to the mount go up (src/upload), filled by src/config.
// A leaf: plain values only.
#pragma once

#include <cstdint>
#include <string>

namespace ossmount::upload {

struct UploadOptions {
  // Size of parts 1..1000 of a multipart upload (--upload-part-size); it doubles every 1,000
  // parts (PartSizeFor), so the 10,000-part limit is never what stops a file. A file that
  // ends within its first part goes up with one PutObject.
  uint64_t part_size = 8ull << 20;
  // Parts (and single PUTs) in flight across all files (--upload-concurrency).
  int max_parts_in_flight = 64;
  // The smallest part the service accepts for every part but the last: 100 KiB on OSS,
  // 5 MiB on S3. A writer that must wait for memory sends its part early once it holds
  // this much, so that writers never wait on each other's unfinished parts.
  uint64_t min_part_size = 100ull << 10;
  // Objects up to this size are copied (rename) with one CopyObject; larger ones with
  // UploadPartCopy in parts of copy_part_size, max_parts_in_flight at a time.
  uint64_t copy_object_limit = 1ull << 30;
  uint64_t copy_part_size = 64ull << 20;
  // Where the record of this mount's open multipart uploads is kept, so that a restart
  // aborts what a crash left ("" = no record).
  std::string journal_dir;
};

// The size of part `part_number` (1-based) of an upload whose first parts are `base` bytes:
// base for parts 1..1000, twice that for 1001..2000, and so on, at most 5 GiB (the
// service's part limit). With 8 MiB parts 10,000 parts hold 8 TiB.
uint64_t PartSizeFor(int part_number, uint64_t base);

}  // namespace ossmount::upload
