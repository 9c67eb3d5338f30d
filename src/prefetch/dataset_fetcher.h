// DatasetFetcher: the DatasetPrefetcher's Fetcher over object storage. A hinted path is
// resolved through the filesystem first (kPageCached when the reader will not ask for it).
// Then an empty file is skipped; a small one (<= small_file_threshold) is fetched whole
// through the slot its readers share (WholeFetcher) unless the disk cache has it; a large one
// is warmed part by part into the disk cache, as the blocks its readers look up (only with a
// disk cache and when not held in memory). Everything goes out at Priority::kPrefetch with
// memory taken by TryReserve; a busy disk-cache writer makes warm-up wait (kBusy).
//
// Knows nothing of the filesystem: it resolves hints and fetches whole objects through the
// functions it is given. Ownership: create with std::make_shared; fetches in flight hold a
// reference. Thread-safety: thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ossmount/object_client.h"
#include "ossmount/status.h"
#include "prefetch/fetch_result.h"
#include "prefetch/prefetch_item.h"

namespace ossmount::data {
class DiskBlockCache;
class MemoryBudget;
}  // namespace ossmount::data

namespace ossmount::prefetch {

class DatasetFetcher : public std::enable_shared_from_this<DatasetFetcher> {
 public:
  // Disk-cache writes queued beyond which warm-up waits (kBusy) instead of having its blocks
  // dropped by the cache's bounded write queue.
  static constexpr uint64_t kDiskBusyPending = 128;

  // A hinted file as the filesystem knows it.
  struct HintedFile {
    std::string key;
    uint64_t size = 0;
    std::string etag;
    bool page_cached = false;  // the kernel holds its bytes: its reader will not ask for them
  };
  // nullopt: no such file (or a directory).
  using HintResolver = std::function<void(
      const std::string& path, std::function<void(Result<std::optional<HintedFile>>)> done)>;
  // The whole object into the slot its readers share (one GET), at Priority::kPrefetch with
  // the memory taken by TryReserve: kNoSpace when the budget refuses.
  using WholeFetcher =
      std::function<void(const std::string& key, const std::string& etag, uint64_t size,
                         std::function<void(Result<std::shared_ptr<const void>>)> done)>;

  struct Options {
    uint64_t small_file_threshold = 0;
    uint64_t part_size = 0;                            // the readers' parts: disk blocks
    std::shared_ptr<data::DiskBlockCache> disk_cache;  // null: none
    std::shared_ptr<data::MemoryBudget> budget;        // required
  };

  DatasetFetcher(boost::asio::io_context& io, std::shared_ptr<ObjectClient> client, Options options,
                 HintResolver resolve, WholeFetcher fetch_whole);

  // The Fetcher (DatasetPrefetcher): `hold` keeps the bytes in memory (FetchResult::hold).
  void Fetch(const PrefetchItem& item, bool hold, FetchDone done);

 private:
  struct PartWarm;
  void FetchObject(std::string key, uint64_t size, std::string etag, bool hold, FetchDone done);
  void Post(FetchDone done, FetchResult result);

  boost::asio::io_context& io_;
  const std::shared_ptr<ObjectClient> client_;
  const Options options_;
  const HintResolver resolve_;
  const WholeFetcher fetch_whole_;
};

}  // namespace ossmount::prefetch
