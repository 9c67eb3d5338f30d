// PrefetchItem: one file the dataset prefetcher may fetch whole (dataset_prefetcher.h), on
// its own so that the warm-up queue (warmup_queue.h) can hold them.
#pragma once

#include <cstdint>
#include <string>

namespace ossmount::prefetch {

struct PrefetchItem {
  std::string path;  // relative to the mount root, no leading '/'
  // Known from a listing (warm-up); for hints the fetcher resolves the path itself and
  // these stay empty / 0.
  std::string key;
  uint64_t size = 0;
  std::string etag;
};

}  // namespace ossmount::prefetch
