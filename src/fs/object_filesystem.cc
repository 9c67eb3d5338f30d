#include "fs/object_filesystem.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <functional>
#include <string_view>

#include "common/time_util.h"
#include "fs/busy_retry.h"
#include "fs/fs_metrics.h"
#include "meta/key_mapping.h"

namespace ossmount::fs {

Status ObjectFilesystem::NoSuchInode(InodeId ino) {
  return Status(ErrorCode::kNotFound, "inode " + std::to_string(ino) + " is not known");
}

namespace {

Status BadHandle(uint64_t fh) {
  return Status(ErrorCode::kInvalidArgument, "handle " + std::to_string(fh) + " is not open");
}

// A fingerprint of the object version whose attributes the kernel is handed (InodeTable's
// shown_version): its etag and size. Never 0, which the table reads as "none yet".

// Bytes replied through a handle, for the audit log and metrics: two relaxed atomic adds.
void CountRead(ReadHandle& handle, uint64_t bytes) {
  handle.bytes_read.fetch_add(bytes, std::memory_order_relaxed);
  Files().read_bytes.Add(bytes);
}

}  // namespace

ObjectFilesystem::ObjectFilesystem(boost::asio::io_context& io,
                                   std::shared_ptr<ObjectClient> client, FsOptions options)
    : io_(io),
      options_(std::move(options)),
      mount_time_sec_(UnixSecondsNow()),
      listings_(std::make_shared<ListingService>(client, options_)),
      data_(io, client, options_),
      open_files_(std::make_shared<OpenFiles>()),
      writes_(std::make_shared<WriteService>(io.get_executor(), std::move(client), data_.budget(),
                                             options_, listings_, open_files_)) {
  // Listings and cached names share the metadata budget with the inodes.
  listings_->cache().SetBudget(options_.max_metadata_memory,
                               [counter = inodes_.bytes_counter()] { return counter->load(); });
}

void ObjectFilesystem::SetReadObserver(std::shared_ptr<ReadObserver> observer) {
  observer_ = observer;
  listings_->SetObserver(std::move(observer));
}

bool ObjectFilesystem::PageCached(const std::string& path) const {
  return listings_->cache().ttl().indefinite() && inodes_.PageCached(path) &&
         page_cache_trust_.trusted();
}

void ObjectFilesystem::NotifyRead(const std::string& path) {
  if (observer_) observer_->OnRead(path);
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
  } else if (attr.is_symlink()) {
    a.mode = S_IFLNK | 0777;  // a link's own mode means nothing; its target's decides
    a.nlink = 1;
    a.size = attr.size;
    a.mtime_sec = attr.mtime_sec;
  } else {
    a.mode = S_IFREG | (options_.file_mode & 07777);
    a.nlink = 1;
    a.size = attr.size;
    a.mtime_sec = attr.mtime_sec;
  }
  // --posix-metadata: what chmod, chown and utime stored (here, by ossfs or by s3fs).
  if (attr.posix) ApplyPosix(*attr.posix, attr.is_symlink(), a);
  return a;
}

void ApplyPosix(const meta::PosixAttrs& posix, bool symlink, Attributes& a) {
  // A link's own mode means nothing: it keeps S_IFLNK | 0777.
  if (posix.mode && !symlink) a.mode = (a.mode & S_IFMT) | (*posix.mode & 07777);
  if (posix.uid) a.uid = *posix.uid;
  if (posix.gid) a.gid = *posix.gid;
  if (posix.mtime_sec) a.mtime_sec = *posix.mtime_sec;
}

Entry ObjectFilesystem::MakeEntry(InodeId ino, const meta::NodeAttr& attr) const {
  Entry e;
  e.attr = MakeAttributes(ino, attr);
  e.entry_timeout = listings_->cache().ttl().KernelTimeout();
  // A growing object's size is asked for at each stat (GetAttr asks the server).
  e.attr_timeout = attr.appendable ? 0 : e.entry_timeout;
  return e;
}

// ---------------------------------------------------------------------------------------
// Metadata

void ObjectFilesystem::ResolveWithPosix(const std::string& path,
                                        ListingService::ResolveCallback done, bool from_server) {
  if (!options_.posix_metadata) {
    if (from_server) return listings_->ResolveFromServer(path, std::move(done));
    return listings_->Resolve(path, std::move(done));
  }
  auto then = [self = shared_from_this(), path,
               done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) mutable {
    if (!r.ok() || !r->has_value() || (*r)->posix || path.empty()) return done(std::move(r));
    if ((*r)->is_dir()) return self->ResolveDirPosix(path, **r, std::move(done));
    // Listings carry no user metadata: one HEAD tells the mode, owner and time.
    const meta::MetadataCache::Asked asked = self->listings_->cache().Asking();
    self->data_.client()->Head(
        meta::FileKey(self->options_.prefix, path),
        [self, path, asked, done = std::move(done)](Result<ObjectInfo> info) {
          if (!info.ok() && info.status().code() == ErrorCode::kNotFound) {
            self->listings_->cache().PutAbsent(path, asked);
            return done(std::optional<meta::NodeAttr>());
          }
          if (!info.ok()) return done(info.status());
          meta::NodeAttr attr = meta::FileAttrFrom(*info);
          self->listings_->cache().PutPresent(path, attr, asked);
          done(std::optional<meta::NodeAttr>(std::move(attr)));
        });
  };
  if (from_server) return listings_->ResolveFromServer(path, std::move(then));
  listings_->Resolve(path, std::move(then));
}

void ObjectFilesystem::ResolveDirPosix(const std::string& path, meta::NodeAttr dir,
                                       ListingService::ResolveCallback done) {
  // A directory's mode, owner and time live on its marker ("dir/"), as ossfs and s3fs keep
  // them; a directory with no marker (only keys under it) has none, which is cached too.
  const meta::MetadataCache::Asked asked = listings_->cache().Asking();
  data_.client()->Head(meta::DirPrefix(options_.prefix, path),
                       [self = shared_from_this(), path, dir = std::move(dir), asked,
                        done = std::move(done)](Result<ObjectInfo> info) mutable {
                         if (!info.ok() && info.status().code() != ErrorCode::kNotFound)
                           return done(info.status());
                         dir.posix = info.ok() ? meta::PosixFromMetadata(info->user_meta)
                                               : meta::PosixAttrs{};
                         self->listings_->cache().PutPresent(path, dir, asked);
                         done(std::optional<meta::NodeAttr>(std::move(dir)));
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
  if (auto writer = writes_->OwnerOf(path)) {
    // Being written by this mount: its size so far (the object is not on the server yet).
    InodeId ino = inodes_.Ensure(path, false, 1);
    Entry e;
    e.attr = WritingAttributes(*writer);
    e.attr.ino = ino;
    e.entry_timeout = listings_->cache().ttl().KernelTimeout();
    e.attr_timeout = 0;
    return done(e);
  }
  ResolveWithPosix(path, [self = shared_from_this(), path,
                          done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value()) return done(Status(ErrorCode::kNotFound, "no such file: " + path));
    const meta::NodeAttr& attr = **r;
    InodeId ino = self->inodes_.Ensure(path, attr.is_dir(), 1, VersionFingerprint(attr));
    done(self->MakeEntry(ino, attr));
  });
}

void ObjectFilesystem::Forget(InodeId ino, uint64_t nlookup) { inodes_.Forget(ino, nlookup); }

void ObjectFilesystem::AddLookup(InodeId ino) { inodes_.AddLookup(ino); }

void ObjectFilesystem::GetAttr(InodeId ino, Callback<AttrReply> done) {
  auto node = inodes_.Get(ino);
  if (!node) return done(NoSuchInode(ino));
  if (ino == kRootInode) {
    AttrReply reply{MakeAttributes(ino, meta::DirAttr()), listings_->cache().ttl().KernelTimeout()};
    return done(reply);
  }
  if (node->detached) {
    // A file still open for writing after its name was unlinked: what it holds now.
    if (auto writer = writes_->WritingOn(ino)) {
      Attributes a = WritingAttributes(*writer);
      a.ino = ino;
      a.nlink = 0;
      return done(AttrReply{a, 0});
    }
    // A version of the file that readers opened before the path got a new inode: what they
    // pinned, not what the path holds now.
    if (std::optional<OpenFiles::Version> v = open_files_->ReadersVersion(ino)) {
      Attributes a = MakeAttributes(ino, meta::NodeAttr{});
      a.size = v->size;
      a.mtime_sec = v->mtime_sec;
      return done(AttrReply{a, listings_->cache().ttl().KernelTimeout()});
    }
  } else if (auto writer = writes_->OwnerOf(node->path)) {
    Attributes a = WritingAttributes(*writer);
    a.ino = ino;
    return done(AttrReply{a, 0});
  }
  ResolveWithPosix(node->path, [self = shared_from_this(), ino, is_dir = node->is_dir,
                                path = node->path,
                                done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value() || (*r)->is_dir() != is_dir) {
      // Files open here keep the version they opened (an fstat of one answers with it).
      if (std::optional<OpenFiles::Version> v = self->open_files_->ReadersVersion(ino)) {
        Attributes a = self->MakeAttributes(ino, meta::NodeAttr{});
        a.size = v->size;
        a.mtime_sec = v->mtime_sec;
        return done(AttrReply{a, 0});
      }
      // Gone (another client removed it, a create here failed) or changed kind: ESTALE makes
      // the kernel look the name up again (stat, open) rather than fail the call.
      return done(Status(ErrorCode::kPreconditionFailed,
                         "'" + path + "' no longer exists as it was: look it up again"));
    }
    if ((*r)->appendable) return self->GrowingAttr(ino, path, std::move(done));
    self->inodes_.ShowVersion(ino, VersionFingerprint(**r));  // this reply updates the kernel
    done(AttrReply{self->MakeAttributes(ino, **r), self->listings_->cache().ttl().KernelTimeout()});
  });
}

void ObjectFilesystem::GrowingAttr(InodeId ino, const std::string& path, Callback<AttrReply> done) {
  // An appendable object grows while it is watched (tail -f): its size comes from the server
  // at each stat, and the kernel keeps it no longer than that.
  listings_->ResolveFromServer(path, [self = shared_from_this(), ino, path, done = std::move(done)](
                                         Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value() || (*r)->is_dir()) {
      return done(Status(ErrorCode::kPreconditionFailed,
                         "'" + path + "' no longer exists as it was: look it up again"));
    }
    self->inodes_.ShowVersion(ino, VersionFingerprint(**r));
    done(AttrReply{self->MakeAttributes(ino, **r), 0});
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
  const uint64_t fh = next_fh_.fetch_add(1, std::memory_order_relaxed);
  if (handle_records_) {
    handle_records_->Opened(fh, HandleRecord::Of(HandleRecord::Kind::kDirectory, ino, node->path));
  }
  dir_handles_.Insert(fh, std::make_shared<DirHandle>(ino, node->path));
  done(fh);
}

void ObjectFilesystem::ReadDir(InodeId /*ino*/, uint64_t dir_handle, off_t offset,
                               Callback<std::vector<DirEntry>> done) {
  std::shared_ptr<DirHandle> handle = dir_handles_.Find(dir_handle);
  if (!handle) return done(BadHandle(dir_handle));
  if (offset < 0) {
    return done(Status(ErrorCode::kInvalidArgument, "negative offset"));
  }
  if (auto snapshot = handle->snapshot()) {
    boost::asio::post(io_, [self = shared_from_this(), handle, snapshot, offset,
                            done = std::move(done)]() mutable {
      self->ServeDir(handle, snapshot, offset, done);
    });
    return;
  }
  if (auto stream = handle->stream()) return ServeStream(handle, stream, offset, std::move(done));
  // The handle's first read: a walk has entered this directory.
  listings_->ListAheadOf(handle->path());
  listings_->GetListing(
      handle->path(),
      [self = shared_from_this(), handle, offset,
       done = std::move(done)](Result<std::shared_ptr<const meta::DirSnapshot>> r) mutable {
        if (!r.ok() && r.status().code() == ErrorCode::kTooBig) {
          // Too large to hold whole: read page by page, as the reader asks.
          auto stream = handle->AttachStream(std::make_shared<DirStream>(
              self->data_.client(), meta::DirPrefix(self->options_.prefix, handle->path()),
              self->options_.max_list_pages));
          if (stream) return self->ServeStream(handle, stream, offset, std::move(done));
          return self->ServeDir(handle, handle->snapshot(), offset, done);
        }
        if (!r.ok()) return done(r.status());
        // The first listing attached to the handle stays for its life: stable offsets.
        auto listing = self->WithOwnWrites(handle->path(), std::move(*r));
        self->ServeDir(handle, handle->Attach(std::move(listing)), offset, done);
      },
      // A reader that went (killed, or closed the directory) no longer waits for the listing.
      [weak = std::weak_ptr<DirHandle>(handle)](int) {
        auto h = weak.lock();
        return h && !h->released();
      });
}

void ObjectFilesystem::ServeStream(const std::shared_ptr<DirHandle>& handle,
                                   const std::shared_ptr<DirStream>& stream, off_t offset,
                                   Callback<std::vector<DirEntry>> done) {
  stream->Read(static_cast<uint64_t>(offset), kReadDirBatch,
               [self = shared_from_this(), handle, offset,
                done = std::move(done)](Result<std::vector<meta::DirChild>> r) {
                 if (!r.ok()) return done(r.status());
                 std::vector<DirEntry> entries;
                 entries.reserve(r->size());
                 off_t next = offset;
                 for (const meta::DirChild& child : *r) {
                   const std::string path = meta::JoinPath(handle->path(), child.name);
                   Entry entry = self->NameOnlyEntry(path, child.attr);
                   entries.push_back(DirEntry{child.name, entry, ++next});
                 }
                 done(std::move(entries));
               });
}

Entry ObjectFilesystem::NameOnlyEntry(const std::string& path, const meta::NodeAttr& attr) const {
  Entry entry;
  entry.attr = MakeAttributes(0, attr);
  // d_ino: the inode the name has, when it has one; else a number of its own, never one the
  // table hands out (those count up from 2), and never 0, which readdir(3) skips.
  if (std::optional<InodeId> ino = inodes_.Find(path)) {
    entry.attr.ino = *ino;
  } else {
    entry.attr.ino = (std::hash<std::string>{}(path) | (uint64_t{1} << 63));
  }
  entry.name_only = true;
  return entry;
}

void ObjectFilesystem::ServeDir(const std::shared_ptr<DirHandle>& handle,
                                const std::shared_ptr<const meta::DirSnapshot>& snap, off_t offset,
                                Callback<std::vector<DirEntry>>& done) {
  std::vector<DirEntry> entries;
  std::vector<InodeId> pinned;
  const size_t n = snap->size();
  const size_t begin = static_cast<size_t>(offset);
  // Over its share of the metadata budget, the inode table takes no more names from listings:
  // their entries carry names only, and the kernel looks up those it opens.
  const bool inodes_full = inodes_.bytes() > options_.max_metadata_memory / 2;
  for (size_t i = begin; i < n && i < begin + kReadDirBatch; ++i) {
    const meta::DirSnapshot::Child child = snap->child(i);
    const meta::NodeAttr attr = child.attr();
    const std::string path = meta::JoinPath(handle->path(), child.name);
    // With --posix-metadata a file's (or a directory's) mode comes from a HEAD, which its
    // lookup makes.
    if (inodes_full || (options_.posix_metadata && !attr.posix)) {
      entries.push_back(
          DirEntry{std::string(child.name), NameOnlyEntry(path, attr), static_cast<off_t>(i + 1)});
      continue;
    }
    InodeId ino = inodes_.Pin(path, attr.is_dir(), VersionFingerprint(attr));
    pinned.push_back(ino);
    Entry entry = MakeEntry(ino, attr);
    // A file this mount is writing grows: the kernel must not keep the size listed now.
    if (!attr.is_dir() && options_.writes.enabled && writes_->OwnerOf(path)) entry.attr_timeout = 0;
    entries.push_back(DirEntry{std::string(child.name), entry, static_cast<off_t>(i + 1)});
  }
  const bool released = !handle->KeepPinned(pinned);
  // The adapter takes the kernel's references (AddLookup) inside `done`, before replying.
  done(std::move(entries));
  if (released) {
    for (InodeId ino : pinned) inodes_.Unpin(ino);
  }
}

void ObjectFilesystem::ReleaseDir(InodeId /*ino*/, uint64_t dir_handle) {
  std::shared_ptr<DirHandle> handle = dir_handles_.Take(dir_handle);
  if (!handle) return;
  if (handle_records_) handle_records_->Released(dir_handle);
  // Entries no reference was taken to (plain readdir, or not handed out) go now.
  for (InodeId ino : handle->Release()) inodes_.Unpin(ino);
}

std::optional<std::string> ObjectFilesystem::DirectoryPath(InodeId ino) {
  std::optional<meta::InodeTable::Node> node = inodes_.Get(ino);
  if (!node || !node->is_dir) return std::nullopt;
  return node->path;
}

// ---------------------------------------------------------------------------------------
// Files

void ObjectFilesystem::Open(InodeId ino, int flags, const Caller& caller,
                            Callback<OpenReply> done) {
  const bool writing = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0;
  if (writing && !options_.writes.enabled) return done(ReadOnly());
  RetryWhileBusy<Result<OpenReply>>(
      io_, std::chrono::steady_clock::now() + kBusyGrace,
      [self = shared_from_this(), ino, flags, caller](Callback<OpenReply> attempt) {
        self->OpenOnce(ino, flags, caller, std::move(attempt));
      },
      std::move(done));
}

void ObjectFilesystem::OpenOnce(InodeId ino, int flags, const Caller& caller,
                                Callback<OpenReply> done) {
  const bool writing = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0;
  auto node = inodes_.Get(ino);
  if (!node) return done(NoSuchInode(ino));
  if (node->is_dir) {
    return done(Status(ErrorCode::kIsDirectory, "is a directory"));
  }
  if (node->detached) {
    // The path has another inode now (a new version, or a file of another kind): the kernel
    // looks the path up again and opens that one.
    return done(Status(ErrorCode::kPreconditionFailed,
                       "'" + node->path + "' has a newer inode: look it up again"));
  }
  if (writing) return OpenForWriting(ino, *node, flags, caller, std::move(done));
  auto owner = writes_->OwnerOf(node->path);
  if (owner && owner->writer() && owner->writer()->appends()) {
    // A log being appended to here: read what the bucket has, as any other reader does.
    return OpenForReading(ino, *node, caller, std::move(done));
  }
  if (auto writer = owner) {
    // Being written here: read through the writer's staged copy, as it is at each read.
    auto fh = writes_->OpenReader(writer);
    if (!fh.ok()) return done(fh.status());
    OpenReply reply;
    reply.keep_cache = false;
    reply.fh = *fh;
    return done(reply);
  }
  OpenForReading(ino, *node, caller, std::move(done));
}

void ObjectFilesystem::OpenForReading(InodeId ino, const meta::InodeTable::Node& node,
                                      const Caller& caller, Callback<OpenReply> done) {
  listings_->Resolve(node.path, [self = shared_from_this(), ino, path = node.path, caller,
                                 page_cached = node.page_cached,
                                 done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value() || (*r)->is_dir()) {
      // The kernel's name for it is out of date (another client removed it, a create here
      // failed): ESTALE has it look the name up again, and a create with O_CREAT follows.
      return done(Status(ErrorCode::kPreconditionFailed,
                         "'" + path + "' is no longer a file: look it up again"));
    }
    const meta::NodeAttr& attr = **r;
    const FsOptions& options = self->options_;
    const uint64_t version = VersionFingerprint(attr);
    switch (self->open_files_->BeginRead(ino, {version, attr.size, attr.mtime_sec})) {
      case OpenFiles::Verdict::kOpened:
        break;
      case OpenFiles::Verdict::kOtherVersionOpen:
        // Readers of the version before have this inode open, and every open file of an
        // inode shares the kernel's page cache of it: the new version gets an inode of its own
        // (ESTALE makes the kernel look the path up again and open that one).
        self->inodes_.Detach(ino);
        spdlog::debug("'{}' changed while open here: the new version gets an inode of its own",
                      path);
        return done(Status(ErrorCode::kPreconditionFailed,
                           "'" + path + "' changed while open here: look it up again"));
      case OpenFiles::Verdict::kWriterOpen:
      case OpenFiles::Verdict::kReadersOpen:
        return done(Status(ErrorCode::kBusy, "'" + path + "' is open for writing on this mount",
                           /*retryable=*/true));
    }
    // Another version than the kernel was last handed (it changed on the server and the
    // metadata expired, or a read found it changed): the kernel may still hold the old
    // size, which would cut the new bytes at it, and old pages. Tell it to drop both (no
    // keep_cache, so page_cached below does not count either).
    const bool changed = self->inodes_.ShowVersion(ino, version);
    // Whether the inode's page cache can hold bytes of another version (an older version's
    // readers, a writer's pages): then the kernel must drop it.
    const bool pages_clean = self->inodes_.OpenPages(ino, version);
    if (changed) {
      spdlog::debug("'{}' changed since the kernel got its attributes (now {} bytes, etag {})",
                    path, attr.size, attr.etag);
    }
    std::shared_ptr<ReadHandle> handle = self->NewReadHandle(ino, path, attr);
    if (handle->reader) {
      self->NotifyRead(path);  // hints skip large files; their position still moves on
      handle->read_notified = true;
    }
    handle->caller = caller;
    OpenReply reply;
    // Not for a version whose CRC-64 check failed: the kernel may hold its damaged pages from
    // earlier opens, and a pass that reads them would never fetch (and check) them again.
    reply.keep_cache = self->listings_->cache().ttl().indefinite() && !changed && pages_clean &&
                       !readahead::IsSuspectVersion(handle->key, handle->etag) && !handle->growing;
    reply.direct_io = handle->growing;
    reply.attributes_changed = changed;
    // A backing file, unless the kernel's page cache of this inode may already hold the
    // bytes and stays valid (keep_cache): reading those costs nothing, while a backing
    // file costs a verification here. The page cache goes with the kernel's inode, which
    // takes our inode with it, so after a remount every cached file qualifies.
    if (handle->small && !handle->growing && options.disk_cache &&
        self->backing_files_wanted_.load(std::memory_order_relaxed) &&
        !(reply.keep_cache && page_cached)) {
      // Verified now; the kernel then reads the file without us (and without the checks).
      if (auto fd = options.disk_cache->OpenVerified(
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
    reply.fh = self->next_fh_.fetch_add(1, std::memory_order_relaxed);
    if (self->handle_records_) {
      self->handle_records_->Opened(
          reply.fh, {HandleRecord::Kind::kRead, ino, path, attr.etag, attr.size, attr.mtime_sec,
                     attr.crc64, attr.appendable});
    }
    self->read_handles_.Insert(reply.fh, std::move(handle));
    done(reply);
  });
}

std::shared_ptr<ReadHandle> ObjectFilesystem::NewReadHandle(InodeId ino, const std::string& path,
                                                            const meta::NodeAttr& attr) {
  auto handle = std::make_shared<ReadHandle>();
  handle->ino = ino;
  handle->path = path;
  handle->key = meta::FileKey(options_.prefix, path);
  handle->size = attr.size;
  handle->etag = attr.etag;
  handle->growing = attr.appendable;
  handle->small = attr.size <= options_.small_file_threshold && !handle->growing;
  if (!handle->small && !handle->growing) {
    handle->reader = data_.NewLargeFileReader(handle->key, attr.size, attr.etag, attr.crc64);
  }
  return handle;
}

void ObjectFilesystem::Read(InodeId /*ino*/, uint64_t fh, off_t offset, size_t size,
                            Callback<ReadReply> done) {
  if (offset < 0) {
    return done(Status(ErrorCode::kInvalidArgument, "negative offset"));
  }
  if (WriteService::Numbers(fh)) {
    return writes_->Read(fh, static_cast<uint64_t>(offset), size, std::move(done));
  }
  std::shared_ptr<ReadHandle> handle = read_handles_.Find(fh);
  if (!handle) return done(BadHandle(fh));
  const uint64_t off = static_cast<uint64_t>(offset);
  if (handle->growing) return ReadGrowing(handle, off, size, std::move(done));
  if (size == 0 || off >= handle->size) return done(ReadReply{});
  if (handle->small) return ReadSmall(handle, off, size, std::move(done));
  handle->reader->Read(
      off, size,
      [self = shared_from_this(), handle, done = std::move(done)](Result<readahead::ReadBytes> r) {
        if (!r.ok()) {
          if (r.status().code() == ErrorCode::kPreconditionFailed) {
            self->listings_->cache().Invalidate(handle->path);  // the next open asks again
          }
          return done(r.status());
        }
        CountRead(*handle, r->size);
        done(ReadReply{r->data, r->size, std::move(r->owner)});
      });
}

void ObjectFilesystem::ReadSmall(const std::shared_ptr<ReadHandle>& handle, uint64_t offset,
                                 size_t size, Callback<ReadReply> done) {
  auto slice = [](const std::shared_ptr<const Blob>& blob, uint64_t off, size_t n) {
    ReadReply reply;
    reply.data = blob->data() + off;
    reply.size = std::min<uint64_t>(n, blob->size() - off);
    reply.owner = blob;
    return reply;
  };
  if (std::shared_ptr<const Blob> blob = handle->blob()) {
    ReadReply reply = slice(blob, offset, size);
    CountRead(*handle, reply.size);
    return done(std::move(reply));
  }
  data_.whole_objects().Fetch(handle->key, handle->etag, handle->size,
                              [self = shared_from_this(), handle, offset, size, slice,
                               done = std::move(done)](Result<std::shared_ptr<const Blob>> r) {
                                if (!r.ok()) {
                                  if (r.status().code() == ErrorCode::kPreconditionFailed) {
                                    self->listings_->cache().Invalidate(handle->path);
                                  }
                                  return done(r.status());
                                }
                                // Released after this scope, outside the handle's lock.
                                const std::shared_ptr<const Blob> previous = handle->SetBlob(*r);
                                // Once per handle (its first read fetches the blob), and only when
                                // the kernel keeps the pages (keep_cache).
                                if (!previous && self->listings_->cache().ttl().indefinite()) {
                                  self->inodes_.MarkPageCached(handle->ino);
                                }
                                self->NotifyRead(handle->path);
                                ReadReply reply = slice(*r, offset, size);
                                CountRead(*handle, reply.size);
                                done(std::move(reply));
                              });
}

void ObjectFilesystem::ReadGrowing(const std::shared_ptr<ReadHandle>& handle, uint64_t offset,
                                   size_t size, Callback<ReadReply> done) {
  if (size == 0) return done(ReadReply{});
  GetRequest request;
  request.key = handle->key;
  request.offset = offset;
  request.length = size;
  auto buffer = std::make_shared<std::vector<char>>(size);
  data_.client()->Get(request, GetTarget::Fixed(buffer->data(), buffer->size()),
                      [handle, buffer, done = std::move(done)](Result<GetResult> r) {
                        // At or past the end the object has now: nothing more yet.
                        if (!r.ok() && r.status().code() == ErrorCode::kInvalidRange) {
                          return done(ReadReply{});
                        }
                        if (!r.ok()) return done(r.status());
                        handle->bytes_read.fetch_add(r->bytes, std::memory_order_relaxed);
                        done(ReadReply{buffer->data(), r->bytes, buffer});
                      });
}

void ObjectFilesystem::Release(InodeId /*ino*/, uint64_t fh) {
  if (WriteService::Numbers(fh)) return writes_->Release(fh);
  // Destroyed after the map's lock: it may free a buffer.
  std::shared_ptr<ReadHandle> handle = read_handles_.Take(fh);
  if (!handle) return;
  if (handle_records_) handle_records_->Released(fh);
  Released(handle, /*at_unmount=*/false);
}

void ObjectFilesystem::EndSession() {
  for (auto& [fh, handle] : read_handles_.TakeAll()) Released(handle, /*at_unmount=*/true);
  writes_->EndSession();
}

void ObjectFilesystem::Released(const std::shared_ptr<ReadHandle>& handle, bool at_unmount) {
  // Cancels readahead still in flight and frees the parts (and their budget) at once.
  if (handle->reader) handle->reader->Close();
  open_files_->EndRead(handle->ino);
  const bool read = handle->bytes_read.load(std::memory_order_relaxed) > 0;
  // No READ came: the kernel's page cache served the file (or it was not read). The hint
  // prefetcher's reader has passed it all the same, and must not wait for it.
  if (handle->small && !handle->read_notified && !read) NotifyRead(handle->path);
  if (handle->page_cache_reopen) {
    (read ? Files().page_cache_reopen_misses : Files().page_cache_reopen_hits).Add();
    if (page_cache_trust_.Record(!read) && observer_) observer_->OnPageCacheDistrusted();
  }
  Files().open_handles.Add(-1);
  if (options_.audit) options_.audit->Record(handle->Audit(at_unmount));
}

StatFs ObjectFilesystem::GetStatFs() {
  StatFs s;
  s.block_size = 4096;
  s.blocks = 1ull << 40;  // 4 PiB: object stores have no meaningful capacity
  // A read-only mount has no room; a writable one reports room, or `df` and tools that
  // check free space first (rsync, some checkpoint savers) refuse to write.
  s.blocks_free = options_.writes.enabled ? s.blocks : 0;
  s.files = 1ull << 32;
  s.files_free = options_.writes.enabled ? s.files : 0;
  s.name_max = meta::kNameMax;
  return s;
}

ObjectFilesystem::Stats ObjectFilesystem::stats() const {
  const meta::MetadataCache& cache = listings_->cache();
  Stats s;
  s.inodes = inodes_.size();
  s.dir_handles = dir_handles_.size();
  s.file_handles = read_handles_.size();
  s.write_handles = writes_->handle_count();
  s.whole_objects = data_.whole_objects().entry_count();
  s.cached_entries = cache.entry_count();
  s.cached_listings = cache.listing_count();
  s.listed_names = cache.listed_names();
  s.listing_bytes = cache.listing_bytes();
  s.metadata_bytes = cache.listing_bytes() + cache.entry_bytes() + inodes_.bytes();
  s.metadata_limit = options_.max_metadata_memory;
  s.metadata_evictions = cache.evictions();
  return s;
}

std::shared_ptr<ObjectFilesystem> MakeObjectFilesystem(boost::asio::io_context& io,
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
  RegisterFilesystemGauges([weak = std::weak_ptr<ObjectFilesystem>(filesystem)] {
    auto fs = weak.lock();
    return fs ? std::optional<FilesystemStats>(fs->stats()) : std::nullopt;
  });
  return filesystem;
}

}  // namespace ossmount::fs
