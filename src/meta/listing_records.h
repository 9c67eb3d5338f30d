// ListingRecords: the directory listings a mount holds, kept in a file for the next daemon
// process on the same mount (in the supervisor's state directory), so that a restart does not
// list every directory again. The cache tells it, under the cache's lock and in its order, of
// each listing it keeps and each it stops holding (MetadataCache::ListingSink). A listing it
// stops holding leaves the file before Dropped returns (one small write), so the file never
// holds a listing the cache gave up, nor one older than a change this mount made (a change
// keeps the patched listing, which replaces the old one). A kept listing is written by a
// thread of its own, so a daemon killed before only loses it (the directory is listed again).
// Listings are compressed (xz, preset 0).
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/record_log.h"
#include "meta/metadata_cache.h"

namespace ossmount::meta {

class ListingRecords : public MetadataCache::ListingSink {
 public:
  struct Restored {
    uint64_t key = 0;  // its record's
    std::string dir_path;
    std::shared_ptr<const DirSnapshot> listing;
    TimePoint expiry;     // the cache's clock (CLOCK_MONOTONIC: the same in every process)
    std::string payload;  // the record as it was read, which a new file takes as it is
  };
  // The listings of `records` (RecordLog::Load of a file such as this one writes); records
  // that do not decode are left out.
  static std::vector<Restored> Decode(const RecordLog::Records& records);
  // Keeps listings in a new file at `path`, which starts with the records of `initial`.
  static Result<std::unique_ptr<ListingRecords>> Create(const std::string& path,
                                                        const std::vector<Restored>& initial);
  // Stops the writer; listings not written yet are not.
  ~ListingRecords() override;
  ListingRecords(const ListingRecords&) = delete;
  ListingRecords& operator=(const ListingRecords&) = delete;

  void Kept(const std::string& dir_path, std::shared_ptr<const DirSnapshot> listing,
            TimePoint expiry) override;
  void Dropped(const std::string& dir_path) override;

  // Waits until every listing kept so far is in the file (for tests and a clean stop).
  void Flush();
  // The first write error (then nothing more is written), or OK.
  Status error() const;
  // Listings in the file, and the file's size.
  size_t recorded() const;
  uint64_t bytes() const;

  // The record of one listing, and back (nullopt when `payload` is not one).
  static std::string Encode(const std::string& dir_path, const DirSnapshot& listing,
                            TimePoint expiry);
  static std::optional<Restored> DecodeOne(std::string_view payload);

 private:
  explicit ListingRecords(std::unique_ptr<RecordLog> log);
  void WriteLoop();
  // Rewrites the file from its live records when it is mostly dead ones. REQUIRES mu_.
  void CompactIfDue();

  struct Dir {
    uint64_t generation = 0;                     // set by each Kept, from generations_
    size_t recorded_bytes = 0;                   // the payload in the file, 0 for none
    std::shared_ptr<const DirSnapshot> pending;  // to write, when set
    TimePoint expiry;
  };

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::unique_ptr<RecordLog> log_;  // guarded by mu_
  std::map<std::string, Dir> dirs_;
  std::deque<std::string> queue_;  // directories with a pending listing, oldest first
  uint64_t generations_ = 0;       // the last generation given (never reused)
  size_t writing_ = 0;             // listings taken by the writer and not yet written
  bool stop_ = false;
  std::thread writer_;
};

}  // namespace ossmount::meta
