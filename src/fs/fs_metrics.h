// The filesystem's metrics (common/metrics.h): counters looked up once, and the callback
// gauges registered per filesystem. The daemon has one filesystem; a newer one (tests)
// replaces its series. Gauges hold weak references: the registry outlives what they read.
//
// Thread-safety: thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/metrics.h"
#include "ossmount/status.h"

namespace ossmount::data {
class MemoryBudget;
}

namespace ossmount::fs {

class ListAhead;
class ObjectFilesystem;

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
// What a walk leaves in memory (ObjectFilesystem::Stats: inodes, cached listings).
void RegisterFilesystemGauges(std::weak_ptr<ObjectFilesystem> filesystem);

}  // namespace ossmount::fs
