// ObjectFilesystem's file writes: create, open for writing and setattr decide what a write
// handle is (which inode, what the server holds, whether it replaces or changes an object);
// WriteService takes the handle from there (docs/SEMANTICS.md, "Writing").
//
// Before anything can replace an object, the server is asked, not the cache: a create
// without O_TRUNC (touch, O_EXCL) or an open for writing without O_TRUNC probes the name,
// and a file the server said was new is completed with forbid-overwrite, so that a name
// another client took meanwhile fails the close with EEXIST instead of being replaced.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <chrono>

#include "common/time_util.h"
#include "fs/busy_retry.h"
#include "fs/object_filesystem.h"
#include "meta/key_mapping.h"

namespace ossmount::fs {
namespace {

Status NoOverwrite(const std::string& path) {
  return Status(ErrorCode::kAccessDenied,
                "'" + path + "' exists and the mount does not overwrite (--no-overwrite)");
}

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

std::shared_ptr<const meta::DirSnapshot> ObjectFilesystem::WithOwnWrites(
    const std::string& dir, std::shared_ptr<const meta::DirSnapshot> listing) {
  for (const auto& handle : writes_->WritingIn(dir)) {
    const std::string path = handle->path();
    const std::string_view name = meta::SplitPath(path).second;
    if (listing->Find(name)) continue;
    meta::NodeAttr attr;
    attr.size = WriteService::Size(*handle);
    attr.mtime_sec = UnixSecondsNow();
    listing = std::make_shared<const meta::DirSnapshot>(listing->Patched(name, attr));
    listings_->cache().RecordChange(path, attr);
  }
  return listing;
}

Attributes ObjectFilesystem::WritingAttributes(const WriteHandle& handle) const {
  Attributes a;
  a.ino = handle.ino;
  a.uid = options_.uid;
  a.gid = options_.gid;
  a.mode = S_IFREG | (options_.file_mode & 07777);
  a.nlink = 1;
  a.size = WriteService::Size(handle);
  a.mtime_sec = UnixSecondsNow();
  std::lock_guard lock(handle.mu);
  // --posix-metadata: what the file starts from (the object it replaces), and what was set
  // on the open file since.
  if (handle.posix_base || handle.posix) {
    ApplyPosix(handle.CurrentPosixLocked(), /*symlink=*/false, a);
  }
  return a;
}

Status ObjectFilesystem::ClaimPath(const std::shared_ptr<WriteHandle>& handle) {
  Status owned = writes_->TakeOwnership(handle);
  if (!owned.ok()) return owned;
  switch (open_files_->BeginWrite(handle->ino, handle->writer() && handle->writer()->appends())) {
    case OpenFiles::Verdict::kOpened:
      // Whatever the kernel's page cache of the inode holds is no complete version now.
      inodes_.ForgetPages(handle->ino);
      return Status::Ok();
    case OpenFiles::Verdict::kReadersOpen:
      writes_->DropOwnership(*handle);
      return Status(ErrorCode::kPreconditionFailed,
                    "'" + handle->path() + "' is open for reading on this mount");
    case OpenFiles::Verdict::kWriterOpen:
    case OpenFiles::Verdict::kOtherVersionOpen:
      break;
  }
  writes_->DropOwnership(*handle);
  return Status(ErrorCode::kBusy, "'" + handle->path() + "' is open for writing on this mount");
}

Result<std::shared_ptr<WriteHandle>> ObjectFilesystem::NewWriter(InodeId ino,
                                                                 const std::string& path,
                                                                 const Caller& caller,
                                                                 const WriteService::Kind& kind) {
  auto handle = writes_->NewHandle(ino, path, caller, kind);
  if (!handle.ok()) return handle.status();
  if (!(*handle)->may_write) return handle;
  Status owned = ClaimPath(*handle);
  if (!owned.ok()) return owned;
  return handle;
}

WriteService::Kind ObjectFilesystem::ChangeInPlace(const std::string& path,
                                                   const meta::NodeAttr& attr, bool append) const {
  WriteService::Kind kind;
  kind.replaces = false;
  kind.keep_posix = attr.posix;
  if (append && attr.appendable && writes_->appends() && options_.writes.allow_overwrite) {
    // A log opened again with "a": appended to where it ends, no copy.
    kind.append = true;
    kind.append_start = AppendStart{attr.size, attr.crc64};
    return kind;
  }
  if (attr.size == 0) return kind;  // nothing to keep: written from its start, streamed
  if (!writes_->staging() || !options_.writes.allow_overwrite) {
    // Nowhere to stage a copy, or the mount does not overwrite: opened as it is, refusing
    // writes, and left unchanged.
    kind.may_write = false;
    return kind;
  }
  ObjectInfo existing;
  existing.key = meta::FileKey(options_.prefix, path);
  existing.size = attr.size;
  existing.etag = attr.etag;
  existing.mtime_sec = attr.mtime_sec;
  existing.crc64 = attr.crc64;
  kind.existing = std::move(existing);
  return kind;
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
  if (auto owner = writes_->OwnerOf(path)) {
    return done(WriteService::Busy(*owner, "creating '" + path + "'"));
  }
  const bool truncate = (flags & O_TRUNC) != 0;
  const bool exclusive = (flags & O_EXCL) != 0;
  const bool append = (flags & O_APPEND) != 0;
  auto decide = [self = shared_from_this(), path, caller, truncate, exclusive, append,
                 done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) mutable {
    if (!r.ok()) return done(r.status());
    const bool exists = r->has_value();
    if (exists && (*r)->is_dir()) {
      return done(Status(ErrorCode::kIsDirectory, "'" + path + "' is a directory"));
    }
    if (exists && exclusive)
      return done(Status(ErrorCode::kAlreadyExists, "'" + path + "' exists"));
    if (exists && !truncate) {
      // touch, or open("a") of a name this mount did not know: the object is changed in place
      // (or stays as it is).
      return self->OpenExisting(path, **r, append, caller, std::move(done));
    }
    if (exists && !self->options_.writes.allow_overwrite) return done(NoOverwrite(path));
    WriteService::Kind kind;
    kind.replaces = true;
    kind.created = !exists;
    // Asked of the server and absent: it must still be absent at the completion.
    kind.must_be_new = !truncate || exclusive;
    // A new log (open(path, "a")): an appendable object. A replacement streams as any file.
    kind.append = append && !exists;
    if (exists) kind.keep_posix = (*r)->posix;
    self->StartWriter(path, caller, kind, std::move(done));
  };
  // O_TRUNC replaces whatever is there (the cache only has to tell a directory); anything else
  // must not replace an object, so the server is asked whether there is one.
  if (truncate && !exclusive) return ResolveWithPosix(path, std::move(decide));
  ResolveWithPosix(path, std::move(decide), /*from_server=*/true);
}

void ObjectFilesystem::StartWriter(const std::string& path, const Caller& caller,
                                   const WriteService::Kind& kind, Callback<CreateReply> done) {
  InodeId ino = inodes_.Ensure(path, false, 1);
  auto handle = NewWriter(ino, path, caller, kind);
  if (handle.status().code() == ErrorCode::kPreconditionFailed) {
    // The kernel has readers of the old object open on this inode: the new file gets an inode
    // of its own, and the readers keep theirs (and its page cache) to the end.
    inodes_.Detach(ino);
    inodes_.Forget(ino, 1);
    ino = inodes_.Ensure(path, false, 1);
    handle = NewWriter(ino, path, caller, kind);
  }
  if (!handle.ok()) {
    inodes_.Forget(ino, 1);
    return done(handle.status().code() == ErrorCode::kPreconditionFailed
                    ? Status(ErrorCode::kBusy, handle.status().message())
                    : handle.status());
  }
  if (kind.created) {
    // Listings of this mount show the new name at once; its size follows the writes.
    meta::NodeAttr attr;
    attr.mtime_sec = UnixSecondsNow();
    attr.appendable = (*handle)->writer() && (*handle)->writer()->appends();
    listings_->cache().RecordChange(path, attr);
  }
  CreateReply reply;
  reply.entry.attr = WritingAttributes(**handle);
  reply.entry.attr.ino = ino;
  reply.entry.entry_timeout = listings_->cache().ttl().KernelTimeout();
  reply.entry.attr_timeout = 0;
  reply.fh = writes_->Register(std::move(*handle));
  done(reply);
}

void ObjectFilesystem::OpenExisting(const std::string& path, const meta::NodeAttr& attr,
                                    bool append, const Caller& caller, Callback<CreateReply> done) {
  if (attr.size == 0 && !options_.writes.allow_overwrite) return done(NoOverwrite(path));
  const WriteService::Kind kind = ChangeInPlace(path, attr, append);
  if (kind.may_write) return StartWriter(path, caller, kind, std::move(done));
  const InodeId ino = inodes_.Ensure(path, false, 1);
  auto handle = writes_->NewHandle(ino, path, caller, kind);
  if (!handle.ok()) {
    inodes_.Forget(ino, 1);
    return done(handle.status());
  }
  CreateReply reply;
  reply.entry = MakeEntry(ino, attr);
  reply.fh = writes_->Register(std::move(*handle));
  done(reply);
}

void ObjectFilesystem::OpenForWriting(InodeId ino, const meta::InodeTable::Node& node, int flags,
                                      const Caller& caller, Callback<OpenReply> done) {
  const std::string path = node.path;
  if (auto owner = writes_->OwnerOf(path)) {
    return done(WriteService::Busy(*owner, "opening '" + path + "'"));
  }
  const bool truncate = (flags & O_TRUNC) != 0;
  const bool append = (flags & O_APPEND) != 0;
  auto decide = [self = shared_from_this(), ino, path, truncate, append, caller,
                 done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) mutable {
    if (!r.ok()) return done(r.status());
    if (!r->has_value() || (*r)->is_dir()) {
      // As for a reader: the kernel looks the name up again, and an O_CREAT open then
      // creates it.
      return done(Status(ErrorCode::kPreconditionFailed,
                         "'" + path + "' is no longer a file: look it up again"));
    }
    if (!self->options_.writes.allow_overwrite && (truncate || (*r)->size == 0)) {
      return done(NoOverwrite(path));
    }
    WriteService::Kind kind;
    if (truncate) {
      kind.replaces = true;
      kind.keep_posix = (*r)->posix;
    } else {
      kind = self->ChangeInPlace(path, **r, append);
    }
    auto handle = self->NewWriter(ino, path, caller, kind);
    if (handle.status().code() == ErrorCode::kPreconditionFailed) {
      // Readers of the old object have this inode open. Its page cache and size are theirs
      // until they close it: the path gets a new inode, and ESTALE makes the kernel look the
      // path up again (the open is retried on the new inode, never seen by the caller).
      self->inodes_.Detach(ino);
      spdlog::debug("'{}' is open for reading: its writer gets an inode of its own", path);
      return done(Status(ErrorCode::kPreconditionFailed,
                         "'" + path + "' is open for reading here: look it up again"));
    }
    if (!handle.ok()) return done(handle.status());
    OpenReply reply;
    reply.keep_cache = false;
    reply.fh = self->writes_->Register(std::move(*handle));
    done(reply);
  };
  // O_TRUNC replaces the object whatever it is; without it the server tells what there is to
  // change (an object another client wrote since this mount listed it).
  if (truncate) return ResolveWithPosix(path, std::move(decide));
  ResolveWithPosix(path, std::move(decide), /*from_server=*/true);
}

void ObjectFilesystem::Write(InodeId /*ino*/, uint64_t fh, off_t offset, const char* data,
                             size_t size, Callback<size_t> done) {
  if (offset < 0) return done(Status(ErrorCode::kInvalidArgument, "negative offset"));
  writes_->Write(fh, static_cast<uint64_t>(offset), data, size, std::move(done));
}

void ObjectFilesystem::Fallocate(InodeId /*ino*/, uint64_t fh, int mode, off_t offset, off_t length,
                                 StatusCallback done) {
  if (offset < 0 || length <= 0) {
    return done(Status(ErrorCode::kInvalidArgument, "fallocate: bad offset or length"));
  }
  writes_->Fallocate(fh, mode, static_cast<uint64_t>(offset), static_cast<uint64_t>(length),
                     std::move(done));
}

void ObjectFilesystem::Flush(InodeId /*ino*/, uint64_t fh, const Caller& caller,
                             StatusCallback done) {
  if (!WriteService::Numbers(fh)) return done(Status::Ok());  // a read handle: nothing to do
  writes_->Flush(fh, caller, std::move(done));
}

void ObjectFilesystem::Fsync(InodeId /*ino*/, uint64_t fh, StatusCallback done) {
  if (!WriteService::Numbers(fh)) return done(Status::Ok());
  writes_->Fsync(fh, std::move(done));
}

void ObjectFilesystem::SetAttr(InodeId ino, uint64_t fh, const SetAttrRequest& request,
                               Callback<AttrReply> done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  // A chmod that meets the writer's handle in its release waits for it, then changes the
  // closed object.
  RetryWhileBusy<Result<AttrReply>>(
      io_, std::chrono::steady_clock::now() + kBusyGrace,
      [self = shared_from_this(), ino, fh, request](Callback<AttrReply> attempt) {
        self->SetAttrOnce(ino, fh, request, std::move(attempt));
      },
      std::move(done));
}

void ObjectFilesystem::SetAttrOnce(InodeId ino, uint64_t fh, const SetAttrRequest& request,
                                   Callback<AttrReply> done) {
  auto node = inodes_.Get(ino);
  if (!node) return done(NoSuchInode(ino));
  std::shared_ptr<WriteHandle> handle = WriteService::Numbers(fh) ? writes_->Find(fh) : nullptr;
  if (!handle && !node->detached) handle = writes_->OwnerOf(node->path);
  if (handle && !handle->may_write) handle = nullptr;  // opened as it is: the object's attrs
  meta::PosixAttrs change;
  if (request.mode) change.mode = (node->is_dir ? S_IFDIR : S_IFREG) | (*request.mode & 07777);
  change.uid = request.uid;
  change.gid = request.gid;
  change.mtime_sec = request.mtime_sec;
  const bool posix = options_.posix_metadata && change != meta::PosixAttrs{};
  if (posix && node->is_dir) {
    if (node->path.empty()) return GetAttr(ino, std::move(done));  // the mount root: no marker
    return writes_->StoreDirPosix(
        node->path, change,
        [self = shared_from_this(), ino, done = std::move(done)](Status s) mutable {
          if (!s.ok()) return done(s);
          self->GetAttr(ino, std::move(done));
        });
  }
  if (posix && handle && handle->releasing.load(std::memory_order_acquire)) {
    // Its last completion is under way: this waits for it, then changes the closed object.
    return done(Status(ErrorCode::kBusy, "setattr of '" + handle->path() + "' while it is released",
                       /*retryable=*/true));
  }
  auto reply = [self = shared_from_this(), ino, handle, done = std::move(done)](Status s) mutable {
    if (!s.ok()) return done(s);
    if (!handle) return self->GetAttr(ino, std::move(done));
    Attributes a = self->WritingAttributes(*handle);
    a.ino = ino;
    done(AttrReply{a, 0});
  };
  if (posix && handle) {
    // Stored with the object once it is complete (FinishWrite).
    std::lock_guard lock(handle->mu);
    handle->ChangePosixLocked(change);
  }
  if (!request.size) {
    if (posix && !handle) return writes_->StorePosix(node->path, change, std::move(reply));
    // Without --posix-metadata, mode, owner and times are not stored (every file shows the
    // mount's --file-mode and owner); accepting them lets cp -p, rsync -a and tar finish.
    return reply(Status::Ok());
  }
  if (handle) return writes_->Truncate(handle, *request.size, std::move(reply));
  TruncateClosed(ino, node->path, *request.size, std::move(reply));
}

void ObjectFilesystem::TruncateClosed(InodeId ino, const std::string& path, uint64_t size,
                                      StatusCallback done) {
  listings_->ResolveFromServer(path, [self = shared_from_this(), ino, path, size,
                                      done = std::move(done)](
                                         Result<std::optional<meta::NodeAttr>> r) mutable {
    if (!r.ok()) return done(r.status());
    if (!r->has_value() || (*r)->is_dir()) {
      return done(Status(ErrorCode::kNotFound, "'" + path + "' is no longer a file"));
    }
    const meta::NodeAttr attr = **r;
    if (attr.size == size) return done(Status::Ok());  // what copying tools do to a new file
    if (!self->options_.writes.allow_overwrite) {
      return done(Status(ErrorCode::kAccessDenied,
                         "truncating '" + path + "': the mount does not overwrite"));
    }
    // A truncation to 0 needs no copy: an empty object replaces it. Any other size changes
    // a staged copy, as a program that opened it and called ftruncate would.
    WriteService::Kind kind;
    if (size == 0) {
      kind.replaces = true;
    } else {
      kind = self->ChangeInPlace(path, attr, /*append=*/false);
      if (!kind.may_write) {
        return done(Status(ErrorCode::kNotSupported,
                           "truncating '" + path + "' to " + std::to_string(size) +
                               " bytes needs a staging directory (--staging-dir)"));
      }
    }
    auto handle = self->NewWriter(ino, path, Caller{}, kind);
    if (!handle.ok()) {
      return done(handle.status().code() == ErrorCode::kPreconditionFailed
                      ? Status(ErrorCode::kBusy, handle.status().message())
                      : handle.status());
    }
    const uint64_t fh = self->writes_->Register(*handle);
    self->writes_->Truncate(*handle, size, [self, fh, done = std::move(done)](Status s) mutable {
      auto finish = [self, fh, done = std::move(done)](Status s) mutable {
        self->writes_->Release(fh);
        done(s);
      };
      if (!s.ok()) return finish(s);
      self->writes_->Fsync(fh, std::move(finish));
    });
  });
}

}  // namespace ossmount::fs
