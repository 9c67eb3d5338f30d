// DatasetPrefetchOptions: the dataset prefetcher's limits (concurrency, hint window, disk
// and control-memory budgets), from the mount's configuration.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace ossmount::prefetch {

struct DatasetPrefetchOptions {
  int concurrency = 128;       // warm-up: fetches in flight (hints included) it fills up to
  int hint_concurrency = 256;  // hints: fetches in flight (warm-up included) they fill up to
  // Hinted files fetched or in flight past the furthest read. 16 DataLoader workers read a
  // band of about 1,024 positions at once (workers x prefetch_factor x batch_size); the
  // window has to reach past it and cover the fetches in flight.
  size_t hint_ahead_files = 2048;
  uint64_t hint_ahead_bytes = 512ull << 20;
  // Disk cache size (--max-cache-size); 0 = no disk cache: warm-up holds objects in memory.
  uint64_t disk_budget = 0;
  // What the disk cache can hold now (DiskBlockCache::capacity): less than disk_budget when
  // its file system keeps less room above --cache-min-free. Unset: disk_budget.
  std::function<uint64_t()> disk_capacity;
  // How long to wait before retrying a kBusy fetch.
  std::chrono::milliseconds busy_retry{20};
  // Control memory (--control-memory): hint lists and warm-up queues together, at most.
  // 256 MiB holds a hint list of about 5 million ImageNet paths, or warm-up queues of about
  // 2.5 million listed files.
  uint64_t control_memory = 256ull << 20;
};

}  // namespace ossmount::prefetch
