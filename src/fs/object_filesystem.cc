#include "fs/object_filesystem.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <boost/asio/post.hpp>
#include <chrono>

#include "common/metrics.h"
#include "fs/dir_lister.h"
#include "fs/name_prober.h"
#include "fs/object_filesystem_impl.h"
#include "meta/key_mapping.h"

namespace ossmount::fs {

namespace {

Status NoSuchInode(InodeId ino) {
  return Status(ErrorCode::kNotFound, "inode " + std::to_string(ino) + " is not known");
}

Status BadHandle(uint64_t fh) {
  return Status(ErrorCode::kInvalidArgument, "handle " + std::to_string(fh) + " is not open");
}

int64_t NowUnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Metrics of opened files (common/metrics.h), looked up once.
struct FileMetrics {
  metrics::Counter& opens;
  metrics::Counter& page_cache_opens;
  metrics::Gauge& open_handles;
  metrics::Counter& read_bytes;
};

FileMetrics& Files() {
  static FileMetrics m{
      metrics::Registry::Global().GetCounter("ossmount_opens_total", "Files opened."),
      metrics::Registry::Global().GetCounter(
          "ossmount_page_cache_opens_total",
          "Opens answered with keep_cache: the kernel page cache of earlier opens stays valid."),
      metrics::Registry::Global().GetGauge("ossmount_open_handles", "Files open now."),
      metrics::Registry::Global().GetCounter("ossmount_read_bytes_total",
                                             "Bytes replied to reads of files."),
  };
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
}

template <typename T>
void ObjectFilesystem::Post(Callback<T> done, Result<T> result) {
  boost::asio::post(io_, [done = std::move(done), result = std::move(result)]() mutable {
    done(std::move(result));
  });
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

void ObjectFilesystem::Resolve(const std::string& path, ResolveCallback done) {
  meta::MetadataCache::Answer answer = cache_.Find(path);
  if (answer.state == meta::MetadataCache::Answer::kPresent) {
    return Post<std::optional<meta::NodeAttr>>(std::move(done), std::optional(answer.attr));
  }
  if (answer.state == meta::MetadataCache::Answer::kAbsent) {
    return Post<std::optional<meta::NodeAttr>>(std::move(done), std::optional<meta::NodeAttr>());
  }
  if (!probes_.Join(path, [done = std::move(done)](const ProbeResult& r) { done(r); })) return;
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
  if (!valid.ok()) return Post<Entry>(std::move(done), valid);
  auto node = inodes_.Get(parent);
  if (!node) return Post<Entry>(std::move(done), NoSuchInode(parent));
  if (!node->is_dir) {
    return Post<Entry>(std::move(done), Status(ErrorCode::kNotFound, "not a directory"));
  }
  std::string path = meta::JoinPath(node->path, name);
  Resolve(path, [self = shared_from_this(), path,
                 done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value()) return done(Status(ErrorCode::kNotFound, "no such file: " + path));
    const meta::NodeAttr& attr = **r;
    InodeId ino = self->inodes_.Ensure(path, attr.is_dir(), 1);
    done(self->MakeEntry(ino, attr));
  });
}

void ObjectFilesystem::Forget(InodeId ino, uint64_t nlookup) { inodes_.Forget(ino, nlookup); }

void ObjectFilesystem::AddLookup(InodeId ino) { inodes_.AddLookup(ino); }

void ObjectFilesystem::GetAttr(InodeId ino, Callback<AttrReply> done) {
  auto node = inodes_.Get(ino);
  if (!node) return Post<AttrReply>(std::move(done), NoSuchInode(ino));
  if (ino == kRootInode) {
    AttrReply reply{MakeAttributes(ino, meta::DirAttr()), cache_.ttl().KernelTimeout()};
    return Post<AttrReply>(std::move(done), reply);
  }
  Resolve(node->path, [self = shared_from_this(), ino, is_dir = node->is_dir, path = node->path,
                       done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value() || (*r)->is_dir() != is_dir) {
      return done(Status(ErrorCode::kNotFound, "'" + path + "' no longer exists as it was"));
    }
    done(AttrReply{self->MakeAttributes(ino, **r), self->cache_.ttl().KernelTimeout()});
  });
}

// ---------------------------------------------------------------------------------------
// Directories

void ObjectFilesystem::OpenDir(InodeId ino, Callback<uint64_t> done) {
  auto node = inodes_.Get(ino);
  if (!node) return Post<uint64_t>(std::move(done), NoSuchInode(ino));
  if (!node->is_dir) {
    return Post<uint64_t>(std::move(done), Status(ErrorCode::kInvalidArgument, "not a directory"));
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
  Post<uint64_t>(std::move(done), fh);
}

void ObjectFilesystem::GetListing(const std::string& path, ListingCallback done) {
  if (auto fresh = cache_.FreshListing(path)) {
    return Post<std::shared_ptr<const meta::DirSnapshot>>(std::move(done), std::move(fresh));
  }
  if (!listings_.Join(
          path, [done = std::move(done)](
                    const Result<std::shared_ptr<const meta::DirSnapshot>>& r) { done(r); })) {
    return;
  }
  ListDirectory(
      client_, meta::DirPrefix(options_.prefix, path),
      [self = shared_from_this(), path](Result<std::shared_ptr<const meta::DirSnapshot>> r) {
        if (r.ok()) self->cache_.PutListing(path, *r);
        self->listings_.Complete(path, r);
      });
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
  if (!handle) return Post<std::vector<DirEntry>>(std::move(done), BadHandle(dir_handle));
  if (offset < 0) {
    return Post<std::vector<DirEntry>>(std::move(done),
                                       Status(ErrorCode::kInvalidArgument, "negative offset"));
  }
  if (snapshot) {
    boost::asio::post(io_, [self = shared_from_this(), handle, snapshot, offset,
                            done = std::move(done)]() mutable {
      self->ServeDir(handle, snapshot, offset, done);
    });
    return;
  }
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
  const size_t n = snap->children.size();
  const size_t begin = static_cast<size_t>(offset);
  for (size_t i = begin; i < n && i < begin + kReadDirBatch; ++i) {
    const meta::DirChild& child = snap->children[i];
    InodeId ino = inodes_.Pin(meta::JoinPath(handle->path, child.name), child.attr.is_dir());
    pinned.push_back(ino);
    entries.push_back(DirEntry{child.name, MakeEntry(ino, child.attr), static_cast<off_t>(i + 1)});
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

void ObjectFilesystem::Open(InodeId ino, int flags, Callback<OpenReply> done) {
  OpenAs(ino, flags, Caller{}, std::move(done));
}

void ObjectFilesystem::OpenAs(InodeId ino, int flags, const Caller& caller,
                              Callback<OpenReply> done) {
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_CREAT)) != 0) {
    return Post<OpenReply>(std::move(done), Status(ErrorCode::kReadOnly, "the mount is read-only"));
  }
  auto node = inodes_.Get(ino);
  if (!node) return Post<OpenReply>(std::move(done), NoSuchInode(ino));
  if (node->is_dir) {
    return Post<OpenReply>(std::move(done), Status(ErrorCode::kInvalidArgument, "is a directory"));
  }
  Resolve(node->path, [self = shared_from_this(), ino, path = node->path, caller,
                       done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value() || (*r)->is_dir()) {
      return done(Status(ErrorCode::kNotFound, "'" + path + "' is no longer a file"));
    }
    const meta::NodeAttr& attr = **r;
    auto handle = std::make_shared<FileHandle>();
    handle->ino = ino;
    handle->path = path;
    handle->key = meta::FileKey(self->options_.prefix, path);
    handle->size = attr.size;
    handle->etag = attr.etag;
    handle->small = attr.size <= self->options_.small_file_threshold;
    if (!handle->small) {
      handle->reader = self->NewLargeFileReader(handle->key, attr.size, attr.etag);
    }
    handle->caller = caller;
    handle->opened = std::chrono::system_clock::now();
    handle->opened_steady = std::chrono::steady_clock::now();
    OpenReply reply;
    reply.keep_cache = self->cache_.ttl().indefinite();
    Files().opens.Add();
    if (reply.keep_cache) Files().page_cache_opens.Add();
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
  if (!handle) return Post<ReadReply>(std::move(done), BadHandle(fh));
  if (offset < 0) {
    return Post<ReadReply>(std::move(done), Status(ErrorCode::kInvalidArgument, "negative offset"));
  }
  const uint64_t off = static_cast<uint64_t>(offset);
  if (size == 0 || off >= handle->size) return Post<ReadReply>(std::move(done), ReadReply{});
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
    return Post<ReadReply>(std::move(done), std::move(reply));
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
  // Cancels readahead still in flight and frees the parts (and their budget) at once.
  if (handle->reader) handle->reader->Close();
  Files().open_handles.Add(-1);
  if (options_.audit) {
    AuditRecord record;
    record.path = handle->path;
    record.caller = handle->caller;
    record.opened = handle->opened;
    record.duration = std::chrono::steady_clock::now() - handle->opened_steady;
    record.bytes_read = handle->bytes_read.load(std::memory_order_relaxed);
    record.size = handle->size;
    options_.audit->Record(std::move(record));
  }
}

std::shared_ptr<prefetch::SequentialReader> ObjectFilesystem::NewLargeFileReader(
    const std::string& key, uint64_t size, const std::string& etag) {
  prefetch::ReaderOptions o;
  o.initial_window = options_.readahead.initial_window;
  o.max_window = options_.readahead.max_window;
  o.part_size = options_.readahead.part_size;
  o.per_file_concurrency = options_.readahead.per_file_concurrency;
  prefetch::SharedReadState shared{memory_budget_, readahead_slots_, options_.disk_cache};
  return std::make_shared<prefetch::SequentialReader>(io_, client_, key, size, etag, o,
                                                      std::move(shared));
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
  return s;
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
  return std::make_shared<ObjectFilesystem>(io, std::move(client), std::move(options));
}

}  // namespace ossmount::fs
