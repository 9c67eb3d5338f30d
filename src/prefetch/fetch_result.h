// What the dataset prefetcher asks of the filesystem: fetch one object whole (Fetcher) and
// list everything under a path (Lister), and what a fetch reports back (FetchResult).
// src/prefetch knows nothing of the filesystem; the filesystem provides both functions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ossmount/status.h"
#include "prefetch/prefetch_item.h"

namespace ossmount::prefetch {

enum class FetchOutcome {
  kFetched,        // bytes fetched (and written to disk / held)
  kAlreadyCached,  // the disk cache already has it: no GET
  // Hints: the kernel's page cache holds it, so the reader will not ask the daemon: no GET.
  // The position is fetched after all if RefetchPageCached() comes before it is read.
  kPageCached,
  kSkipped,     // not fetchable this way (a directory, a large file in memory mode)
  kBudgetFull,  // the memory budget refused the buffer
  kBusy,        // the disk cache's write queue is full: try again a little later
  kFailed,      // the GET failed (the reader will see its own error, if any)
};

struct FetchResult {
  FetchOutcome outcome = FetchOutcome::kFailed;
  uint64_t bytes = 0;                // the object's size (known after resolving)
  std::shared_ptr<const void> hold;  // keeps the bytes in memory while set
  std::string error;                 // for kFailed / kSkipped
};

// hold_in_memory: the caller keeps `hold` until the file is read; false: the bytes only
// need to reach the disk cache.
using FetchDone = std::function<void(FetchResult)>;
using Fetcher = std::function<void(const PrefetchItem& item, bool hold_in_memory, FetchDone)>;
// Lists everything under `path` (recursive): `batch` once per page (may be called from any
// thread, in order), then `done` once. Files only. `batch` returns false to stop the listing
// (its job was cancelled): no further page is requested, and `done` gets kCancelled. Pages
// without files give an empty batch, so that a cancel is noticed at every page.
using ListBatch = std::function<bool(std::vector<PrefetchItem>)>;
using Lister =
    std::function<void(const std::string& path, ListBatch batch, std::function<void(Status)> done)>;

// Holds released under the prefetcher's lock, freed by the caller once it has let go of it
// (freeing a buffer may take a while, and must not run under the lock).
using Drops = std::vector<std::shared_ptr<const void>>;

}  // namespace ossmount::prefetch
