// ObjectFilesystem's file writes: create, open for writing, write, flush, fsync, fallocate,
// setattr and the end of a write handle (docs/SEMANTICS.md, "Writing").
//
// Before anything can replace an object, the server is asked, not the cache: a create
// without O_TRUNC (touch, O_EXCL) or an open for writing without O_TRUNC probes the name,
// and a file the server said was new is completed with forbid-overwrite, so that a name
// another client took meanwhile fails the close with EEXIST instead of being replaced.
#include <fcntl.h>
#include <linux/falloc.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <chrono>

#include "common/thread_group.h"
#include "fs/busy_retry.h"
#include "fs/fs_metrics.h"
#include "fs/object_filesystem.h"
#include "meta/key_mapping.h"

namespace ossmount::fs {
namespace {

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status NoOverwrite(const std::string& path) {
  return Status(ErrorCode::kAccessDenied,
                "'" + path + "' exists and the mount does not overwrite (--no-overwrite)");
}

// Zeros appended to a file that fallocate made longer than its writes, a piece at a time.
constexpr size_t kZeroPiece = 1 << 20;

}  // namespace

Status ObjectFilesystem::CheckWrites() const {
  return options_.writes.enabled ? Status::Ok() : ReadOnly();
}

Result<std::string> ObjectFilesystem::ChildPath(InodeId parent, const std::string& name) const {
  Status valid = meta::CheckLookupName(name);
  if (!valid.ok()) {
    // "." and ".." come here only for names the kernel would not pass; anything else invalid
    // (a '/' or NUL) can never be a key under the mount.
    return valid.code() == ErrorCode::kNotFound
               ? Status(ErrorCode::kInvalidArgument, "'" + name + "' is not a valid name")
               : valid;
  }
  auto node = inodes_.Get(parent);
  if (!node)
    return Status(ErrorCode::kNotFound, "inode " + std::to_string(parent) + " is not known");
  if (!node->is_dir) return Status(ErrorCode::kNotDirectory, "not a directory");
  std::string path = meta::JoinPath(node->path, name);
  // The longest key this path may need is its directory marker's ("path/").
  Status key = meta::CheckNewKey(meta::DirPrefix(options_.prefix, path), path);
  if (!key.ok()) return key;
  return path;
}

std::shared_ptr<WriteHandle> ObjectFilesystem::OwnerOf(const std::string& path) const {
  std::lock_guard lock(writers_mu_);
  auto it = writers_.find(path);
  if (it == writers_.end()) return nullptr;
  auto handle = it->second.lock();
  if (!handle || handle->released.load(std::memory_order_acquire)) return nullptr;
  return handle;
}

Status ObjectFilesystem::Busy(const WriteHandle& owner, const std::string& what) {
  const bool leaving = owner.closing.load(std::memory_order_acquire) ||
                       owner.releasing.load(std::memory_order_acquire);
  return Status(ErrorCode::kBusy,
                what + ": '" + owner.path +
                    "' is open for writing on this mount; it stays its writer's until closed",
                /*retryable=*/leaving);
}

std::shared_ptr<const meta::DirSnapshot> ObjectFilesystem::WithOwnWrites(
    const std::string& dir, std::shared_ptr<const meta::DirSnapshot> listing) {
  std::vector<std::shared_ptr<WriteHandle>> writing;
  {
    std::lock_guard lock(writers_mu_);
    for (const auto& [path, weak] : writers_) {
      if (meta::SplitPath(path).first != dir) continue;
      auto handle = weak.lock();
      if (handle && !handle->released.load(std::memory_order_acquire) && handle->upload &&
          handle->upload->active()) {
        writing.push_back(handle);
      }
    }
  }
  for (const auto& handle : writing) {
    const std::string_view name = meta::SplitPath(handle->path).second;
    if (listing->Find(name)) continue;
    meta::NodeAttr attr;
    attr.size = WrittenSize(*handle);
    attr.mtime_sec = NowSeconds();
    listing = std::make_shared<const meta::DirSnapshot>(listing->Patched(name, attr));
    listings_->cache().RecordChange(handle->path, attr);
  }
  return listing;
}

uint64_t ObjectFilesystem::WrittenSize(WriteHandle& handle) {
  const uint64_t uploaded = handle.upload ? handle.upload->size() : 0;
  std::lock_guard lock(handle.mu);
  return std::max(uploaded, handle.reserved_size);
}

Attributes ObjectFilesystem::WritingAttributes(WriteHandle& handle) const {
  Attributes a;
  a.ino = handle.ino;
  a.uid = options_.uid;
  a.gid = options_.gid;
  a.mode = S_IFREG | (options_.file_mode & 07777);
  a.nlink = 1;
  a.size = WrittenSize(handle);
  a.mtime_sec = NowSeconds();
  return a;
}

std::shared_ptr<WriteHandle> ObjectFilesystem::NewWriteHandle(InodeId ino, const std::string& path,
                                                              const Caller& caller,
                                                              const WriteKind& kind) {
  auto handle = std::make_shared<WriteHandle>();
  handle->ino = ino;
  handle->path = path;
  handle->key = meta::FileKey(options_.prefix, path);
  handle->opener = caller;
  handle->opener.pid = static_cast<uint32_t>(ProcessOfThread(static_cast<int>(caller.pid)));
  handle->may_write = kind.may_write;
  handle->replaces = kind.replaces;
  handle->created = kind.created;
  if (kind.may_write) {
    WriteOptions wo;
    // A name the server said was free must still be free when the file is completed: a name
    // another client took meanwhile fails the close with EEXIST instead of being replaced.
    // So must every name without --allow-overwrite.
    wo.forbid_overwrite = kind.must_be_new || !options_.writes.allow_overwrite;
    handle->upload = upload::ObjectUpload::Make(data_.client(), upload_gate_, journal_, handle->key,
                                                options_.writes.upload, wo);
    // A failed close whose Complete went unanswered: once the upload learns whether the
    // server applied it, this mount shows what is at the key.
    handle->upload->OnOutcomeSettled(
        [weak = weak_from_this(), path](std::optional<ObjectInfo> made) {
          auto self = weak.lock();
          if (!self || !made) return;
          self->listings_->cache().RecordChange(path, meta::FileAttrFrom(*made));
        });
  }
  return handle;
}

Status ObjectFilesystem::TakeOwnership(const std::shared_ptr<WriteHandle>& handle) {
  {
    std::lock_guard lock(writers_mu_);
    auto& slot = writers_[handle->path];
    auto current = slot.lock();
    if (current && !current->released.load(std::memory_order_acquire)) {
      return Busy(*current, "opening '" + handle->path + "' for writing");
    }
    slot = handle;
  }
  switch (open_files_.BeginWrite(handle->ino)) {
    case OpenFiles::Verdict::kOpened:
      // Whatever the kernel's page cache of the inode holds is no complete version now.
      inodes_.ForgetPages(handle->ino);
      return Status::Ok();
    case OpenFiles::Verdict::kReadersOpen:
      DropOwnership(*handle);
      return Status(ErrorCode::kPreconditionFailed,
                    "'" + handle->path + "' is open for reading on this mount");
    case OpenFiles::Verdict::kWriterOpen:
    case OpenFiles::Verdict::kOtherVersionOpen:
      break;
  }
  DropOwnership(*handle);
  return Status(ErrorCode::kBusy, "'" + handle->path + "' is open for writing on this mount");
}

void ObjectFilesystem::DropOwnership(const WriteHandle& handle) {
  std::lock_guard lock(writers_mu_);
  auto it = writers_.find(handle.path);
  if (it != writers_.end() && it->second.lock().get() == &handle) writers_.erase(it);
}

void ObjectFilesystem::Create(InodeId parent, std::string name, int flags, const Caller& caller,
                              Callback<CreateReply> done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  auto path = ChildPath(parent, name);
  if (!path.ok()) return done(path.status());
  RetryWhileBusy<Result<CreateReply>>(
      io_, std::chrono::steady_clock::now() + kBusyGrace,
      [self = shared_from_this(), path = *path, flags, caller](Callback<CreateReply> attempt) {
        self->CreateOnce(path, flags, caller, std::move(attempt));
      },
      std::move(done));
}

void ObjectFilesystem::MakeNode(InodeId parent, std::string name, uint32_t mode,
                                const Caller& caller, Callback<Entry> done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  if (!S_ISREG(mode)) {
    return done(Status(ErrorCode::kNotPermitted,
                       "mknod '" + name +
                           "': objects are files and directories; devices, FIFOs and sockets "
                           "cannot be made"));
  }
  // An empty regular file: an O_EXCL create, closed at once.
  Create(parent, std::move(name), O_WRONLY | O_CREAT | O_EXCL, caller,
         [self = shared_from_this(), caller, done = std::move(done)](Result<CreateReply> r) {
           if (!r.ok()) return done(r.status());
           const InodeId ino = r->entry.attr.ino;
           const uint64_t fh = r->fh;
           self->Flush(ino, fh, caller, [self, ino, fh, entry = r->entry, done](Status s) {
             self->Release(ino, fh);
             if (!s.ok()) {
               self->inodes_.Forget(ino, 1);
               return done(s);
             }
             done(entry);
           });
         });
}

void ObjectFilesystem::CreateOnce(const std::string& path, int flags, const Caller& caller,
                                  Callback<CreateReply> done) {
  if (auto owner = OwnerOf(path)) return done(Busy(*owner, "creating '" + path + "'"));
  const bool truncate = (flags & O_TRUNC) != 0;
  const bool exclusive = (flags & O_EXCL) != 0;
  auto decide = [self = shared_from_this(), path, caller, truncate, exclusive,
                 done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) mutable {
    if (!r.ok()) return done(r.status());
    const bool exists = r->has_value();
    if (exists && (*r)->is_dir()) {
      return done(Status(ErrorCode::kIsDirectory, "'" + path + "' is a directory"));
    }
    if (exists && exclusive)
      return done(Status(ErrorCode::kAlreadyExists, "'" + path + "' exists"));
    if (exists && !truncate) {
      // touch, or open("a") of a name this mount did not know: the object stays as it is.
      return self->OpenExisting(path, **r, caller, std::move(done));
    }
    if (exists && !self->options_.writes.allow_overwrite) return done(NoOverwrite(path));
    WriteKind kind;
    kind.replaces = true;
    kind.created = !exists;
    // Asked of the server and absent: it must still be absent at the completion.
    kind.must_be_new = !truncate || exclusive;
    self->StartWriter(path, caller, kind, std::move(done));
  };
  // O_TRUNC replaces whatever is there (the cache only has to tell a directory); anything else
  // must not replace an object, so the server is asked whether there is one.
  if (truncate && !exclusive) return listings_->Resolve(path, std::move(decide));
  listings_->ResolveFromServer(path, std::move(decide));
}

void ObjectFilesystem::StartWriter(const std::string& path, const Caller& caller,
                                   const WriteKind& kind, Callback<CreateReply> done) {
  InodeId ino = inodes_.Ensure(path, false, 1);
  auto handle = NewWriteHandle(ino, path, caller, kind);
  Status owned = TakeOwnership(handle);
  if (owned.code() == ErrorCode::kPreconditionFailed) {
    // The kernel has readers of the old object open on this inode: the new file gets an inode
    // of its own, and the readers keep theirs (and its page cache) to the end.
    inodes_.Detach(ino);
    inodes_.Forget(ino, 1);
    ino = inodes_.Ensure(path, false, 1);
    handle = NewWriteHandle(ino, path, caller, kind);
    owned = TakeOwnership(handle);
  }
  if (!owned.ok()) {
    inodes_.Forget(ino, 1);
    return done(owned.code() == ErrorCode::kPreconditionFailed
                    ? Status(ErrorCode::kBusy, owned.message())
                    : owned);
  }
  if (kind.created) {
    // Listings of this mount show the new name at once; its size follows the writes.
    meta::NodeAttr attr;
    attr.mtime_sec = NowSeconds();
    listings_->cache().RecordChange(path, attr);
  }
  CreateReply reply;
  reply.entry.attr = WritingAttributes(*handle);
  reply.entry.attr.ino = ino;
  reply.entry.entry_timeout = listings_->cache().ttl().KernelTimeout();
  reply.entry.attr_timeout = 0;
  reply.fh = next_fh_.fetch_add(1, std::memory_order_relaxed);
  write_handles_.Insert(reply.fh, std::move(handle));
  done(reply);
}

void ObjectFilesystem::OpenExisting(const std::string& path, const meta::NodeAttr& attr,
                                    const Caller& caller, Callback<CreateReply> done) {
  // An existing object opened for writing without O_TRUNC. ossmount cannot change an object
  // in place, so only an empty one may be written (which replaces it); any other is opened as
  // it is, refusing writes, and left unchanged.
  if (attr.size == 0 && !options_.writes.allow_overwrite) return done(NoOverwrite(path));
  if (attr.size == 0) {
    WriteKind kind;
    kind.replaces = false;
    return StartWriter(path, caller, kind, std::move(done));
  }
  const InodeId ino = inodes_.Ensure(path, false, 1);
  WriteKind kind;
  kind.may_write = false;
  kind.replaces = false;
  auto handle = NewWriteHandle(ino, path, caller, kind);
  CreateReply reply;
  reply.entry = MakeEntry(ino, attr);
  reply.fh = next_fh_.fetch_add(1, std::memory_order_relaxed);
  write_handles_.Insert(reply.fh, std::move(handle));
  done(reply);
}

void ObjectFilesystem::OpenForWriting(InodeId ino, const meta::InodeTable::Node& node, int flags,
                                      const Caller& caller, Callback<OpenReply> done) {
  const std::string path = node.path;
  if (auto owner = OwnerOf(path)) return done(Busy(*owner, "opening '" + path + "'"));
  const bool truncate = (flags & O_TRUNC) != 0;
  auto decide = [self = shared_from_this(), ino, path, truncate, caller,
                 done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) mutable {
    if (!r.ok()) return done(r.status());
    if (!r->has_value() || (*r)->is_dir()) {
      // As for a reader: the kernel looks the name up again, and an O_CREAT open then
      // creates it.
      return done(Status(ErrorCode::kPreconditionFailed,
                         "'" + path + "' is no longer a file: look it up again"));
    }
    if (!truncate && (*r)->size > 0) {
      WriteKind kind;
      kind.may_write = false;
      kind.replaces = false;
      auto handle = self->NewWriteHandle(ino, path, caller, kind);
      OpenReply reply;
      reply.fh = self->next_fh_.fetch_add(1, std::memory_order_relaxed);
      self->write_handles_.Insert(reply.fh, std::move(handle));
      return done(reply);
    }
    if (!self->options_.writes.allow_overwrite) return done(NoOverwrite(path));
    WriteKind kind;
    kind.replaces = truncate;
    auto handle = self->NewWriteHandle(ino, path, caller, kind);
    Status owned = self->TakeOwnership(handle);
    if (owned.code() == ErrorCode::kPreconditionFailed) {
      // Readers of the old object have this inode open. Its page cache and size are theirs
      // until they close it: the path gets a new inode, and ESTALE makes the kernel look the
      // path up again (the open is retried on the new inode, never seen by the caller).
      self->inodes_.Detach(ino);
      spdlog::debug("'{}' is open for reading: its writer gets an inode of its own", path);
      return done(Status(ErrorCode::kPreconditionFailed,
                         "'" + path + "' is open for reading here: look it up again"));
    }
    if (!owned.ok()) return done(owned);
    OpenReply reply;
    reply.keep_cache = false;
    reply.fh = self->next_fh_.fetch_add(1, std::memory_order_relaxed);
    self->write_handles_.Insert(reply.fh, std::move(handle));
    done(reply);
  };
  // O_TRUNC replaces the object whatever it is; without it the server tells whether there is
  // one to leave alone (an object another client wrote since this mount listed it).
  if (truncate) return listings_->Resolve(path, std::move(decide));
  listings_->ResolveFromServer(path, std::move(decide));
}

void ObjectFilesystem::Write(InodeId /*ino*/, uint64_t fh, off_t offset, const char* data,
                             size_t size, Callback<size_t> done) {
  std::shared_ptr<WriteHandle> handle = write_handles_.Find(fh);
  if (!handle) {
    return done(Status(ErrorCode::kInvalidArgument,
                       "handle " + std::to_string(fh) + " is not open for writing"));
  }
  if (!handle->may_write) {
    return done(Status(ErrorCode::kNotSupported,
                       "'" + handle->path +
                           "' exists: ossmount replaces whole objects and cannot change one in "
                           "place or append to it; open it with O_TRUNC to rewrite it"));
  }
  Status appended;
  {
    std::lock_guard lock(handle->mu);
    if (Status sticky = handle->upload->error(); !sticky.ok()) {
      appended = sticky;  // the first error, again
    } else if (static_cast<uint64_t>(offset) != handle->next_offset) {
      appended = Status(ErrorCode::kNotSupported,
                        "write to '" + handle->path + "' at offset " + std::to_string(offset) +
                            " where " + std::to_string(handle->next_offset) +
                            " was next: files are written sequentially from their start");
      handle->upload->Abort(appended);
    } else {
      appended = handle->upload->Append(data, size);
      if (appended.ok()) handle->next_offset += size;
    }
  }
  if (!appended.ok()) {
    spdlog::error("{}", appended.message());
    return done(appended);
  }
  handle->closing.store(false, std::memory_order_release);  // written again after a close
  handle->upload->WhenWritable([size, done = std::move(done)] { done(size); });
}

void ObjectFilesystem::Fallocate(InodeId /*ino*/, uint64_t fh, int mode, off_t offset, off_t length,
                                 StatusCallback done) {
  std::shared_ptr<WriteHandle> handle = write_handles_.Find(fh);
  if (!handle || !handle->may_write) {
    return done(Status(ErrorCode::kNotSupported, "fallocate: objects are not preallocated"));
  }
  if (offset < 0 || length <= 0) {
    return done(Status(ErrorCode::kInvalidArgument, "fallocate: bad offset or length"));
  }
  // Preallocation means nothing to an object store. What a program can observe is the size
  // that mode 0 (posix_fallocate) gives the file: the bytes not written by the completion are
  // zeros. Any other mode would change bytes in place.
  if ((mode & ~FALLOC_FL_KEEP_SIZE) != 0) {
    return done(Status(ErrorCode::kNotSupported,
                       "fallocate mode " + std::to_string(mode) + " on '" + handle->path +
                           "': only preallocation (mode 0 or FALLOC_FL_KEEP_SIZE) is supported"));
  }
  if ((mode & FALLOC_FL_KEEP_SIZE) == 0) {
    std::lock_guard lock(handle->mu);
    handle->reserved_size =
        std::max<uint64_t>(handle->reserved_size, static_cast<uint64_t>(offset + length));
  }
  done(Status::Ok());
}

void ObjectFilesystem::PadToReservedSize(const std::shared_ptr<WriteHandle>& handle,
                                         StatusCallback done) {
  Status appended;
  bool more = false;
  {
    std::lock_guard lock(handle->mu);
    if (handle->next_offset < handle->reserved_size) {
      static const std::string zeros(kZeroPiece, '\0');
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(kZeroPiece, handle->reserved_size - handle->next_offset));
      appended = handle->upload->Append(zeros.data(), n);
      if (appended.ok()) handle->next_offset += n;
      more = appended.ok() && handle->next_offset < handle->reserved_size;
    }
  }
  if (!more) return done(appended);
  handle->upload->WhenWritable([self = shared_from_this(), handle, done = std::move(done)] {
    self->PadToReservedSize(handle, std::move(done));
  });
}

void ObjectFilesystem::Flush(InodeId /*ino*/, uint64_t fh, const Caller& caller,
                             StatusCallback done) {
  std::shared_ptr<WriteHandle> handle = write_handles_.Find(fh);
  if (!handle) return done(Status::Ok());  // a read handle: nothing to do
  // A close in another process (a child that inherited the descriptor, or closed it before
  // exec) does not end the file its parent is still writing; the opener's close, an fsync
  // or the last release does.
  // (FUSE names the calling thread: a close in another thread of the opener is its own.)
  if (handle->opener.pid != 0 && caller.pid != 0 &&
      static_cast<uint32_t>(ProcessOfThread(static_cast<int>(caller.pid))) != handle->opener.pid) {
    return done(Status::Ok());
  }
  handle->closing.store(true, std::memory_order_release);
  // A close before the first write of an O_TRUNC rewrite does not replace the old object
  // with an empty one either (a shell's `> file` closes the original descriptor after dup2,
  // before writing): that waits for the release. A new file is completed, empty, at once, so
  // that a rename right after `touch` finds it complete; bytes written after a completion
  // continue the file (ObjectUpload::Append).
  if (!handle->created && handle->upload && WrittenSize(*handle) == 0 &&
      handle->upload->error().ok()) {
    return done(Status::Ok());
  }
  FinishWrite(handle, std::move(done));
}

void ObjectFilesystem::Fsync(InodeId /*ino*/, uint64_t fh, StatusCallback done) {
  std::shared_ptr<WriteHandle> handle = write_handles_.Find(fh);
  if (!handle) return done(Status::Ok());
  FinishWrite(handle, std::move(done));
}

void ObjectFilesystem::FinishWrite(const std::shared_ptr<WriteHandle>& handle,
                                   StatusCallback done) {
  if (!handle->upload) {
    // Opened for writing and refused every write: the object was never touched.
    return done(Status::Ok());
  }
  if (!handle->replaces && WrittenSize(*handle) == 0 && handle->upload->error().ok()) {
    // An empty object opened without O_TRUNC and not written (yet): it stays as it was.
    return done(Status::Ok());
  }
  PadToReservedSize(
      handle, [self = shared_from_this(), handle, done = std::move(done)](Status padded) mutable {
        if (!padded.ok()) return done(padded);
        self->CompleteUpload(handle, std::move(done));
      });
}

void ObjectFilesystem::CompleteUpload(const std::shared_ptr<WriteHandle>& handle,
                                      StatusCallback done) {
  handle->upload->Finish([self = shared_from_this(), handle,
                          done = std::move(done)](Result<upload::UploadedObject> r) {
    bool first = false;
    if (r.ok()) {
      uint64_t seen = handle->recorded_completion.load();
      while (seen < r->completion &&
             !handle->recorded_completion.compare_exchange_weak(seen, r->completion)) {
      }
      first = seen < r->completion;
    } else {
      first = !handle->failed_recorded.exchange(true);
    }
    if (first) self->RecordWriteOutcome(handle, r);
    done(r.status());
  });
}

void ObjectFilesystem::ReleaseWriter(const std::shared_ptr<WriteHandle>& handle) {
  handle->releasing.store(true, std::memory_order_release);
  FinishWrite(handle, [self = shared_from_this(), handle](Status) {
    handle->released.store(true, std::memory_order_release);
    if (handle->may_write) {
      self->DropOwnership(*handle);
      self->open_files_.EndWrite(handle->ino);
    }
  });
}

void ObjectFilesystem::RecordWriteOutcome(const std::shared_ptr<WriteHandle>& handle,
                                          const Result<upload::UploadedObject>& outcome) {
  meta::MetadataCache& cache = listings_->cache();
  if (handle->upload) {
    if (outcome.ok()) {
      meta::NodeAttr attr;
      attr.size = outcome->size;
      attr.mtime_sec = NowSeconds();
      attr.etag = outcome->etag;
      attr.crc64 = outcome->crc64;
      cache.RecordChange(handle->path, attr);
      // The inode's shown version is left as it was: the kernel may hold a size from the
      // writing (a listing, a lookup), so the next open for reading finds another version and
      // has the kernel drop it.
      spdlog::debug("wrote '{}': {} bytes in {} part(s)", handle->path, outcome->size,
                    outcome->parts);
    } else {
      const bool completed_before = handle->recorded_completion.load() > 0;
      spdlog::error(
          "saving '{}' failed: {}{}", handle->path, outcome.status().ToString(),
          handle->upload->outcome_will_settle()
              ? "; the server did not answer the CompleteMultipartUpload and may still apply "
                "it: a later line says whether it did"
          : handle->upload->outcome_unknown()
              ? "; the server did not answer the PutObject and may still apply it"
          : completed_before ? "; its last completed version stays"
          : outcome.status().code() == ErrorCode::kAlreadyExists
              ? "; another client made an object under its key meanwhile, which stays"
          : handle->created ? "; nothing was written under its key"
                            : "; the object there before is unchanged");
      // A new name that failed does not exist, unless another client took it meanwhile
      // (forbid-overwrite): then what is there is unknown here. A replaced object is still the
      // old one, which the cache still describes.
      if (outcome.status().code() == ErrorCode::kAlreadyExists) {
        cache.Invalidate(handle->path);
      } else if (handle->created && !completed_before) {
        cache.RecordChange(handle->path, std::nullopt);
      }
    }
  }
  if (options_.audit) {
    AuditRecord record;
    record.path = handle->path;
    record.caller = handle->opener;
    record.opened = handle->opened;
    record.duration = std::chrono::system_clock::now() - handle->opened;
    record.write = true;
    record.bytes_written = handle->upload ? handle->upload->size() : 0;
    record.size = outcome.ok() ? outcome->size : 0;
    record.result = outcome.ok() ? "ok" : ErrorCodeName(outcome.status().code());
    options_.audit->Record(std::move(record));
  }
}

void ObjectFilesystem::SetAttr(InodeId ino, uint64_t fh, const SetAttrRequest& request,
                               Callback<AttrReply> done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  auto node = inodes_.Get(ino);
  if (!node)
    return done(Status(ErrorCode::kNotFound, "inode " + std::to_string(ino) + " is not known"));
  std::shared_ptr<WriteHandle> handle = fh ? write_handles_.Find(fh) : nullptr;
  if (!handle && !node->detached) handle = OwnerOf(node->path);
  if (handle && !handle->may_write) handle = nullptr;  // opened as it is: the object's attrs
  if (request.size && !handle) {
    // No writer: a truncate of a closed file, to its own size (a no-op that copying tools
    // make) or to 0 (an empty object replaces it).
    return listings_->Resolve(
        node->path, [self = shared_from_this(), ino, path = node->path, size = *request.size,
                     done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) mutable {
          if (!r.ok()) return done(r.status());
          if (!r->has_value() || (*r)->is_dir()) {
            return done(Status(ErrorCode::kNotFound, "'" + path + "' is no longer a file"));
          }
          if ((*r)->size == size) return self->GetAttr(ino, std::move(done));
          if (size != 0) {
            return done(Status(ErrorCode::kNotSupported,
                               "truncating '" + path + "' to " + std::to_string(size) +
                                   " bytes: only an O_TRUNC open can rewrite an object"));
          }
          if (!self->options_.writes.allow_overwrite) {
            return done(Status(ErrorCode::kAccessDenied,
                               "truncating '" + path + "': the mount does not overwrite"));
          }
          self->data_.client()->Put(
              meta::FileKey(self->options_.prefix, path), std::make_shared<const std::string>(),
              WriteOptions{}, [self, ino, path, done = std::move(done)](Result<PutResult> put) {
                if (!put.ok()) return done(put.status());
                meta::NodeAttr attr;
                attr.mtime_sec = NowSeconds();
                attr.etag = put->etag;
                attr.crc64 = put->crc64;
                self->listings_->cache().RecordChange(path, attr);
                self->GetAttr(ino, std::move(done));
              });
        });
  }
  if (request.size) {
    // With a writer: only truncations that change nothing the upload holds, to the size
    // written so far (0 just after an O_TRUNC open, or the final size a copying tool sets).
    if (*request.size != WrittenSize(*handle)) {
      return done(Status(ErrorCode::kNotSupported,
                         "truncating '" + node->path + "' to " + std::to_string(*request.size) +
                             " bytes while it is written to " +
                             std::to_string(WrittenSize(*handle)) +
                             ": a file being written keeps what it wrote"));
    }
  }
  // Mode, owner and times are not stored (every file shows the mount's --file-mode and
  // owner); accepting them lets cp -p, rsync -a and tar finish their copies.
  if (handle) {
    Attributes a = WritingAttributes(*handle);
    a.ino = ino;
    return done(AttrReply{a, 0});
  }
  GetAttr(ino, std::move(done));
}

}  // namespace ossmount::fs
