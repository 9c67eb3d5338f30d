// FsOptions: how the filesystem presents and reads a bucket (metadata TTLs, file modes, the
// small-file threshold, readahead, memory, disk cache, list-ahead, audit), filled by
// src/config and handed to MakeObjectFilesystem. A leaf: plain values, and pointers to
// classes declared here only.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "prefetch/prefetch_options.h"
#include "upload/upload_options.h"

namespace ossmount::data {
class DiskBlockCache;
}

namespace ossmount::fs {

class AuditSink;

// The default page cap of one listing: 100,000 pages of up to 1,000 keys, 100 million keys
// under one prefix (ListingGuard).
inline constexpr int kDefaultMaxListPages = 100000;

// Readahead for large files read sequentially (src/readahead).
struct ReadaheadOptions {
  uint64_t initial_window = 1ull << 20;  // first window once reads look sequential
  uint64_t max_window = 64ull << 20;     // the window doubles up to this (--max-readahead)
  uint64_t part_size = 8ull << 20;       // one ranged GET (--prefetch-unit, prefetchUnitMB)
  int per_file_concurrency = 8;          // ranged GETs in flight per open file
  int global_concurrency = 64;           // readahead GETs in flight in all
                                         // (--prefetch-concurrency, prefetchConcurrency)
  // The kernel's own readahead on the mount (--kernel-readahead, 16MiB from the command
  // line; 0 = the kernel's 128 KiB).
  // The kernel issues its readahead requests concurrently, so they can arrive out of order
  // over this span: a reader still counts as sequential up to this far behind its furthest
  // read, and parts are kept that long after the reader passed them.
  uint64_t kernel_readahead = 0;
};

// Writing to the mount (docs/SEMANTICS.md, "Writing"). Off by default: a dataset mount is
// read-only.
struct WritePolicy {
  bool enabled = false;            // --allow-writes
  bool allow_delete = true;        // false (--no-delete): unlink, rmdir and rename are EPERM
  bool allow_overwrite = true;     // false (--no-overwrite): replacing an object is EPERM
  size_t rename_dir_limit = 1000;  // a directory rename moves at most this many objects
  upload::UploadOptions upload;
  // Where files that cannot stream (written out of order, read back, truncated, changed in
  // place) are staged: --staging-dir, "" = nowhere (those writes fail with ENOTSUP).
  std::string staging_dir;
  // Bytes all staged files may take there together (--max-staging-size); past it, ENOSPC.
  uint64_t max_staging_size = 16ull << 30;
  // A file being streamed keeps a local copy while it is at most this large
  // (--max-stream-copy), so that an out-of-order write can move it to staging; past it the
  // copy goes (it would cost a large save its dirty page cache: 17-22% of a 2 GiB save).
  uint64_t max_stream_copy = 512ull << 20;
  // Files opened with O_APPEND become appendable objects where the service has them (OSS),
  // and what is written goes up at most this long after (--append-interval); nullopt (off):
  // they are written like any other file.
  std::optional<std::chrono::milliseconds> append_interval = std::chrono::seconds(1);
};

struct FsOptions {
  // Key prefix mounted as the root, "" or ending in '/': "imagenet/".
  std::string prefix;
  // How long listings, attributes and positive lookups stay valid. nullopt = indefinite
  // (never revalidated; the kernel is told to cache too). Zero = always ask the server.
  std::optional<std::chrono::milliseconds> metadata_ttl = std::chrono::seconds(60);
  // How long "no such name" stays cached.
  std::chrono::milliseconds negative_ttl = std::chrono::seconds(5);
  // Objects at or below this size are fetched whole with one GET on first read.
  uint64_t small_file_threshold = 8ull << 20;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t file_mode = 0444;  // permission bits only
  // --posix-metadata: modes, owners and times are read from each file's user metadata (one
  // HEAD per file) and chmod, chown and utime store them there, as ossfs and s3fs do.
  bool posix_metadata = false;
  uint32_t dir_mode = 0555;
  // All data buffers together (whole objects, readahead parts): --max-memory / prefetchMB.
  uint64_t max_memory = 1ull << 30;
  // Listings, cached names and inodes together (--max-metadata-memory; MetadataCache).
  uint64_t max_metadata_memory = 512ull << 20;
  ReadaheadOptions readahead;
  // Local disk cache of object data (--cache DIR); null = none. Opened by the daemon.
  std::shared_ptr<data::DiskBlockCache> disk_cache;
  // Dataset-level prefetch: warm-up and sampler-order hints (--warmup-concurrency,
  // --hint-ahead-files, --hint-ahead-bytes). disk_budget is taken from disk_cache.
  prefetch::DatasetPrefetchOptions dataset_prefetch;
  // Warm up a directory's files after each listing of it is fetched (--prefetch-on-list).
  bool prefetch_on_list = false;
  // When a walk reads a directory, list up to this many of the directories after it in its
  // parent's listing, in the background, so the walk finds them listed (--list-ahead;
  // ListAhead). 0 = off; also off under a zero metadata TTL.
  size_t list_ahead = 64;
  // A listing (a directory's, or warm-up's of a tree) that goes past this many pages fails
  // with EIO (--max-list-pages; ListingGuard).
  int max_list_pages = kDefaultMaxListPages;
  // When names are looked up in a directory that no listing answers (a program opening files
  // by path), list it in the background so that its later lookups need no probe
  // (MetadataCache::ClaimListingForLookups). Off for a manifest mount, whose probes cost no
  // request.
  bool list_for_lookups = true;
  WritePolicy writes;
  // Receives one record per released file (--audit-log); null = no audit.
  std::shared_ptr<AuditSink> audit;
  // The steady clock TTLs are measured with; empty = std::chrono::steady_clock::now. Tests
  // inject a controllable clock so expiry needs no sleeping.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

}  // namespace ossmount::fs
