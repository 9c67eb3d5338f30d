#include "fs/object_filesystem.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <string_view>

#include "common/metrics.h"
#include "fs/dir_lister.h"
#include "fs/name_prober.h"
#include "fs/object_filesystem_impl.h"
#include "meta/key_mapping.h"
#include "prefetch/page_buffer.h"

namespace ossmount::fs {

namespace {

Status NoSuchInode(InodeId ino) {
  return Status(ErrorCode::kNotFound, "inode " + std::to_string(ino) + " is not known");
}

Status BadHandle(uint64_t fh) {
  return Status(ErrorCode::kInvalidArgument, "handle " + std::to_string(fh) + " is not open");
}

// A fingerprint of the object version whose attributes the kernel is handed (InodeTable's
// shown_version): its etag and size. Never 0, which the table reads as "none yet".
uint64_t VersionOf(const meta::NodeAttr& attr) {
  const uint64_t h = std::hash<std::string_view>{}(attr.etag) ^ (attr.size * 0x9E3779B97F4A7C15ull);
  return h == 0 ? 1 : h;
}

int64_t NowUnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr const char* kPageCacheReopens = "ossmount_page_cache_reopens_total";
constexpr const char* kPageCacheReopensHelp =
    "Reopens (keep_cache) of files whose bytes the kernel was given: hit = released without a "
    "READ (its page cache served them), miss = a READ reached the daemon.";

// Metrics of opened files (common/metrics.h), looked up once.
struct FileMetrics {
  metrics::Counter& opens;
  metrics::Counter& page_cache_opens;
  metrics::Counter& page_cache_reopen_hits;
  metrics::Counter& page_cache_reopen_misses;
  metrics::Gauge& open_handles;
  metrics::Counter& read_bytes;
};

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

constexpr const char* kListAhead = "ossmount_list_ahead_total";
constexpr const char* kLookupListings = "ossmount_lookup_listings_total";

}  // namespace

// The outcome of each listing sent for one reason (looked up once).
struct ListingOutcomes {
  metrics::Counter& listed;
  metrics::Counter& abandoned;
  metrics::Counter& failed;

  ListingOutcomes(const char* name, const std::string& help)
      : listed(metrics::Registry::Global().GetCounter(name, help, {{"result", "listed"}})),
        abandoned(metrics::Registry::Global().GetCounter(name, help, {{"result", "abandoned"}})),
        failed(metrics::Registry::Global().GetCounter(name, help, {{"result", "failed"}})) {}

  void Count(bool was_abandoned, const Status& status) {
    (was_abandoned ? abandoned : status.ok() ? listed : failed).Add();
  }
};

namespace {

ListingOutcomes& ListAheadOutcomes() {
  static ListingOutcomes m(
      kListAhead,
      "Directories whose listing was sent ahead of a tree walk (one per directory, whatever its "
      "pages): listed = cached, abandoned = stopped after " +
          std::to_string(ListAhead::kMaxPages) +
          " pages with no reader waiting (not cached), failed = the listing failed.");
  return m;
}

ListingOutcomes& LookupListingOutcomes() {
  static ListingOutcomes m(
      kLookupListings,
      "Directories listed in the background because names in them were looked up that nothing "
      "cached answered (one per listing, whatever its pages): listed = cached, abandoned = "
      "stopped when the lookups stopped (not cached), failed = the listing failed.");
  return m;
}

}  // namespace

// Bytes replied through a handle, for the audit log and metrics: two relaxed atomic adds.
void ObjectFilesystem::CountRead(FileHandle& handle, uint64_t bytes) {
  handle.bytes_read.fetch_add(bytes, std::memory_order_relaxed);
  Files().read_bytes.Add(bytes);
}

ObjectFilesystem::ObjectFilesystem(boost::asio::io_context& io,
                                   std::shared_ptr<ObjectClient> client, FsOptions options)
    : io_(io),
      client_(std::move(client)),
      options_(std::move(options)),
      mount_time_sec_(NowUnixSeconds()),
      cache_(meta::TtlPolicy(options_.metadata_ttl, options_.negative_ttl, options_.clock)),
      memory_budget_(std::make_shared<data::MemoryBudget>(options_.max_memory)),
      whole_objects_(io, client_, memory_budget_, options_.disk_cache) {
  // The daemon has one filesystem; a newer one (tests) replaces the series. Weak: the
  // registry outlives the budget.
  std::weak_ptr<data::MemoryBudget> budget = memory_budget_;
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
  // Recycled part buffers are resident memory beside the budget: an eighth of it at most.
  prefetch::PageBuffer::SetPoolLimit(
      std::min<uint64_t>(prefetch::PageBuffer::kDefaultPoolLimit, options_.max_memory / 8));
  // Under a zero TTL a listing is stale when it lands: listing ahead would only add requests.
  const meta::TtlPolicy& ttl = cache_.ttl();
  const size_t list_ahead = ttl.indefinite() || ttl.revalidates() ? options_.list_ahead : 0;
  registry.SetCallbackGauge("ossmount_list_ahead_distance",
                            "Directories listed ahead of a walk at most (--list-ahead; 0 = off, "
                            "also under a zero --metadata-ttl).",
                            {}, [list_ahead] { return static_cast<double>(list_ahead); });
  if (list_ahead > 0) {
    // Raw `this`: the lister runs from ReadDir or from a listing's completion, both of which
    // hold a reference to the filesystem.
    list_ahead_ = std::make_shared<ListAhead>(
        list_ahead, [this](const std::string& path, std::function<void()> done) {
          // Listed since it was queued: fresh_will_do answers from the cache, with no request.
          FetchListing(
              path,
              [done = std::move(done)](const Result<std::shared_ptr<const meta::DirSnapshot>>&) {
                done();
              },
              FetchMode{.fresh_will_do = true,
                        .worth_going_on = [](int pages) { return pages < ListAhead::kMaxPages; },
                        .counted_in = &ListAheadOutcomes()});
        });
    std::weak_ptr<ListAhead> weak = list_ahead_;
    registry.SetCallbackCounter("ossmount_list_ahead_dropped_total",
                                "Directories queued to be listed ahead, then dropped for newer "
                                "ones (the walk moved on).",
                                {}, [weak] {
                                  auto ahead = weak.lock();
                                  return ahead ? static_cast<double>(ahead->stats().dropped) : 0.0;
                                });
  }
}

Attributes ObjectFilesystem::MakeAttributes(InodeId ino, const meta::NodeAttr& attr) const {
  Attributes a;
  a.ino = ino;
  a.is_dir = attr.is_dir();
  a.uid = options_.uid;
  a.gid = options_.gid;
  if (attr.is_dir()) {
    a.mode = S_IFDIR | (options_.dir_mode & 07777);
    a.nlink = 2;
    a.size = 0;
    a.mtime_sec = mount_time_sec_;
  } else {
    a.mode = S_IFREG | (options_.file_mode & 07777);
    a.nlink = 1;
    a.size = attr.size;
    a.mtime_sec = attr.mtime_sec;
  }
  return a;
}

Entry ObjectFilesystem::MakeEntry(InodeId ino, const meta::NodeAttr& attr) const {
  Entry e;
  e.attr = MakeAttributes(ino, attr);
  e.entry_timeout = cache_.ttl().KernelTimeout();
  e.attr_timeout = e.entry_timeout;
  return e;
}

// ---------------------------------------------------------------------------------------
// Metadata

namespace {

// Gives `done` what the cache knows about a path; false (and `done` untouched) when it
// knows nothing.
bool AnswerFromCache(const meta::MetadataCache::Answer& answer,
                     std::function<void(Result<std::optional<meta::NodeAttr>>)>& done) {
  switch (answer.state) {
    case meta::MetadataCache::Answer::kPresent:
      done(std::optional(answer.attr));
      return true;
    case meta::MetadataCache::Answer::kAbsent:
      done(std::optional<meta::NodeAttr>());
      return true;
    case meta::MetadataCache::Answer::kUnknown:
      break;
  }
  return false;
}

}  // namespace

void ObjectFilesystem::Resolve(const std::string& path, ResolveCallback done) {
  meta::MetadataCache::Answer answer = cache_.Find(path);
  if (answer.state != meta::MetadataCache::Answer::kUnknown) {
    if (cache_.ttl().revalidates()) {
      const std::string parent(meta::SplitPath(path).first);
      if (cache_.ClaimRefreshAhead(parent)) RefreshListingAhead(parent);
    }
    AnswerFromCache(answer, done);
    return;
  }
  const std::string parent(meta::SplitPath(path).first);
  if (!cache_.WorthRelisting(parent)) return ProbePath(path, std::move(done));
  // One listing answers this name and its siblings until it expires again.
  GetListing(parent, [self = shared_from_this(), path, done = std::move(done)](
                         Result<std::shared_ptr<const meta::DirSnapshot>> r) mutable {
    if (r.ok() && AnswerFromCache(self->cache_.Find(path), done)) return;
    // The listing failed, or something newer said "unknown" (an invalidation meanwhile).
    self->ProbePath(path, std::move(done));
  });
}

void ObjectFilesystem::ProbePath(const std::string& path, ResolveCallback done) {
  if (!probes_.Join(path, [done = std::move(done)](const ProbeResult& r) { done(r); })) return;
  ListForLookups(std::string(meta::SplitPath(path).first));
  ProbeName(client_, meta::FileKey(options_.prefix, path),
            [self = shared_from_this(), path](ProbeResult r) {
              if (r.ok()) {
                if (r->has_value()) {
                  self->cache_.PutPresent(path, **r);
                } else {
                  self->cache_.PutAbsent(path);
                }
              }
              self->probes_.Complete(path, r);
            });
}

void ObjectFilesystem::Lookup(InodeId parent, std::string name, Callback<Entry> done) {
  Status valid = meta::CheckLookupName(name);
  if (!valid.ok()) return done(valid);
  auto node = inodes_.Get(parent);
  if (!node) return done(NoSuchInode(parent));
  if (!node->is_dir) {
    return done(Status(ErrorCode::kNotFound, "not a directory"));
  }
  std::string path = meta::JoinPath(node->path, name);
  Resolve(path, [self = shared_from_this(), path,
                 done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value()) return done(Status(ErrorCode::kNotFound, "no such file: " + path));
    const meta::NodeAttr& attr = **r;
    InodeId ino = self->inodes_.Ensure(path, attr.is_dir(), 1, VersionOf(attr));
    done(self->MakeEntry(ino, attr));
  });
}

void ObjectFilesystem::Forget(InodeId ino, uint64_t nlookup) { inodes_.Forget(ino, nlookup); }

void ObjectFilesystem::AddLookup(InodeId ino) { inodes_.AddLookup(ino); }

void ObjectFilesystem::GetAttr(InodeId ino, Callback<AttrReply> done) {
  auto node = inodes_.Get(ino);
  if (!node) return done(NoSuchInode(ino));
  if (ino == kRootInode) {
    AttrReply reply{MakeAttributes(ino, meta::DirAttr()), cache_.ttl().KernelTimeout()};
    return done(reply);
  }
  Resolve(node->path, [self = shared_from_this(), ino, is_dir = node->is_dir, path = node->path,
                       done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value() || (*r)->is_dir() != is_dir) {
      return done(Status(ErrorCode::kNotFound, "'" + path + "' no longer exists as it was"));
    }
    self->inodes_.ShowVersion(ino, VersionOf(**r));  // this reply updates the kernel
    done(AttrReply{self->MakeAttributes(ino, **r), self->cache_.ttl().KernelTimeout()});
  });
}

// ---------------------------------------------------------------------------------------
// Directories

void ObjectFilesystem::OpenDir(InodeId ino, Callback<uint64_t> done) {
  auto node = inodes_.Get(ino);
  if (!node) return done(NoSuchInode(ino));
  if (!node->is_dir) {
    return done(Status(ErrorCode::kInvalidArgument, "not a directory"));
  }
  auto handle = std::make_shared<DirHandle>();
  handle->ino = ino;
  handle->path = node->path;
  uint64_t fh;
  {
    std::lock_guard lock(handles_mu_);
    fh = next_fh_++;
    dir_handles_[fh] = std::move(handle);
  }
  done(fh);
}

void ObjectFilesystem::GetListing(const std::string& path, ListingCallback done) {
  if (auto fresh = cache_.FreshListing(path)) {
    return done(std::move(fresh));
  }
  FetchListing(path, std::move(done), FetchMode{.fresh_will_do = true});
}

void ObjectFilesystem::RefreshListingAhead(const std::string& path) {
  // A new listing: the cached one is fresh, only about to expire. If it fails, a later
  // lookup may claim another once the demand is there again.
  FetchListing(
      path,
      [self = shared_from_this(), path](const Result<std::shared_ptr<const meta::DirSnapshot>>& r) {
        if (!r.ok()) self->cache_.BackgroundListingEnded(path, 0);
      },
      FetchMode{});
}

void ObjectFilesystem::FetchListing(const std::string& path, ListingCallback done, FetchMode mode) {
  if (!listings_.Join(
          path, [done = std::move(done)](
                    const Result<std::shared_ptr<const meta::DirSnapshot>>& r) { done(r); })) {
    return;
  }
  // A flight completes after caching its listing, so one that ended before this Join is
  // seen here; one that ends after it was joined.
  if (mode.fresh_will_do) {
    if (auto fresh = cache_.FreshListing(path)) {
      listings_.Complete(path, fresh);
      return;
    }
  }
  // Set when the listing was given up with nobody else waiting: it completed there already.
  auto abandoned = std::make_shared<bool>(false);
  KeepListing keep_going;
  if (mode.worth_going_on) {
    keep_going = [self = shared_from_this(), path, abandoned,
                  worth = std::move(mode.worth_going_on)](int pages) {
      if (worth(pages)) return true;
      // A reader joined: it gets the whole directory.
      if (!self->listings_.CompleteIfAlone(
              path, Status(ErrorCode::kCancelled, "listing of '" + path + "' abandoned"))) {
        return true;
      }
      spdlog::debug("abandoned the listing of '{}' after {} pages", path, pages);
      *abandoned = true;
      return false;
    };
  }
  ListDirectory(
      client_, meta::DirPrefix(options_.prefix, path),
      [self = shared_from_this(), path, abandoned,
       counted_in = mode.counted_in](Result<std::shared_ptr<const meta::DirSnapshot>> r) {
        if (!*abandoned) {
          if (r.ok()) self->cache_.PutListing(path, *r);
          if (r.ok() && self->options_.prefetch_on_list) self->WarmListing(path, **r);
          self->listings_.Complete(path, r);
        }
        // Last, so that whoever sees the count sees what the listing's callers did.
        if (counted_in) counted_in->Count(*abandoned, r.status());
      },
      std::move(keep_going), options_.max_list_pages);
}

void ObjectFilesystem::ListForLookups(const std::string& dir) {
  if (!options_.list_for_lookups) return;
  const meta::MetadataCache::LookupListing claim = cache_.ClaimListingForLookups(dir);
  if (claim == meta::MetadataCache::LookupListing::kNone) return;
  FetchMode mode{.counted_in = &LookupListingOutcomes()};
  // Pages fetched when last asked whether to go on: how far an abandoned listing got.
  auto pages_fetched = std::make_shared<int>(0);
  if (claim == meta::MetadataCache::LookupListing::kFirst) {
    mode.worth_going_on = [self = shared_from_this(), dir, pages_fetched](int pages) {
      *pages_fetched = pages;
      return self->cache_.LookupsStillWaiting(dir, pages);
    };
  }
  FetchListing(
      dir,
      [self = shared_from_this(), dir,
       pages_fetched](const Result<std::shared_ptr<const meta::DirSnapshot>>& r) {
        if (r.ok()) return;  // cached: it answers from now on
        const bool given_up = r.status().code() == ErrorCode::kCancelled;
        self->cache_.BackgroundListingEnded(dir, given_up ? std::max(*pages_fetched, 1) : 0);
      },
      std::move(mode));
}

void ObjectFilesystem::ListAheadOf(const std::string& path) {
  if (!list_ahead_ || path.empty()) return;
  const auto [parent, name] = meta::SplitPath(path);
  auto listing = cache_.FreshListing(std::string(parent));
  if (!listing) return;
  const std::optional<size_t> entered = listing->Find(name);
  if (!entered) return;
  if (!list_ahead_->EnteredChildOf(std::string(parent), std::string(name))) return;
  // The next list_ahead directories by position; those already listed need nothing.
  std::vector<std::string> next;
  size_t directories = 0;
  for (size_t i = *entered + 1; i < listing->size() && directories < list_ahead_->distance(); ++i) {
    const meta::DirSnapshot::Child child = listing->child(i);
    if (!child.is_dir()) continue;
    ++directories;
    std::string sibling = meta::JoinPath(parent, child.name);
    if (!cache_.FreshListing(sibling)) next.push_back(std::move(sibling));
  }
  if (!next.empty()) list_ahead_->Queue(next);
}

void ObjectFilesystem::ReadDir(InodeId /*ino*/, uint64_t dir_handle, off_t offset,
                               Callback<std::vector<DirEntry>> done) {
  std::shared_ptr<DirHandle> handle;
  std::shared_ptr<const meta::DirSnapshot> snapshot;
  {
    std::lock_guard lock(handles_mu_);
    auto it = dir_handles_.find(dir_handle);
    if (it != dir_handles_.end()) {
      handle = it->second;
      snapshot = handle->snapshot;
    }
  }
  if (!handle) return done(BadHandle(dir_handle));
  if (offset < 0) {
    return done(Status(ErrorCode::kInvalidArgument, "negative offset"));
  }
  if (snapshot) {
    boost::asio::post(io_, [self = shared_from_this(), handle, snapshot, offset,
                            done = std::move(done)]() mutable {
      self->ServeDir(handle, snapshot, offset, done);
    });
    return;
  }
  // The handle's first read: a walk has entered this directory.
  ListAheadOf(handle->path);
  GetListing(handle->path, [self = shared_from_this(), handle, offset, done = std::move(done)](
                               Result<std::shared_ptr<const meta::DirSnapshot>> r) mutable {
    if (!r.ok()) return done(r.status());
    std::shared_ptr<const meta::DirSnapshot> snap;
    {
      // The first listing attached to the handle stays for its life: stable offsets.
      std::lock_guard lock(self->handles_mu_);
      if (!handle->snapshot) handle->snapshot = *r;
      snap = handle->snapshot;
    }
    self->ServeDir(handle, snap, offset, done);
  });
}

void ObjectFilesystem::ServeDir(const std::shared_ptr<DirHandle>& handle,
                                const std::shared_ptr<const meta::DirSnapshot>& snap, off_t offset,
                                Callback<std::vector<DirEntry>>& done) {
  std::vector<DirEntry> entries;
  std::vector<InodeId> pinned;
  const size_t n = snap->size();
  const size_t begin = static_cast<size_t>(offset);
  for (size_t i = begin; i < n && i < begin + kReadDirBatch; ++i) {
    const meta::DirSnapshot::Child child = snap->child(i);
    const meta::NodeAttr attr = child.attr();
    InodeId ino =
        inodes_.Pin(meta::JoinPath(handle->path, child.name), attr.is_dir(), VersionOf(attr));
    pinned.push_back(ino);
    entries.push_back(
        DirEntry{std::string(child.name), MakeEntry(ino, attr), static_cast<off_t>(i + 1)});
  }
  bool released;
  {
    std::lock_guard lock(handles_mu_);
    released = handle->released;
    if (!released) handle->pinned.insert(handle->pinned.end(), pinned.begin(), pinned.end());
  }
  // The adapter takes the kernel's references (AddLookup) inside `done`, before replying.
  done(std::move(entries));
  if (released) {
    for (InodeId ino : pinned) inodes_.Unpin(ino);
  }
}

void ObjectFilesystem::ReleaseDir(InodeId /*ino*/, uint64_t dir_handle) {
  std::shared_ptr<DirHandle> handle;  // destroyed after the lock
  std::vector<InodeId> pinned;
  {
    std::lock_guard lock(handles_mu_);
    auto it = dir_handles_.find(dir_handle);
    if (it == dir_handles_.end()) return;
    handle = std::move(it->second);
    dir_handles_.erase(it);
    handle->released = true;
    pinned.swap(handle->pinned);
  }
  // Entries no reference was taken to (plain readdir, or not handed out) go now.
  for (InodeId ino : pinned) inodes_.Unpin(ino);
}

// ---------------------------------------------------------------------------------------
// Files

ObjectFilesystem::~ObjectFilesystem() {
  memory_budget_->Release(transport_buffer_bytes_.load(std::memory_order_relaxed));
}

void ObjectFilesystem::CountTransportBuffers(uint64_t bytes) {
  memory_budget_->Reserve(bytes);
  transport_buffer_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

void ObjectFilesystem::Open(InodeId ino, int flags, Callback<OpenReply> done) {
  OpenAs(ino, flags, Caller{}, std::move(done));
}

void ObjectFilesystem::OpenAs(InodeId ino, int flags, const Caller& caller,
                              Callback<OpenReply> done) {
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_CREAT)) != 0) {
    return done(Status(ErrorCode::kReadOnly, "the mount is read-only"));
  }
  auto node = inodes_.Get(ino);
  if (!node) return done(NoSuchInode(ino));
  if (node->is_dir) {
    return done(Status(ErrorCode::kInvalidArgument, "is a directory"));
  }
  Resolve(node->path, [self = shared_from_this(), ino, path = node->path, caller,
                       page_cached = node->page_cached,
                       done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value() || (*r)->is_dir()) {
      return done(Status(ErrorCode::kNotFound, "'" + path + "' is no longer a file"));
    }
    const meta::NodeAttr& attr = **r;
    // Another version than the kernel was last handed (it changed on the server and the
    // metadata expired, or a read found it changed): the kernel may still hold the old
    // size, which would cut the new bytes at it, and old pages. Tell it to drop both (no
    // keep_cache, so page_cached below does not count either).
    const bool changed = self->inodes_.ShowVersion(ino, VersionOf(attr));
    if (changed) {
      spdlog::debug("'{}' changed since the kernel got its attributes (now {} bytes, etag {})",
                    path, attr.size, attr.etag);
    }
    auto handle = std::make_shared<FileHandle>();
    handle->ino = ino;
    handle->path = path;
    handle->key = meta::FileKey(self->options_.prefix, path);
    handle->size = attr.size;
    handle->etag = attr.etag;
    handle->small = attr.size <= self->options_.small_file_threshold;
    if (!handle->small) {
      handle->reader = self->NewLargeFileReader(handle->key, attr.size, attr.etag, attr.crc64);
      self->NotifyRead(path);  // hints skip large files; their position still moves on
      handle->read_notified = true;
    }
    handle->caller = caller;
    handle->opened = std::chrono::system_clock::now();
    handle->opened_steady = std::chrono::steady_clock::now();
    OpenReply reply;
    // Not for a version whose CRC-64 check failed: the kernel may hold its damaged pages from
    // earlier opens, and a pass that reads them would never fetch (and check) them again.
    reply.keep_cache = self->cache_.ttl().indefinite() && !changed &&
                       !prefetch::IsSuspectVersion(handle->key, handle->etag);
    reply.attributes_changed = changed;
    // A backing file, unless the kernel's page cache of this inode may already hold the
    // bytes and stays valid (keep_cache): reading those costs nothing, while a backing
    // file costs a verification here. The page cache goes with the kernel's inode, which
    // takes our inode with it, so after a remount every cached file qualifies.
    if (handle->small && self->options_.disk_cache &&
        self->backing_files_wanted_.load(std::memory_order_relaxed) &&
        !(reply.keep_cache && page_cached)) {
      // Verified now; the kernel then reads the file without us (and without the checks).
      if (auto fd = self->options_.disk_cache->OpenVerified(
              data::BlockId{handle->key, handle->etag, data::kWholeObject}, handle->size)) {
        reply.backing_file = std::make_shared<UniqueFd>(std::move(*fd));
        self->NotifyRead(path);  // no READ will tell the hint prefetcher
        handle->read_notified = true;
      }
    }
    handle->page_cache_reopen =
        handle->small && handle->size > 0 && reply.keep_cache && page_cached && !reply.backing_file;
    Files().opens.Add();
    if (reply.keep_cache && !reply.backing_file) Files().page_cache_opens.Add();
    Files().open_handles.Add(1);
    {
      std::lock_guard lock(self->handles_mu_);
      reply.fh = self->next_fh_++;
      self->file_handles_[reply.fh] = std::move(handle);
    }
    done(reply);
  });
}

void ObjectFilesystem::Read(InodeId /*ino*/, uint64_t fh, off_t offset, size_t size,
                            Callback<ReadReply> done) {
  std::shared_ptr<FileHandle> handle;
  {
    std::lock_guard lock(handles_mu_);
    auto it = file_handles_.find(fh);
    if (it != file_handles_.end()) handle = it->second;
  }
  if (!handle) return done(BadHandle(fh));
  if (offset < 0) {
    return done(Status(ErrorCode::kInvalidArgument, "negative offset"));
  }
  const uint64_t off = static_cast<uint64_t>(offset);
  if (size == 0 || off >= handle->size) return done(ReadReply{});
  if (handle->small) return ReadSmall(handle, off, size, std::move(done));
  handle->reader->Read(
      off, size,
      [self = shared_from_this(), handle, done = std::move(done)](Result<prefetch::ReadBytes> r) {
        if (!r.ok()) {
          if (r.status().code() == ErrorCode::kPreconditionFailed) {
            self->cache_.Invalidate(handle->path);  // the next open asks again
          }
          return done(r.status());
        }
        CountRead(*handle, r->size);
        done(ReadReply{r->data, r->size, std::move(r->owner)});
      });
}

void ObjectFilesystem::ReadSmall(const std::shared_ptr<FileHandle>& handle, uint64_t offset,
                                 size_t size, Callback<ReadReply> done) {
  auto slice = [](const std::shared_ptr<const Blob>& blob, uint64_t off, size_t n) {
    ReadReply reply;
    reply.data = blob->data() + off;
    reply.size = std::min<uint64_t>(n, blob->size() - off);
    reply.owner = blob;
    return reply;
  };
  std::shared_ptr<const Blob> blob;
  {
    std::lock_guard lock(handles_mu_);
    blob = handle->blob;
  }
  if (blob) {
    ReadReply reply = slice(blob, offset, size);
    CountRead(*handle, reply.size);
    return done(std::move(reply));
  }
  whole_objects_.Fetch(handle->key, handle->etag, handle->size,
                       [self = shared_from_this(), handle, offset, size, slice,
                        done = std::move(done)](Result<std::shared_ptr<const Blob>> r) {
                         if (!r.ok()) {
                           if (r.status().code() == ErrorCode::kPreconditionFailed) {
                             self->cache_.Invalidate(handle->path);
                           }
                           return done(r.status());
                         }
                         std::shared_ptr<const Blob> previous;  // released after the lock
                         {
                           std::lock_guard lock(self->handles_mu_);
                           previous = std::move(handle->blob);
                           handle->blob = *r;
                         }
                         // Once per handle (its first read fetches the blob), and only
                         // when the kernel keeps the pages (keep_cache).
                         if (!previous && self->cache_.ttl().indefinite()) {
                           self->inodes_.MarkPageCached(handle->ino);
                         }
                         self->NotifyRead(handle->path);
                         ReadReply reply = slice(*r, offset, size);
                         CountRead(*handle, reply.size);
                         done(std::move(reply));
                       });
}

void ObjectFilesystem::Release(InodeId /*ino*/, uint64_t fh) {
  std::shared_ptr<FileHandle> handle;  // destroyed after the lock: it may free a buffer
  {
    std::lock_guard lock(handles_mu_);
    auto it = file_handles_.find(fh);
    if (it == file_handles_.end()) return;
    handle = std::move(it->second);
    file_handles_.erase(it);
  }
  Released(handle, /*at_unmount=*/false);
}

std::optional<std::string> ObjectFilesystem::DirectoryPath(InodeId ino) {
  std::optional<meta::InodeTable::Node> node = inodes_.Get(ino);
  if (!node || !node->is_dir) return std::nullopt;
  return node->path;
}

void ObjectFilesystem::EndSession() {
  std::unordered_map<uint64_t, std::shared_ptr<FileHandle>> open;
  {
    std::lock_guard lock(handles_mu_);
    open.swap(file_handles_);
  }
  for (auto& [fh, handle] : open) Released(handle, /*at_unmount=*/true);
}

void ObjectFilesystem::Released(const std::shared_ptr<FileHandle>& handle, bool at_unmount) {
  // Cancels readahead still in flight and frees the parts (and their budget) at once.
  if (handle->reader) handle->reader->Close();
  const bool read = handle->bytes_read.load(std::memory_order_relaxed) > 0;
  // No READ came: the kernel's page cache served the file (or it was not read). The hint
  // prefetcher's reader has passed it all the same, and must not wait for it.
  if (handle->small && !handle->read_notified && !read) NotifyRead(handle->path);
  if (handle->page_cache_reopen) {
    (read ? Files().page_cache_reopen_misses : Files().page_cache_reopen_hits).Add();
    if (page_cache_trust_.Record(!read)) {
      if (auto* p = prefetcher_raw_.load(std::memory_order_acquire)) p->RefetchPageCached();
    }
  }
  Files().open_handles.Add(-1);
  if (options_.audit) {
    AuditRecord record;
    record.path = handle->path;
    record.caller = handle->caller;
    record.opened = handle->opened;
    record.duration = std::chrono::steady_clock::now() - handle->opened_steady;
    record.bytes_read = handle->bytes_read.load(std::memory_order_relaxed);
    record.size = handle->size;
    record.at_unmount = at_unmount;
    options_.audit->Record(std::move(record));
  }
}

std::shared_ptr<prefetch::SequentialReader> ObjectFilesystem::NewLargeFileReader(
    const std::string& key, uint64_t size, const std::string& etag, std::optional<uint64_t> crc64) {
  prefetch::ReaderOptions o;
  o.object_crc64 = crc64;  // from the listing or a HEAD; a GET's header replaces it
  o.initial_window = options_.readahead.initial_window;
  o.max_window = options_.readahead.max_window;
  o.part_size = options_.readahead.part_size;
  o.per_file_concurrency = options_.readahead.per_file_concurrency;
  o.slack = std::max(o.slack, options_.readahead.kernel_readahead);
  o.late_tolerance = 4 * options_.readahead.kernel_readahead;
  prefetch::SharedReadState shared{memory_budget_, readahead_slots_, options_.disk_cache};
  return std::make_shared<prefetch::SequentialReader>(io_, client_, key, size, etag, o,
                                                      std::move(shared));
}

// ---------------------------------------------------------------------------------------
// Dataset prefetch (warm-up, sampler-order hints)

namespace {
// Disk-cache writes queued beyond which warm-up waits (kBusy) instead of having its blocks
// dropped by the cache's bounded write queue.
constexpr uint64_t kDiskBusyPending = 128;
}  // namespace

std::shared_ptr<prefetch::DatasetPrefetcher> ObjectFilesystem::dataset_prefetcher() {
  std::lock_guard lock(prefetcher_mu_);
  if (prefetcher_) return prefetcher_;
  prefetch::DatasetPrefetchOptions o = options_.dataset_prefetch;
  o.disk_budget = options_.disk_cache ? options_.disk_cache->max_size() : 0;
  if (options_.disk_cache && o.disk_budget == 0) o.disk_budget = ~0ull;  // size unknown
  if (options_.disk_cache) {
    std::weak_ptr<data::DiskBlockCache> cache = options_.disk_cache;
    o.disk_capacity = [cache]() -> uint64_t {
      auto c = cache.lock();
      return c && c->max_size() > 0 ? c->capacity() : ~0ull;  // max_size 0: size unknown
    };
  }
  // Weak: the prefetcher lives inside the filesystem; its callbacks must not keep it alive.
  std::weak_ptr<ObjectFilesystem> weak = weak_from_this();
  prefetcher_ = std::make_shared<prefetch::DatasetPrefetcher>(
      io_, o,
      [weak](const prefetch::PrefetchItem& item, bool hold, prefetch::FetchDone done) {
        auto self = weak.lock();
        if (!self) {
          prefetch::FetchResult r;
          r.error = "unmounted";
          return done(std::move(r));
        }
        self->PrefetchOne(item, hold, std::move(done));
      },
      [weak](const std::string& path, prefetch::ListBatch batch, std::function<void(Status)> done) {
        auto self = weak.lock();
        if (!self) return done(Status(ErrorCode::kCancelled, "unmounted"));
        self->ListForWarmup(path, std::move(batch), std::move(done));
      });
  prefetcher_raw_.store(prefetcher_.get(), std::memory_order_release);
  return prefetcher_;
}

void ObjectFilesystem::NotifyRead(const std::string& path) {
  if (auto* p = prefetcher_raw_.load(std::memory_order_acquire)) p->OnRead(path);
}

void ObjectFilesystem::PrefetchOne(const prefetch::PrefetchItem& item, bool hold,
                                   prefetch::FetchDone done) {
  if (!item.key.empty()) {
    return PrefetchObject(item.key, item.size, item.etag, hold, std::move(done));
  }
  // A hint: the path's attributes (from the listing cache, else one probe).
  Resolve(item.path, [self = shared_from_this(), path = item.path, hold,
                      done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) mutable {
    prefetch::FetchResult out;
    if (!r.ok()) {
      out.error = r.status().message();
      return done(std::move(out));
    }
    if (!r->has_value() || (*r)->is_dir()) {
      out.outcome = prefetch::FetchOutcome::kSkipped;
      out.error = "not a file";
      return done(std::move(out));
    }
    const meta::NodeAttr& attr = **r;
    // The kernel holds the bytes it was given, so the reader will not ask for them: a GET
    // would be fetched for nobody. (Warm-up fetches them all the same: it fills the disk.)
    if (self->cache_.ttl().indefinite() && self->inodes_.PageCached(path) &&
        self->page_cache_trust_.trusted()) {
      out.outcome = prefetch::FetchOutcome::kPageCached;
      out.bytes = attr.size;
      return boost::asio::post(self->io_, [done = std::move(done), out = std::move(out)]() mutable {
        done(std::move(out));
      });
    }
    self->PrefetchObject(meta::FileKey(self->options_.prefix, path), attr.size, attr.etag, hold,
                         std::move(done));
  });
}

void ObjectFilesystem::PrefetchObject(std::string key, uint64_t size, std::string etag, bool hold,
                                      prefetch::FetchDone done) {
  auto post = [this](prefetch::FetchDone d, prefetch::FetchResult r) {
    boost::asio::post(io_, [d = std::move(d), r = std::move(r)]() mutable { d(std::move(r)); });
  };
  prefetch::FetchResult out;
  out.bytes = size;
  if (size == 0) {
    out.outcome = prefetch::FetchOutcome::kSkipped;  // an empty file needs no GET
    return post(std::move(done), std::move(out));
  }
  if (size > options_.small_file_threshold) {
    if (!hold && options_.disk_cache) {
      // Warm-up into the disk cache: the parts a reader of this file would look up.
      return WarmLargeFile(std::move(key), size, std::move(etag), std::move(done));
    }
    // In memory, large files are left to sequential readahead (src/prefetch) when read.
    out.outcome = prefetch::FetchOutcome::kSkipped;
    out.error = "larger than --small-file-threshold (warmed only into a disk cache)";
    return post(std::move(done), std::move(out));
  }
  const auto& disk = options_.disk_cache;
  if (disk && disk->Contains(data::BlockId{key, etag, data::kWholeObject})) {
    out.outcome = prefetch::FetchOutcome::kAlreadyCached;
    return post(std::move(done), std::move(out));
  }
  if (!hold && disk && disk->Stats().pending >= kDiskBusyPending) {
    out.outcome = prefetch::FetchOutcome::kBusy;
    return post(std::move(done), std::move(out));
  }
  whole_objects_.Prefetch(
      key, etag, size,
      [hold, size, done = std::move(done)](Result<std::shared_ptr<const Blob>> r) mutable {
        prefetch::FetchResult out;
        out.bytes = size;
        if (r.ok()) {
          out.outcome = prefetch::FetchOutcome::kFetched;
          if (hold) out.hold = std::move(*r);
        } else if (r.status().code() == ErrorCode::kNoSpace) {
          // Disk mode: memory frees as the cache's writer drains, so wait; memory mode: the
          // budget is what bounds the prefetcher.
          out.outcome = hold ? prefetch::FetchOutcome::kBudgetFull : prefetch::FetchOutcome::kBusy;
        } else {
          out.error = r.status().message();
        }
        done(std::move(out));
      });
}

// One large file into the disk cache, part after part (the blocks SequentialReader reads:
// index = offset / part_size, verified against size and etag like its parts). One GET in
// flight per file; a part already on disk costs nothing; memory comes from the budget
// with TryReserve (waits while refused), and a busy disk-cache writer is waited for.
struct ObjectFilesystem::LargeWarm : std::enable_shared_from_this<LargeWarm> {
  std::shared_ptr<ObjectFilesystem> fs;
  std::string key, etag;
  uint64_t size = 0;
  uint64_t index = 0;
  bool fetched_any = false;
  prefetch::FetchDone done;
  boost::asio::steady_timer timer;
  explicit LargeWarm(boost::asio::io_context& io) : timer(io) {}

  void Finish(prefetch::FetchOutcome outcome, std::string error = "") {
    prefetch::FetchResult r;
    r.outcome = outcome;
    r.bytes = size;
    r.error = std::move(error);
    boost::asio::post(timer.get_executor(),
                      [d = std::move(done), r = std::move(r)]() mutable { d(std::move(r)); });
  }
  void Later() {
    timer.expires_after(std::chrono::milliseconds(20));
    timer.async_wait(
        [self = shared_from_this()](const boost::system::error_code&) { self->Next(); });
  }
  void Next() {
    const uint64_t part = fs->options_.readahead.part_size;
    const auto& disk = fs->options_.disk_cache;
    while (index * part < size && disk->Contains(data::BlockId{key, etag, index})) ++index;
    if (index * part >= size) {
      return Finish(fetched_any ? prefetch::FetchOutcome::kFetched
                                : prefetch::FetchOutcome::kAlreadyCached);
    }
    if (disk->Stats().pending >= kDiskBusyPending) return Later();
    const uint64_t offset = index * part;
    const uint64_t length = std::min(part, size - offset);
    const auto& budget = fs->memory_budget_;
    if (!budget->TryReserve(length)) return Later();
    // The buffer carries its reservation: released when the disk cache has written it.
    struct Held {
      ByteBuffer bytes;
      data::Reservation reservation;
    };
    auto held = std::make_shared<Held>();
    held->reservation = data::Reservation(budget, length);
    held->bytes.resize(length);
    GetRequest request;
    request.key = key;
    request.offset = offset;
    request.length = length;
    request.if_match = etag;
    request.priority = Priority::kPrefetch;
    fs->client_->Get(request, GetTarget::Fixed(held->bytes.data(), length),
                     [self = shared_from_this(), held, length](Result<GetResult> r) {
                       if (!r.ok())
                         return self->Finish(prefetch::FetchOutcome::kFailed, r.status().message());
                       Status changed =
                           CheckPinnedGet(*r, self->key, length, self->size, self->etag);
                       if (!changed.ok()) {
                         return self->Finish(prefetch::FetchOutcome::kFailed, changed.message());
                       }
                       std::shared_ptr<const ByteBuffer> bytes(held, &held->bytes);
                       self->fs->options_.disk_cache->Put(
                           data::BlockId{self->key, self->etag, self->index}, std::move(bytes));
                       self->fetched_any = true;
                       ++self->index;
                       self->Next();
                     });
  }
};

void ObjectFilesystem::WarmLargeFile(std::string key, uint64_t size, std::string etag,
                                     prefetch::FetchDone done) {
  auto w = std::make_shared<LargeWarm>(io_);
  w->fs = shared_from_this();
  w->key = std::move(key);
  w->etag = std::move(etag);
  w->size = size;
  w->done = std::move(done);
  boost::asio::post(io_, [w] { w->Next(); });
}

void ObjectFilesystem::ListForWarmup(const std::string& path, prefetch::ListBatch batch,
                                     std::function<void(Status)> done) {
  if (path.empty()) {
    return ListRecursive(std::make_shared<RecursiveListing>(
        options_.prefix, options_.max_list_pages, std::move(batch), std::move(done)));
  }
  Resolve(path, [self = shared_from_this(), path, batch = std::move(batch),
                 done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) mutable {
    if (!r.ok()) return done(r.status());
    if (!r->has_value()) return done(Status(ErrorCode::kNotFound, "no such file or directory"));
    const meta::NodeAttr& attr = **r;
    if (!attr.is_dir()) {
      prefetch::PrefetchItem item;
      item.path = path;
      item.key = meta::FileKey(self->options_.prefix, path);
      item.size = attr.size;
      item.etag = attr.etag;
      batch({std::move(item)});
      return done(Status::Ok());
    }
    self->ListRecursive(std::make_shared<RecursiveListing>(
        meta::DirPrefix(self->options_.prefix, path), self->options_.max_list_pages,
        std::move(batch), std::move(done)));
  });
}

void ObjectFilesystem::ListRecursive(std::shared_ptr<RecursiveListing> listing, std::string token) {
  ListRequest request;
  request.prefix = listing->prefix;
  request.delimiter = "";  // everything below, one flat listing
  request.continuation_token = std::move(token);
  request.max_keys = 1000;
  client_->List(request, [self = shared_from_this(), listing](Result<ListPage> page) mutable {
    if (!page.ok()) return listing->done(page.status());
    if (Status follow = listing->guard.Follow(*page); !follow.ok()) {
      spdlog::error("{}: the warm-up listing fails", follow.message());
      return listing->done(std::move(follow));
    }
    std::vector<prefetch::PrefetchItem> items;
    items.reserve(page->objects.size());
    const size_t strip = self->options_.prefix.size();
    for (ObjectInfo& o : page->objects) {
      if (o.key.empty() || o.key.back() == '/' || o.key.size() <= strip) continue;  // markers
      prefetch::PrefetchItem item;
      item.path = o.key.substr(strip);
      item.key = std::move(o.key);
      item.size = o.size;
      item.etag = std::move(o.etag);
      items.push_back(std::move(item));
    }
    // Asked at every page, files or not: where a cancelled warm-up stops.
    if (!listing->batch(std::move(items))) {
      return listing->done(
          Status(ErrorCode::kCancelled, "warm-up listing of '" + listing->prefix + "' cancelled"));
    }
    if (!page->truncated) return listing->done(Status::Ok());
    self->ListRecursive(listing, page->next_continuation_token);
  });
}

void ObjectFilesystem::WarmListing(const std::string& path, const meta::DirSnapshot& snapshot) {
  std::vector<prefetch::PrefetchItem> items;
  for (size_t i = 0; i < snapshot.size(); ++i) {
    const meta::DirSnapshot::Child child = snapshot.child(i);
    if (child.is_dir() || child.size == 0 ||
        (child.size > options_.small_file_threshold && !options_.disk_cache)) {
      continue;
    }
    prefetch::PrefetchItem item;
    item.path = meta::JoinPath(path, child.name);
    item.key = meta::FileKey(options_.prefix, item.path);
    item.size = child.size;
    item.etag = std::string(child.etag);
    items.push_back(std::move(item));
  }
  if (items.empty()) return;
  dataset_prefetcher()->EnqueueFiles("listed:/" + path, std::move(items));
}

StatFs ObjectFilesystem::GetStatFs() {
  StatFs s;
  s.block_size = 4096;
  s.blocks = 1ull << 40;  // 4 PiB: object stores have no meaningful capacity
  s.blocks_free = 0;      // read-only
  s.files = 1ull << 32;
  s.files_free = 0;
  s.name_max = meta::kNameMax;
  return s;
}

ObjectFilesystem::Stats ObjectFilesystem::stats() const {
  Stats s;
  s.inodes = inodes_.size();
  {
    std::lock_guard lock(handles_mu_);
    s.dir_handles = dir_handles_.size();
    s.file_handles = file_handles_.size();
  }
  s.whole_objects = whole_objects_.entry_count();
  s.cached_entries = cache_.entry_count();
  s.cached_listings = cache_.listing_count();
  s.listed_names = cache_.listed_names();
  s.listing_bytes = cache_.listing_bytes();
  return s;
}

std::shared_ptr<prefetch::DatasetPrefetcher> DatasetPrefetcherOf(
    const std::shared_ptr<Filesystem>& filesystem) {
  auto object_fs = std::dynamic_pointer_cast<ObjectFilesystem>(filesystem);
  return object_fs ? object_fs->dataset_prefetcher() : nullptr;
}

std::shared_ptr<Filesystem> MakeObjectFilesystem(boost::asio::io_context& io,
                                                 std::shared_ptr<ObjectClient> client,
                                                 FsOptions options) {
  auto prefix = meta::NormalizeMountPrefix(options.prefix);
  if (prefix.ok()) {
    options.prefix = *prefix;
  } else {
    // Config validates the prefix; if a bad one gets here, mount it verbatim, never mangled.
    spdlog::error("{}", prefix.status().message());
    if (!options.prefix.empty() && options.prefix.back() != '/') options.prefix += '/';
  }
  auto filesystem = std::make_shared<ObjectFilesystem>(io, std::move(client), std::move(options));
  // What a walk leaves in memory (docs/CONFIGURATION.md, "Memory for metadata"). Registered
  // here, where a weak reference can be taken: the registry outlives the filesystem.
  std::weak_ptr<ObjectFilesystem> weak = filesystem;
  auto gauge = [&weak](const char* name, const char* help, size_t ObjectFilesystem::Stats::*field) {
    metrics::Registry::Global().SetCallbackGauge(name, help, {}, [weak, field] {
      auto fs = weak.lock();
      return fs ? static_cast<double>(fs->stats().*field) : 0.0;
    });
  };
  gauge("ossmount_inodes",
        "Inodes the daemon holds: names the kernel keeps a reference to, and the entries of "
        "directories being read.",
        &ObjectFilesystem::Stats::inodes);
  gauge("ossmount_metadata_listings", "Directory listings in the metadata cache.",
        &ObjectFilesystem::Stats::cached_listings);
  gauge("ossmount_metadata_listed_names", "Names in the cached directory listings.",
        &ObjectFilesystem::Stats::listed_names);
  gauge("ossmount_metadata_listing_bytes",
        "Bytes the cached directory listings hold (a 32-byte record per name, plus the names "
        "and etags).",
        &ObjectFilesystem::Stats::listing_bytes);
  return filesystem;
}

}  // namespace ossmount::fs
