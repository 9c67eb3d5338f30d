// ObjectFilesystem: the Filesystem over an ObjectClient (see object_filesystem.h for the
// factory and filesystem.h for the contract). Exposed as a header only so tests can read
// its internal counters (Stats); everyone else uses MakeObjectFilesystem.
//
// Requests per operation (the design goal is zero redundant ones):
//   Lookup/GetAttr/Open of a name a fresh listing or lookup answered: none.
//   Lookup of an unknown name: HEAD key + LIST 'key/' max-keys 1, concurrently, shared by
//     concurrent lookups of the same path; none when the parent's listing is fresh.
//   ReadDir: none when the handle or the cache has a fresh listing; else every page of the
//     directory, shared by concurrent listings of the same directory. The first ReadDir of
//     a second subdirectory of one parent (a walk) also lists the next FsOptions::list_ahead
//     directories after it in the background (ListAhead), each as the same shared listing,
//     so a walk sends no more listings than it would have, only sooner; one it abandons
//     costs at most list_ahead.
//   Read of a small file (<= small_file_threshold): one GET per (object version) while any
//     handle holds it; of an empty file: none. Larger: one ranged GET per part, read ahead
//     of sequential readers; random reads get exactly their range (src/prefetch).
//
// Locks (all leaf locks: none is held while taking another, calling the client or running a
// callback): InodeTable::mu_, MetadataCache::mu_, handles_mu_ here, the SingleFlight
// mutexes, WholeObjectCache's and SequentialReader's. Handle objects and buffers whose
// destruction may take another lock are always released outside handles_mu_.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/memory_budget.h"
#include "fs/dir_lister.h"
#include "fs/list_ahead.h"
#include "fs/object_filesystem.h"
#include "fs/page_cache_trust.h"
#include "fs/single_flight.h"
#include "fs/whole_object_cache.h"
#include "meta/inode_table.h"
#include "meta/metadata_cache.h"
#include "prefetch/sequential_reader.h"

namespace ossmount::fs {

// Counters of the listings sent for one reason: listed, abandoned, failed.
struct ListingOutcomes;

class ObjectFilesystem : public Filesystem, public std::enable_shared_from_this<ObjectFilesystem> {
 public:
  // Entries per ReadDir reply: roughly what fits in the kernel's readdirplus buffers.
  static constexpr size_t kReadDirBatch = 128;

  // REQUIRES: options.prefix is "" or ends in '/'. Create with std::make_shared.
  ObjectFilesystem(boost::asio::io_context& io, std::shared_ptr<ObjectClient> client,
                   FsOptions options);

  void Lookup(InodeId parent, std::string name, Callback<Entry> done) override;
  void Forget(InodeId ino, uint64_t nlookup) override;
  void AddLookup(InodeId ino) override;
  void GetAttr(InodeId ino, Callback<AttrReply> done) override;
  void OpenDir(InodeId ino, Callback<uint64_t> done) override;
  void ReadDir(InodeId ino, uint64_t dir_handle, off_t offset,
               Callback<std::vector<DirEntry>> done) override;
  void ReleaseDir(InodeId ino, uint64_t dir_handle) override;
  void Open(InodeId ino, int flags, Callback<OpenReply> done) override;
  void OpenAs(InodeId ino, int flags, const Caller& caller, Callback<OpenReply> done) override;
  void SetBackingFilesWanted(bool wanted) override {
    backing_files_wanted_.store(wanted, std::memory_order_relaxed);
  }
  // Reserved on the budget as an on-demand read would be (always granted): readahead then
  // has that much less room, so that the budget still bounds every buffer. Thread-safe.
  void CountTransportBuffers(uint64_t bytes) override;
  ~ObjectFilesystem() override;
  void Read(InodeId ino, uint64_t fh, off_t offset, size_t size, Callback<ReadReply> done) override;
  void Release(InodeId ino, uint64_t fh) override;
  void EndSession() override;
  std::optional<std::string> DirectoryPath(InodeId ino) override;
  StatFs GetStatFs() override;

  struct Stats {
    size_t inodes = 0;
    size_t dir_handles = 0;
    size_t file_handles = 0;
    size_t whole_objects = 0;  // small-file buffers alive or being fetched
    size_t cached_entries = 0;
    size_t cached_listings = 0;
    size_t listed_names = 0;   // names in the cached listings
    size_t listing_bytes = 0;  // bytes those listings hold
  };
  Stats stats() const;
  // The budget every data buffer of this filesystem is accounted in (tests, readers).
  const std::shared_ptr<data::MemoryBudget>& memory_budget() const { return memory_budget_; }
  // Warm-up and sampler-order hints over this filesystem, created on first use.
  std::shared_ptr<prefetch::DatasetPrefetcher> dataset_prefetcher();
  // The inode the table currently gives `path` ("" = root), for tests.
  std::optional<InodeId> InodeOf(const std::string& path) const { return inodes_.Find(path); }

 private:
  // tests/unit/fs: drives private steps whose races no public call can line up.
  friend struct ObjectFilesystemTestAccess;

  struct DirHandle {
    InodeId ino = 0;
    std::string path;
    std::shared_ptr<const meta::DirSnapshot> snapshot;  // attached by the first ReadDir
    // Inodes this handle's replies pinned (InodeTable::Pin), unpinned at ReleaseDir: entries
    // the kernel took no reference to are dropped then, not kept forever.
    std::vector<InodeId> pinned;
    bool released = false;
  };
  struct FileHandle {
    InodeId ino = 0;
    std::string path;
    std::string key;
    uint64_t size = 0;
    std::string etag;  // pinned at open
    bool small = false;
    // The hint prefetcher was told at open (large file, backing file): no READ will tell it.
    bool read_notified = false;
    // A reopen of a file whose bytes the kernel was given (page_cached, keep_cache, no
    // backing file): its release says whether the page cache still held them.
    bool page_cache_reopen = false;
    std::shared_ptr<const Blob> blob;                    // small files, after the first read
    std::shared_ptr<prefetch::SequentialReader> reader;  // large files; Close()d on Release
    // For the audit log and metrics.
    Caller caller;
    std::chrono::system_clock::time_point opened;
    std::chrono::steady_clock::time_point opened_steady;
    std::atomic<uint64_t> bytes_read{0};
  };
  static void CountRead(FileHandle& handle, uint64_t bytes);
  // What a release does once the handle is out of the table.
  void Released(const std::shared_ptr<FileHandle>& handle, bool at_unmount);
  using ResolveCallback = std::function<void(Result<std::optional<meta::NodeAttr>>)>;

  // What is known about `path`: from the cache while fresh; else from a new listing of its
  // directory when the expired one was in demand (MetadataCache::WorthRelisting), else from
  // a probe of the one name (each shared by concurrent callers). Caches what the server
  // said unless it is an error. A cached answer is given on the calling thread.
  void Resolve(const std::string& path, ResolveCallback done);
  // The probe half of Resolve: asks the server about the one name.
  void ProbePath(const std::string& path, ResolveCallback done);
  // The listing of a directory: the fresh cached one, or a new one (single-flight) that is
  // then cached. A fresh cached listing is given on the calling thread.
  void GetListing(const std::string& path, ListingCallback done);
  struct FetchMode {
    // A fresh listing cached by the time this call leads the flight answers instead of a
    // new one: the one a caller found missing may have landed just before it joined.
    bool fresh_will_do = false;
    // Asked after each page: once it says no, a listing nobody else joined stops there
    // (kCancelled, uncached). Empty: the listing goes on to its last page.
    KeepListing worth_going_on = nullptr;
    // Where the outcome of a listing this call sent itself is counted (ListingOutcomes):
    // not when it joins a listing in flight or the cache answers, with no request of its own.
    ListingOutcomes* counted_in = nullptr;
  };
  // Lists the directory from the server (joining a listing in flight) and caches it.
  void FetchListing(const std::string& path, ListingCallback done, FetchMode mode);
  // A program entered directory `path`: if that looks like a walk of its parent, the
  // directories after it in the parent's fresh listing are handed to list_ahead_.
  void ListAheadOf(const std::string& path);
  // Starts a listing of the directory whose cached one is about to expire, if none is in
  // flight (MetadataCache::ClaimRefreshAhead); nobody waits for it.
  void RefreshListingAhead(const std::string& path);
  // A probe of a name in `dir` is about to be sent: lists the directory in the background when
  // MetadataCache::ClaimListingForLookups says so; nobody waits for it.
  void ListForLookups(const std::string& dir);
  // Replies with the entries from `offset`; each entry's inode stays pinned by the handle
  // until ReleaseDir (or, if the handle was released meanwhile, until the reply is sent).
  void ServeDir(const std::shared_ptr<DirHandle>& handle,
                const std::shared_ptr<const meta::DirSnapshot>& snap, off_t offset,
                Callback<std::vector<DirEntry>>& done);
  // The reader of one open large file, sharing the budget, slots and disk cache.
  std::shared_ptr<prefetch::SequentialReader> NewLargeFileReader(const std::string& key,
                                                                 uint64_t size,
                                                                 const std::string& etag,
                                                                 std::optional<uint64_t> crc64);
  void ReadSmall(const std::shared_ptr<FileHandle>& h, uint64_t offset, size_t size,
                 Callback<ReadReply> done);
  // A handle now holds `path`'s bytes: the dataset prefetcher (if any) may move on.
  void NotifyRead(const std::string& path);

  // The DatasetPrefetcher's Fetcher and Lister (src/prefetch knows nothing of fs).
  void PrefetchOne(const prefetch::PrefetchItem& item, bool hold, prefetch::FetchDone done);
  void PrefetchObject(std::string key, uint64_t size, std::string etag, bool hold,
                      prefetch::FetchDone done);
  // Disk-mode warm-up of a file above small_file_threshold: its parts into the disk cache.
  struct LargeWarm;
  void WarmLargeFile(std::string key, uint64_t size, std::string etag, prefetch::FetchDone done);
  void ListForWarmup(const std::string& path, prefetch::ListBatch batch,
                     std::function<void(Status)> done);
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
  void ListRecursive(std::shared_ptr<RecursiveListing> listing, std::string token = "");
  // --prefetch-on-list: the files of a freshly fetched listing, as one warm-up job.
  void WarmListing(const std::string& path, const meta::DirSnapshot& snapshot);

  Attributes MakeAttributes(InodeId ino, const meta::NodeAttr& attr) const;
  Entry MakeEntry(InodeId ino, const meta::NodeAttr& attr) const;

  boost::asio::io_context& io_;
  const std::shared_ptr<ObjectClient> client_;
  const FsOptions options_;
  const int64_t mount_time_sec_;
  meta::InodeTable inodes_;
  meta::MetadataCache cache_;
  SingleFlight<std::optional<meta::NodeAttr>> probes_;
  SingleFlight<std::shared_ptr<const meta::DirSnapshot>> listings_;
  // Null when FsOptions::list_ahead is 0 or the TTL is zero.
  std::shared_ptr<ListAhead> list_ahead_;
  // One limit on all data buffers (whole small objects, readahead parts): FsOptions::max_memory.
  // Shared with the readers of large files.
  const std::shared_ptr<data::MemoryBudget> memory_budget_;
  // Transport buffers counted in memory_budget_ (CountTransportBuffers) for the session;
  // released with the filesystem.
  std::atomic<uint64_t> transport_buffer_bytes_{0};
  WholeObjectCache whole_objects_;
  // Readahead GETs in flight across all open large files (ReadaheadOptions::global_concurrency).
  const std::shared_ptr<prefetch::FetchSlots> readahead_slots_ =
      std::make_shared<prefetch::FetchSlots>(options_.readahead.global_concurrency);

  // The dataset prefetcher: created once under prefetcher_mu_; prefetcher_raw_ lets reads
  // check for it without a lock (it lives as long as the filesystem once set).
  std::mutex prefetcher_mu_;
  std::shared_ptr<prefetch::DatasetPrefetcher> prefetcher_;
  std::atomic<prefetch::DatasetPrefetcher*> prefetcher_raw_{nullptr};
  std::atomic<bool> backing_files_wanted_{false};
  // Whether files the kernel was given are still in its page cache (hinted prefetch skips
  // them while it is).
  PageCacheTrust page_cache_trust_;

  // handles_mu_ guards the two handle maps, next_fh_, DirHandle::snapshot, ::pinned and
  // ::released, and FileHandle::blob of every handle.
  mutable std::mutex handles_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<DirHandle>> dir_handles_;
  std::unordered_map<uint64_t, std::shared_ptr<FileHandle>> file_handles_;
  uint64_t next_fh_ = 1;
};

}  // namespace ossmount::fs
