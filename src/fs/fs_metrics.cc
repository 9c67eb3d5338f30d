#include "fs/fs_metrics.h"

#include "data/memory_budget.h"
#include "fs/list_ahead.h"

namespace ossmount::fs {
namespace {

constexpr const char* kPageCacheReopens = "ossmount_page_cache_reopens_total";
constexpr const char* kPageCacheReopensHelp =
    "Reopens (keep_cache) of files whose bytes the kernel was given: hit = released without a "
    "READ (its page cache served them), miss = a READ reached the daemon.";

}  // namespace

FileMetrics& Files() {
  static FileMetrics m{
      metrics::Registry::Global().GetCounter("ossmount_opens_total", "Files opened."),
      metrics::Registry::Global().GetCounter(
          "ossmount_page_cache_opens_total",
          "Opens answered with keep_cache: the kernel page cache of earlier opens stays valid."),
      metrics::Registry::Global().GetCounter(kPageCacheReopens, kPageCacheReopensHelp,
                                             {{"result", "hit"}}),
      metrics::Registry::Global().GetCounter(kPageCacheReopens, kPageCacheReopensHelp,
                                             {{"result", "miss"}}),
      metrics::Registry::Global().GetGauge("ossmount_open_handles", "Files open now."),
      metrics::Registry::Global().GetCounter("ossmount_read_bytes_total",
                                             "Bytes replied to reads of files."),
  };
  return m;
}

ListingOutcomes::ListingOutcomes(const char* name, const std::string& help)
    : listed(metrics::Registry::Global().GetCounter(name, help, {{"result", "listed"}})),
      abandoned(metrics::Registry::Global().GetCounter(name, help, {{"result", "abandoned"}})),
      failed(metrics::Registry::Global().GetCounter(name, help, {{"result", "failed"}})) {}

void ListingOutcomes::Count(bool was_abandoned, const Status& status) {
  (was_abandoned ? abandoned : status.ok() ? listed : failed).Add();
}

ListingOutcomes& ListAheadOutcomes() {
  static ListingOutcomes m(
      "ossmount_list_ahead_total",
      "Directories whose listing was sent ahead of a tree walk (one per directory, whatever its "
      "pages): listed = cached, abandoned = stopped after " +
          std::to_string(ListAhead::kMaxPages) +
          " pages with no reader waiting (not cached), failed = the listing failed.");
  return m;
}

ListingOutcomes& LookupListingOutcomes() {
  static ListingOutcomes m(
      "ossmount_lookup_listings_total",
      "Directories listed in the background because names in them were looked up that nothing "
      "cached answered (one per listing, whatever its pages): listed = cached, abandoned = "
      "stopped when the lookups stopped (not cached), failed = the listing failed.");
  return m;
}

void RegisterMemoryGauges(std::weak_ptr<data::MemoryBudget> budget) {
  auto& registry = metrics::Registry::Global();
  registry.SetCallbackGauge("ossmount_memory_used_bytes",
                            "Bytes of data buffers held now (whole objects, readahead parts).", {},
                            [budget] {
                              auto b = budget.lock();
                              return b ? static_cast<double>(b->used()) : 0.0;
                            });
  registry.SetCallbackGauge("ossmount_memory_limit_bytes", "The data buffer budget (--max-memory).",
                            {}, [budget] {
                              auto b = budget.lock();
                              return b ? static_cast<double>(b->limit()) : 0.0;
                            });
}

void RegisterListAheadGauges(size_t distance, std::weak_ptr<ListAhead> ahead) {
  auto& registry = metrics::Registry::Global();
  registry.SetCallbackGauge("ossmount_list_ahead_distance",
                            "Directories listed ahead of a walk at most (--list-ahead; 0 = off, "
                            "also under a zero --metadata-ttl).",
                            {}, [distance] { return static_cast<double>(distance); });
  if (ahead.expired()) return;
  registry.SetCallbackCounter("ossmount_list_ahead_dropped_total",
                              "Directories queued to be listed ahead, then dropped for newer "
                              "ones (the walk moved on).",
                              {}, [ahead] {
                                auto a = ahead.lock();
                                return a ? static_cast<double>(a->stats().dropped) : 0.0;
                              });
}

void RegisterFilesystemGauges(std::function<std::optional<FilesystemStats>()> stats) {
  auto gauge = [&stats](const char* name, const char* help, size_t FilesystemStats::*field) {
    metrics::Registry::Global().SetCallbackGauge(name, help, {}, [stats, field] {
      std::optional<FilesystemStats> now = stats();
      return now ? static_cast<double>((*now).*field) : 0.0;
    });
  };
  gauge("ossmount_inodes",
        "Inodes the daemon holds: names the kernel keeps a reference to, and the entries of "
        "directories being read.",
        &FilesystemStats::inodes);
  gauge("ossmount_metadata_listings", "Directory listings in the metadata cache.",
        &FilesystemStats::cached_listings);
  gauge("ossmount_metadata_listed_names", "Names in the cached directory listings.",
        &FilesystemStats::listed_names);
  gauge("ossmount_metadata_listing_bytes",
        "Bytes the cached directory listings hold (a 32-byte record per name, plus the names "
        "and etags).",
        &FilesystemStats::listing_bytes);
  gauge("ossmount_metadata_bytes",
        "Bytes the metadata budget holds: cached listings and names, and the inode table.",
        &FilesystemStats::metadata_bytes);
  gauge("ossmount_metadata_limit_bytes", "The metadata budget (--max-metadata-memory).",
        &FilesystemStats::metadata_limit);
  metrics::Registry::Global().SetCallbackCounter(
      "ossmount_metadata_evictions_total",
      "Cached listings and names dropped to stay within --max-metadata-memory.", {}, [stats] {
        std::optional<FilesystemStats> now = stats();
        return now ? static_cast<double>(now->metadata_evictions) : 0.0;
      });
}

}  // namespace ossmount::fs
