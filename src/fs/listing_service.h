// ListingService: what the bucket says about the names under the mount. Resolves a path (the
// metadata cache while fresh, else a new listing of its directory or a probe of the name),
// lists directories (one listing per directory at a time; list-ahead of tree walks; listings
// for names looked up by path; refresh ahead of expiry), and lists a tree for warm-up. Every
// listing fetched is cached and told to the ReadObserver.
//
// Ownership: create with std::make_shared; work in flight holds a reference.
// Thread-safety: thread-safe; its locks are leaf locks, none held while calling the client
// or a callback.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "fs/dir_lister.h"
#include "fs/fs_options.h"
#include "fs/list_ahead.h"
#include "fs/listing_guard.h"
#include "fs/read_observer.h"
#include "fs/single_flight.h"
#include "meta/key_mapping.h"
#include "meta/metadata_cache.h"
#include "ossmount/object_client.h"
#include "prefetch/fetch_result.h"

namespace ossmount::fs {

struct ListingOutcomes;

class ListingService : public std::enable_shared_from_this<ListingService> {
 public:
  using ResolveCallback = std::function<void(Result<std::optional<meta::NodeAttr>>)>;

  // REQUIRES: options.prefix is "" or ends in '/'.
  ListingService(std::shared_ptr<ObjectClient> client, const FsOptions& options);

  meta::MetadataCache& cache() { return cache_; }
  const meta::MetadataCache& cache() const { return cache_; }
  // Told of every listing fetched. Set once, before the first listing.
  void SetObserver(std::shared_ptr<ReadObserver> observer) { observer_ = std::move(observer); }

  // What is known about `path`: from the cache while fresh; else from a new listing of its
  // directory when the expired one was in demand (MetadataCache::WorthRelisting), else from
  // a probe of the one name (each shared by concurrent callers). Caches what the server
  // said unless it is an error. A cached answer is given on the calling thread.
  void Resolve(const std::string& path, ResolveCallback done);
  // What the server says about `path` now, whatever the cache holds (joining a probe of the
  // name in flight); the answer is cached. For decisions a stale answer would turn into lost
  // data: whether a create would replace an object, whether a rename target is empty.
  void ResolveFromServer(const std::string& path, ResolveCallback done) {
    ProbePath(path, std::move(done));
  }
  // The listing of a directory: the fresh cached one, or a new one (single-flight) that is
  // then cached. A fresh cached listing is given on the calling thread. `wants`, if given,
  // says whether the caller still waits (a directory handle not yet released): a listing
  // that no caller waits for any more stops after the page in flight (kCancelled). A
  // directory too large to hold whole fails with kTooBig (read it with a DirStream).
  void GetListing(const std::string& path, ListingCallback done,
                  SingleFlight<std::shared_ptr<const meta::DirSnapshot>>::Wants wants = nullptr);
  // A program entered directory `path`: if that looks like a walk of its parent, the
  // directories after it in the parent's fresh listing are listed ahead (ListAhead).
  void ListAheadOf(const std::string& path);
  // The dataset prefetcher's Lister: the files under `path` ("" = the root), a file alone,
  // page after page (ListingGuard).
  void ListForWarmup(const std::string& path, prefetch::ListBatch batch,
                     std::function<void(Status)> done);

 private:
  // tests/unit/fs: drives FetchListing's modes, whose races no public call can line up.
  friend struct ListingServiceTestAccess;

  struct FetchMode {
    // A fresh listing cached by the time this call leads the flight answers instead of a
    // new one: the one a caller found missing may have landed just before it joined.
    bool fresh_will_do = false;
    // Whether this caller still wants the listing after so many pages: once no caller that
    // joined it does, it stops there (kCancelled, uncached). Empty: it always does.
    SingleFlight<std::shared_ptr<const meta::DirSnapshot>>::Wants wants = nullptr;
    // Where the outcome of a listing this call sent itself is counted (ListingOutcomes):
    // not when it joins a listing in flight or the cache answers, with no request of its own.
    ListingOutcomes* counted_in = nullptr;
  };
  // One warm-up listing of everything under a prefix, page after page.
  struct RecursiveListing {
    RecursiveListing(std::string p, int max_pages, prefetch::ListBatch b,
                     std::function<void(Status)> d)
        : prefix(p), guard(std::move(p), max_pages), batch(std::move(b)), done(std::move(d)) {}
    std::string prefix;
    ListingGuard guard;
    prefetch::ListBatch batch;
    std::function<void(Status)> done;
  };

  // The probe half of Resolve: asks the server about the one name.
  void ProbePath(const std::string& path, ResolveCallback done);
  // Lists the directory from the server (joining a listing in flight) and caches it.
  void FetchListing(const std::string& path, ListingCallback done, FetchMode mode);
  // Starts a listing of the directory whose cached one is about to expire, if none is in
  // flight (MetadataCache::ClaimRefreshAhead); nobody waits for it.
  void RefreshListingAhead(const std::string& path);
  // A probe of a name in `dir` is about to be sent: lists the directory in the background when
  // MetadataCache::ClaimListingForLookups says so; nobody waits for it.
  void ListForLookups(const std::string& dir);
  void ListRecursive(std::shared_ptr<RecursiveListing> listing, std::string token = "");

  // Pages a listing for a lookup (WorthRelisting) may take before it is given up for probes.
  static constexpr int kRelistMaxPages =
      2 * static_cast<int>(meta::MetadataCache::kRelistMaxEntries / 1000);

  const std::shared_ptr<ObjectClient> client_;
  const std::string prefix_;
  const int max_list_pages_;
  const bool list_for_lookups_;
  meta::MetadataCache cache_;
  SingleFlight<std::optional<meta::NodeAttr>> probes_;
  SingleFlight<std::shared_ptr<const meta::DirSnapshot>> listings_;
  // Null when FsOptions::list_ahead is 0 or the TTL is zero.
  std::shared_ptr<ListAhead> list_ahead_;
  std::shared_ptr<ReadObserver> observer_;
};

}  // namespace ossmount::fs
