// The filesystem's metrics (common/metrics.h): counters looked up once, and the callback
// gauges registered per filesystem. The daemon has one filesystem; a newer one (tests)
// replaces its series. Gauges hold weak references: the registry outlives what they read.
//
// Thread-safety: thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/metrics.h"
#include "ossmount/status.h"

namespace ossmount::data {
class MemoryBudget;
}

namespace ossmount::fs {

class ListAhead;

// What a filesystem holds, for the gauges and `ossmount stats`.
struct FilesystemStats {
  size_t inodes = 0;
  size_t dir_handles = 0;
  size_t file_handles = 0;
  size_t write_handles = 0;
  size_t whole_objects = 0;  // small-file buffers alive or being fetched
  size_t cached_entries = 0;
  size_t cached_listings = 0;
  size_t listed_names = 0;   // names in the cached listings
  size_t listing_bytes = 0;  // bytes those listings hold
  // The metadata budget: what listings, cached names and inodes hold, its limit
  // (--max-metadata-memory), and the listings and names dropped for it so far.
  size_t metadata_bytes = 0;
  size_t metadata_limit = 0;
  size_t metadata_evictions = 0;
};

// Opened files.
struct FileMetrics {
  metrics::Counter& opens;
  metrics::Counter& page_cache_opens;
  metrics::Counter& page_cache_reopen_hits;
  metrics::Counter& page_cache_reopen_misses;
  metrics::Gauge& open_handles;
  metrics::Counter& read_bytes;
};
FileMetrics& Files();

// The listings sent for one reason: listed, abandoned, failed.
struct ListingOutcomes {
  metrics::Counter& listed;
  metrics::Counter& abandoned;
  metrics::Counter& failed;

  ListingOutcomes(const char* name, const std::string& help);
  void Count(bool was_abandoned, const Status& status);
};
ListingOutcomes& ListAheadOutcomes();      // ossmount_list_ahead_total
ListingOutcomes& LookupListingOutcomes();  // ossmount_lookup_listings_total

// ossmount_memory_used_bytes and ossmount_memory_limit_bytes.
void RegisterMemoryGauges(std::weak_ptr<data::MemoryBudget> budget);
// ossmount_list_ahead_distance, and ossmount_list_ahead_dropped_total when `ahead` is set.
void RegisterListAheadGauges(size_t distance, std::weak_ptr<ListAhead> ahead);
// What a walk leaves in memory (inodes, cached listings): `stats` reads the filesystem's, or
// nullopt once it is gone (the gauges then read 0).
void RegisterFilesystemGauges(std::function<std::optional<FilesystemStats>()> stats);

}  // namespace ossmount::fs
