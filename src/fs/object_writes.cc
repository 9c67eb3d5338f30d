// ObjectFilesystem's file writes: create, open for writing, write, flush, fsync, setattr
// and the end of a write handle (docs/SEMANTICS.md, "Writing").
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <chrono>

#include "common/thread_group.h"
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
  return meta::JoinPath(node->path, name);
}

std::shared_ptr<WriteHandle> ObjectFilesystem::WriterOf(const std::string& path) const {
  std::lock_guard lock(writers_mu_);
  auto it = writers_.find(path);
  if (it == writers_.end()) return nullptr;
  auto handle = it->second.lock();
  if (!handle || handle->released.load(std::memory_order_acquire) || !handle->upload ||
      !handle->upload->active()) {
    return nullptr;
  }
  return handle;
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
    attr.size = handle->upload ? handle->upload->size() : 0;
    attr.mtime_sec = NowSeconds();
    listing = std::make_shared<const meta::DirSnapshot>(listing->Patched(name, attr));
    listings_->cache().RecordChange(handle->path, attr);
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
  a.size = handle.upload ? handle.upload->size() : 0;
  a.mtime_sec = NowSeconds();
  return a;
}

std::shared_ptr<WriteHandle> ObjectFilesystem::NewWriteHandle(InodeId ino, const std::string& path,
                                                              const Caller& caller, bool may_write,
                                                              bool replaces, bool created,
                                                              Status* refused) {
  auto handle = std::make_shared<WriteHandle>();
  handle->ino = ino;
  handle->path = path;
  handle->key = meta::FileKey(options_.prefix, path);
  handle->opener = caller;
  handle->opener.pid = static_cast<uint32_t>(ProcessOfThread(static_cast<int>(caller.pid)));
  handle->may_write = may_write;
  handle->replaces = replaces;
  handle->created = created;
  if (may_write) {
    WriteOptions wo;
    // Without overwrite, the object must still be absent when it is completed: a name
    // another mount took meanwhile fails the close with EEXIST instead of being replaced.
    wo.forbid_overwrite = !options_.writes.allow_overwrite;
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
  // Registered only once complete: other threads read it through WriterOf.
  std::lock_guard lock(writers_mu_);
  auto& slot = writers_[path];
  auto current = slot.lock();
  if (current && !current->released.load(std::memory_order_acquire) && current->upload &&
      current->upload->active()) {
    *refused = Status(ErrorCode::kBusy, "'" + path +
                                            "' is already open for writing on this mount; "
                                            "one writer at a time");
    return nullptr;
  }
  slot = handle;
  return handle;
}

void ObjectFilesystem::Create(InodeId parent, std::string name, int flags, const Caller& caller,
                              Callback<CreateReply> done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  auto path = ChildPath(parent, name);
  if (!path.ok()) return done(path.status());
  listings_->Resolve(*path, [self = shared_from_this(), path = *path, flags, caller,
                             done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    const bool exists = r->has_value();
    if (exists && (*r)->is_dir()) {
      return done(Status(ErrorCode::kIsDirectory, "'" + path + "' is a directory"));
    }
    if (exists && (flags & O_EXCL)) {
      return done(Status(ErrorCode::kAlreadyExists, "'" + path + "' exists"));
    }
    if (exists && !self->options_.writes.allow_overwrite) {
      return done(
          Status(ErrorCode::kAccessDenied,
                 "'" + path + "' exists and the mount does not overwrite (--no-overwrite)"));
    }
    const InodeId ino = self->inodes_.Ensure(path, false, 1);
    Status refused;
    auto handle = self->NewWriteHandle(ino, path, caller, /*may_write=*/true, /*replaces=*/true,
                                       /*created=*/!exists, &refused);
    if (!handle) {
      self->inodes_.Forget(ino, 1);
      return done(refused);
    }
    if (!exists) {
      // Listings of this mount show the new name at once; its size follows the writes.
      meta::NodeAttr attr;
      attr.mtime_sec = NowSeconds();
      self->listings_->cache().RecordChange(path, attr);
    }
    CreateReply reply;
    reply.entry.attr = self->WritingAttributes(*handle);
    reply.entry.attr.ino = ino;
    reply.entry.entry_timeout = self->listings_->cache().ttl().KernelTimeout();
    reply.entry.attr_timeout = 0;
    reply.fh = self->next_fh_.fetch_add(1, std::memory_order_relaxed);
    self->write_handles_.Insert(reply.fh, std::move(handle));
    done(reply);
  });
}

void ObjectFilesystem::OpenForWriting(InodeId ino, const meta::InodeTable::Node& node, int flags,
                                      const Caller& caller, Callback<OpenReply> done) {
  listings_->Resolve(node.path, [self = shared_from_this(), ino, path = node.path, flags, caller,
                                 done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value() || (*r)->is_dir()) {
      return done(Status(ErrorCode::kNotFound, "'" + path + "' is no longer a file"));
    }
    const bool truncate = (flags & O_TRUNC) != 0;
    const bool empty = (*r)->size == 0;
    if ((truncate || empty) && !self->options_.writes.allow_overwrite) {
      return done(
          Status(ErrorCode::kAccessDenied,
                 "'" + path + "' exists and the mount does not overwrite (--no-overwrite)"));
    }
    // Without O_TRUNC an object can only be written if it is empty: ossmount writes whole
    // objects from their first byte and cannot change one in place or append to it.
    const bool may_write = truncate || empty;
    Status refused;
    auto handle = self->NewWriteHandle(ino, path, caller, may_write, /*replaces=*/truncate,
                                       /*created=*/false, &refused);
    if (!handle) return done(refused);
    OpenReply reply;
    reply.keep_cache = false;
    reply.fh = self->next_fh_.fetch_add(1, std::memory_order_relaxed);
    self->write_handles_.Insert(reply.fh, std::move(handle));
    done(reply);
  });
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
  handle->upload->WhenWritable([size, done = std::move(done)] { done(size); });
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
  // A close before the first write of an O_TRUNC rewrite does not replace the old object
  // with an empty one either (a shell's `> file` closes the original descriptor after dup2,
  // before writing): that waits for the release. A new file is completed, empty, at once, so
  // that a rename right after `touch` finds it complete; bytes written after a completion
  // continue the file (ObjectUpload::Append).
  if (!handle->created && handle->upload && handle->upload->size() == 0 &&
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
  if (!handle->replaces && handle->upload->size() == 0 && handle->upload->error().ok()) {
    // An empty object opened without O_TRUNC and not written (yet): it stays as it was.
    return done(Status::Ok());
  }
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
  FinishWrite(handle, [self = shared_from_this(), handle](Status) {
    handle->released.store(true, std::memory_order_release);
    std::lock_guard lock(self->writers_mu_);
    auto it = self->writers_.find(handle->path);
    if (it != self->writers_.end() && it->second.lock() == handle) self->writers_.erase(it);
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
          : handle->created  ? "; nothing was written under its key"
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
  std::shared_ptr<WriteHandle> handle = fh ? write_handles_.Find(fh) : WriterOf(node->path);
  if (request.size && !(handle && handle->upload)) {
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
    if (*request.size != handle->upload->size()) {
      return done(Status(ErrorCode::kNotSupported,
                         "truncating '" + node->path + "' to " + std::to_string(*request.size) +
                             " bytes: only an O_TRUNC open can rewrite an object"));
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
