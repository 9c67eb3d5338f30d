// ObjectFilesystem's changes to names: mkdir, rmdir, unlink and rename
// (docs/SEMANTICS.md, "Writing"). Object stores have no directories and no rename: a
// directory is a marker object ("dir/") or the keys under it, and a rename is a server-side
// copy then a delete of the source, which is never deleted before its copy is complete. What
// a rename would replace is asked of the server, not the cache (another client may have
// written it since this mount listed it); a directory's copies never replace an object
// (fs/directory_rename.h).
#include <linux/fs.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>

#include "common/time_util.h"
#include "fs/busy_retry.h"
#include "fs/directory_rename.h"
#include "fs/object_filesystem.h"
#include "meta/key_mapping.h"
#include "upload/object_copy.h"

namespace ossmount::fs {
namespace {

Status NoDelete(const std::string& what) {
  return Status(ErrorCode::kAccessDenied, what + ": the mount does not delete (--no-delete)");
}

}  // namespace

void ObjectFilesystem::MakeDir(InodeId parent, std::string name, uint32_t mode,
                               const Caller& caller, Callback<Entry> done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  auto path = ChildPath(parent, name);
  if (!path.ok()) return done(path.status());
  meta::NodeAttr attr = meta::DirAttr();
  WriteOptions wo;
  if (options_.posix_metadata) {
    // The mode and owner on the marker, as ossfs and s3fs keep a directory's.
    meta::PosixAttrs posix;
    posix.mode = S_IFDIR | (mode & 07777);
    posix.uid = caller.uid;
    posix.gid = caller.gid;
    posix.mtime_sec = UnixSecondsNow();
    wo.user_meta = meta::WithPosix({}, posix);
    attr.posix = posix;
  }
  listings_->Resolve(*path, [self = shared_from_this(), path = *path, attr, wo,
                             done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (r->has_value()) return done(Status(ErrorCode::kAlreadyExists, "'" + path + "' exists"));
    // A marker object, so that the directory is there while empty and after a remount.
    self->data_.client()->Put(meta::DirPrefix(self->options_.prefix, path), SharedBytes(), wo,
                              [self, path, attr, done = std::move(done)](Result<PutResult> put) {
                                if (!put.ok()) return done(put.status());
                                self->listings_->cache().RecordChange(path, attr);
                                const InodeId ino = self->inodes_.Ensure(path, true, 1);
                                done(self->MakeEntry(ino, attr));
                              });
  });
}

void ObjectFilesystem::RemoveDir(InodeId parent, std::string name, StatusCallback done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  auto path = ChildPath(parent, name);
  if (!path.ok()) return done(path.status());
  if (!options_.writes.allow_delete) return done(NoDelete("rmdir '" + *path + "'"));
  listings_->Resolve(*path, [self = shared_from_this(), path = *path,
                             done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value()) return done(Status(ErrorCode::kNotFound, "no such directory: " + path));
    if (!(*r)->is_dir()) return done(Status(ErrorCode::kNotDirectory, "'" + path + "' is a file"));
    if (self->writes_->OwnsUnder(path)) {
      return done(Status(ErrorCode::kNotEmpty, "'" + path + "' holds a file being written"));
    }
    const std::string marker = meta::DirPrefix(self->options_.prefix, path);
    ListRequest request;
    request.prefix = marker;
    request.max_keys = 2;
    // Asks the server, not the cache: another mount may have written into it.
    self->data_.client()->List(
        request, [self, path, marker, done = std::move(done)](Result<ListPage> page) {
          if (!page.ok()) return done(page.status());
          for (const ObjectInfo& o : page->objects) {
            if (o.key != marker) {
              return done(Status(ErrorCode::kNotEmpty, "'" + path + "' is not empty"));
            }
          }
          self->data_.client()->Delete(marker, [self, path, done = std::move(done)](Status s) {
            if (!s.ok()) return done(s);
            self->listings_->cache().ForgetTree(path);
            self->listings_->cache().RecordChange(path, std::nullopt);
            done(Status::Ok());
          });
        });
  });
}

void ObjectFilesystem::Unlink(InodeId parent, std::string name, StatusCallback done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  auto path = ChildPath(parent, name);
  if (!path.ok()) return done(path.status());
  if (!options_.writes.allow_delete) return done(NoDelete("unlink '" + *path + "'"));
  RetryWhileBusy<Status>(
      io_, std::chrono::steady_clock::now() + kBusyGrace,
      [self = shared_from_this(), path = *path](StatusCallback attempt) {
        self->UnlinkOnce(path, std::move(attempt));
      },
      std::move(done));
}

void ObjectFilesystem::UnlinkOnce(const std::string& path, StatusCallback done) {
  if (auto owner = writes_->OwnerOf(path)) return UnlinkOpenFile(owner, std::move(done));
  listings_->Resolve(path, [self = shared_from_this(), path,
                            done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value()) return done(Status(ErrorCode::kNotFound, "no such file: " + path));
    if ((*r)->is_dir())
      return done(Status(ErrorCode::kIsDirectory, "'" + path + "' is a directory"));
    self->data_.client()->Delete(meta::FileKey(self->options_.prefix, path),
                                 [self, path, done = std::move(done)](Status s) {
                                   if (!s.ok()) return done(s);
                                   self->listings_->cache().RecordChange(path, std::nullopt);
                                   done(Status::Ok());
                                 });
  });
}

void ObjectFilesystem::Rename(InodeId parent, std::string name, InodeId new_parent,
                              std::string new_name, unsigned flags, StatusCallback done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  if (flags & RENAME_EXCHANGE) {
    return done(Status(ErrorCode::kNotSupported, "RENAME_EXCHANGE is not supported"));
  }
  auto from = ChildPath(parent, name);
  if (!from.ok()) return done(from.status());
  auto to = ChildPath(new_parent, new_name);
  if (!to.ok()) return done(to.status());
  if (!options_.writes.allow_delete) {
    return done(NoDelete("rename '" + *from + "' (a rename deletes the source)"));
  }
  if (*from == *to) return done(Status::Ok());
  if (to->compare(0, from->size() + 1, *from + "/") == 0) {
    return done(Status(ErrorCode::kInvalidArgument, "cannot move '" + *from + "' into itself"));
  }
  RetryWhileBusy<Status>(
      io_, std::chrono::steady_clock::now() + kBusyGrace,
      [self = shared_from_this(), from = *from, to = *to, flags](StatusCallback attempt) {
        self->RenameOnce(from, to, flags, std::move(attempt));
      },
      std::move(done));
}

void ObjectFilesystem::RenameOnce(const std::string& from, const std::string& to, unsigned flags,
                                  StatusCallback done) {
  if (auto owner = writes_->OwnerOf(to)) {
    return done(WriteService::Busy(*owner, "rename '" + from + "' -> '" + to + "'"));
  }
  const bool no_replace = (flags & RENAME_NOREPLACE) != 0;
  if (auto owner = writes_->OwnerOf(from)) {
    return RenameOpenFile(owner, from, to, no_replace, std::move(done));
  }
  listings_->Resolve(from, [self = shared_from_this(), from, to, no_replace,
                            done = std::move(done)](Result<std::optional<meta::NodeAttr>> src) {
    if (!src.ok()) return done(src.status());
    if (!src->has_value()) return done(Status(ErrorCode::kNotFound, "no such file: " + from));
    const meta::NodeAttr source = **src;
    // The server, not the cache, says what the rename would replace.
    self->listings_->ResolveFromServer(
        to, [self, from, to, no_replace, source,
             done = std::move(done)](Result<std::optional<meta::NodeAttr>> dst) {
          if (!dst.ok()) return done(dst.status());
          if (dst->has_value()) {
            const meta::NodeAttr& target = **dst;
            if (no_replace) return done(Status(ErrorCode::kAlreadyExists, "'" + to + "' exists"));
            if (source.is_dir() && !target.is_dir()) {
              return done(Status(ErrorCode::kNotDirectory, "'" + to + "' is a file"));
            }
            if (!source.is_dir() && target.is_dir()) {
              return done(Status(ErrorCode::kIsDirectory, "'" + to + "' is a directory"));
            }
            if (!self->options_.writes.allow_overwrite) {
              return done(
                  Status(ErrorCode::kAccessDenied,
                         "'" + to + "' exists and the mount does not overwrite (--no-overwrite)"));
            }
            if (target.is_dir()) return self->RenameDirOntoDir(from, to, std::move(done));
          }
          if (source.is_dir()) {
            if (self->writes_->OwnsUnder(from)) {
              return done(Status(ErrorCode::kBusy, "'" + from + "' holds a file being written"));
            }
            return self->RenameDir(from, to, /*target_marker=*/false, std::move(done));
          }
          const bool forbid = no_replace || !self->options_.writes.allow_overwrite;
          self->RenameFile(from, to, source, forbid, std::move(done));
        });
  });
}

void ObjectFilesystem::RenameDirOntoDir(const std::string& from, const std::string& to,
                                        StatusCallback done) {
  if (writes_->OwnsUnder(from)) {
    return done(Status(ErrorCode::kBusy, "'" + from + "' holds a file being written"));
  }
  if (writes_->OwnsUnder(to)) {
    return done(Status(ErrorCode::kNotEmpty, "'" + to + "' holds a file being written"));
  }
  // POSIX replaces an empty directory only. Whether it is empty is the server's to say.
  const std::string marker = meta::DirPrefix(options_.prefix, to);
  ListRequest request;
  request.prefix = marker;
  request.max_keys = 2;
  data_.client()->List(request, [self = shared_from_this(), from, to, marker,
                                 done = std::move(done)](Result<ListPage> page) {
    if (!page.ok()) return done(page.status());
    bool has_marker = false;
    for (const ObjectInfo& o : page->objects) {
      if (o.key != marker) {
        return done(
            Status(ErrorCode::kNotEmpty, "'" + to +
                                             "' is not empty: a directory is renamed onto an empty "
                                             "one only"));
      }
      has_marker = true;
    }
    self->RenameDir(from, to, has_marker, std::move(done));
  });
}

void ObjectFilesystem::RenameFile(const std::string& from, const std::string& to,
                                  const meta::NodeAttr& attr, bool no_replace,
                                  StatusCallback done) {
  upload::CopySource source{meta::FileKey(options_.prefix, from), attr.etag, attr.size};
  WriteOptions wo;
  wo.forbid_overwrite = no_replace;
  upload::CopyObjectOnServer(
      data_.client(), writes_->gate(), writes_->journal(), options_.writes.upload,
      std::move(source), meta::FileKey(options_.prefix, to), wo,
      [self = shared_from_this(), from, to, attr, done = std::move(done)](Result<PutResult> copy) {
        if (!copy.ok()) return done(copy.status());
        meta::NodeAttr moved = attr;
        if (!copy->etag.empty()) moved.etag = copy->etag;
        self->listings_->cache().RecordChange(to, moved);
        // The source goes only now that its copy is complete.
        self->data_.client()->Delete(
            meta::FileKey(self->options_.prefix, from),
            [self, from, to, done = std::move(done)](Status deleted) {
              if (!deleted.ok()) {
                spdlog::error(
                    "rename '{}' -> '{}': the copy is complete but the source could "
                    "not be deleted ({}); both exist",
                    from, to, deleted.ToString());
                return done(deleted);
              }
              self->listings_->cache().RecordChange(from, std::nullopt);
              self->inodes_.Move(from, to);
              done(Status::Ok());
            });
      });
}

void ObjectFilesystem::RenameDir(const std::string& from, const std::string& to, bool target_marker,
                                 StatusCallback done) {
  DirectoryMove move;
  move.from_prefix = meta::DirPrefix(options_.prefix, from);
  move.to_prefix = meta::DirPrefix(options_.prefix, to);
  move.target_marker = target_marker;
  move.limit = options_.writes.rename_dir_limit;
  move.what = "rename '" + from + "' -> '" + to + "'";
  MoveDirectoryOnServer(
      data_.client(), writes_->gate(), writes_->journal(), options_.writes.upload, std::move(move),
      [self = shared_from_this(), from, to, done = std::move(done)](Status moved) {
        meta::MetadataCache& cache = self->listings_->cache();
        if (moved.code() == ErrorCode::kCrossDevice) return done(moved);
        // Whatever happened, what this mount cached under both is out of date.
        cache.ForgetTree(from);
        cache.ForgetTree(to);
        if (!moved.ok()) {
          // The sources are untouched and the copies removed (or logged).
          cache.Invalidate(to);
          if (moved.code() != ErrorCode::kAlreadyExists) return done(moved);
          return done(Status(ErrorCode::kNotEmpty,
                             "rename '" + from + "' -> '" + to +
                                 "': another client wrote into the target meanwhile (" +
                                 moved.message() + ")"));
        }
        cache.RecordChange(from, std::nullopt);
        cache.RecordChange(to, meta::DirAttr());
        self->inodes_.Move(from, to);
        done(Status::Ok());
      });
}

void ObjectFilesystem::UnlinkOpenFile(const std::shared_ptr<WriteHandle>& owner,
                                      StatusCallback done) {
  const std::string path = owner->path();
  // Closed by its writer, its release on its way: the unlink waits for it (RetryWhileBusy),
  // then removes the object it completed.
  if (owner->closing.load() || owner->releasing.load()) {
    return done(WriteService::Busy(*owner, "unlink '" + path + "'"));
  }
  // Whether the bucket holds anything of it: the object it was opened on, or a version a
  // close or fsync completed.
  const bool on_server = !owner->created || owner->recorded_completion.load() > 0;
  writes_->Discard(owner);
  // The descriptor keeps its inode; the name gets a fresh one when it is made again.
  inodes_.Detach(owner->ino);
  if (!on_server) {
    listings_->cache().RecordChange(path, std::nullopt);
    return done(Status::Ok());
  }
  data_.client()->Delete(meta::FileKey(options_.prefix, path),
                         [self = shared_from_this(), path, done = std::move(done)](Status s) {
                           if (!s.ok()) return done(s);
                           self->listings_->cache().RecordChange(path, std::nullopt);
                           done(Status::Ok());
                         });
}

void ObjectFilesystem::RenameOpenFile(const std::shared_ptr<WriteHandle>& owner,
                                      const std::string& from, const std::string& to,
                                      bool no_replace, StatusCallback done) {
  // Closed by its writer (torch.save, then os.replace): the rename waits for the release,
  // then moves the object it completed.
  if (owner->closing.load() || owner->releasing.load()) {
    return done(WriteService::Busy(*owner, "rename '" + from + "' -> '" + to + "'"));
  }
  const bool on_server = !owner->created || owner->recorded_completion.load() > 0;
  // The server, not the cache, says what the rename would replace.
  listings_->ResolveFromServer(
      to, [self = shared_from_this(), owner, from, to, no_replace, on_server,
           done = std::move(done)](Result<std::optional<meta::NodeAttr>> dst) mutable {
        if (!dst.ok()) return done(dst.status());
        if (dst->has_value()) {
          if (no_replace) return done(Status(ErrorCode::kAlreadyExists, "'" + to + "' exists"));
          if ((*dst)->is_dir()) {
            return done(Status(ErrorCode::kIsDirectory, "'" + to + "' is a directory"));
          }
          if (!self->options_.writes.allow_overwrite) {
            return done(
                Status(ErrorCode::kAccessDenied,
                       "'" + to + "' exists and the mount does not overwrite (--no-overwrite)"));
          }
        }
        const bool forbid = no_replace || !self->options_.writes.allow_overwrite;
        // What the bucket holds of the file moves with it; a file it holds nothing of yet moves
        // in this mount only, and its next completion makes it at `to`.
        auto move_object = [self, from, to, forbid, on_server](StatusCallback moved) {
          if (!on_server) {
            self->listings_->cache().RecordChange(from, std::nullopt);
            self->inodes_.Move(from, to);
            return moved(Status::Ok());
          }
          self->listings_->Resolve(from, [self, from, to, forbid, moved = std::move(moved)](
                                             Result<std::optional<meta::NodeAttr>> src) mutable {
            if (!src.ok()) return moved(src.status());
            if (!src->has_value() || (*src)->is_dir()) {
              return moved(Status(ErrorCode::kNotFound, "no such file: " + from));
            }
            self->RenameFile(from, to, **src, forbid, std::move(moved));
          });
        };
        // At `to`, the first completion replaces what the rename replaced, and nothing that
        // another client made there meanwhile.
        const bool forbid_at_target = forbid || !dst->has_value();
        self->writes_->Move(owner, to, forbid_at_target, std::move(move_object), std::move(done));
      });
}

}  // namespace ossmount::fs
