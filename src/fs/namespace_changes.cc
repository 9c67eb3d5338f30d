// ObjectFilesystem's changes to names: mkdir, rmdir, unlink and rename
// (docs/SEMANTICS.md, "Writing"). Object stores have no directories and no rename: a
// directory is a marker object ("dir/") or the keys under it, and a rename is a server-side
// copy then a delete of the source, which is never deleted before its copy is complete.
#include <linux/fs.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "fs/object_filesystem.h"
#include "meta/key_mapping.h"
#include "upload/object_copy.h"

namespace ossmount::fs {
namespace {

Status NoDelete(const std::string& what) {
  return Status(ErrorCode::kAccessDenied, what + ": the mount does not delete (--no-delete)");
}

// Deletes `keys` in batches of 1,000; `done` gets the first error.
void DeleteKeys(std::shared_ptr<ObjectClient> client, std::vector<std::string> keys,
                StatusCallback done) {
  if (keys.empty()) return done(Status::Ok());
  const size_t n = std::min<size_t>(keys.size(), 1000);
  std::vector<std::string> batch(keys.end() - static_cast<ptrdiff_t>(n), keys.end());
  keys.resize(keys.size() - n);
  client->DeleteMultiple(
      std::move(batch), [client, keys = std::move(keys), done = std::move(done)](Status s) mutable {
        if (!s.ok()) return done(s);
        DeleteKeys(std::move(client), std::move(keys), std::move(done));
      });
}

// Every object under `prefix` (all pages), at most `limit` + 1 of them.
void ListAll(std::shared_ptr<ObjectClient> client, std::string prefix, size_t limit,
             std::function<void(Result<std::vector<ObjectInfo>>)> done,
             std::shared_ptr<std::vector<ObjectInfo>> so_far = nullptr, std::string token = "") {
  if (!so_far) so_far = std::make_shared<std::vector<ObjectInfo>>();
  ListRequest request;
  request.prefix = prefix;
  request.continuation_token = token;
  client->List(request, [client, prefix, limit, done = std::move(done), so_far,
                         token](Result<ListPage> page) mutable {
    if (!page.ok()) return done(page.status());
    for (auto& o : page->objects) so_far->push_back(std::move(o));
    if (so_far->size() > limit || !page->truncated || page->next_continuation_token.empty() ||
        page->next_continuation_token == token) {
      return done(std::move(*so_far));
    }
    ListAll(std::move(client), std::move(prefix), limit, std::move(done), so_far,
            page->next_continuation_token);
  });
}

}  // namespace

void ObjectFilesystem::MakeDir(InodeId parent, std::string name, Callback<Entry> done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  auto path = ChildPath(parent, name);
  if (!path.ok()) return done(path.status());
  listings_->Resolve(*path, [self = shared_from_this(), path = *path,
                             done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (r->has_value()) return done(Status(ErrorCode::kAlreadyExists, "'" + path + "' exists"));
    // A marker object, so that the directory is there while empty and after a remount.
    self->data_.client()->Put(meta::DirPrefix(self->options_.prefix, path),
                              std::make_shared<const std::string>(), WriteOptions{},
                              [self, path, done = std::move(done)](Result<PutResult> put) {
                                if (!put.ok()) return done(put.status());
                                self->listings_->cache().RecordChange(path, meta::DirAttr());
                                const InodeId ino = self->inodes_.Ensure(path, true, 1);
                                done(self->MakeEntry(ino, meta::DirAttr()));
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
    {
      std::lock_guard lock(self->writers_mu_);
      for (const auto& [p, w] : self->writers_) {
        if (p.compare(0, path.size() + 1, path + "/") == 0 && w.lock()) {
          return done(Status(ErrorCode::kNotEmpty, "'" + path + "' holds a file being written"));
        }
      }
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
  if (WriterOf(*path)) {
    return done(Status(ErrorCode::kBusy, "'" + *path + "' is being written by this mount"));
  }
  listings_->Resolve(*path, [self = shared_from_this(), path = *path,
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
  if (WriterOf(*from) || WriterOf(*to)) {
    return done(Status(ErrorCode::kBusy, "'" + *from + "' or '" + *to +
                                             "' is being written by this mount; close it first"));
  }
  const bool no_replace = (flags & RENAME_NOREPLACE) != 0;
  listings_->Resolve(*from, [self = shared_from_this(), from = *from, to = *to, no_replace,
                             done = std::move(done)](Result<std::optional<meta::NodeAttr>> src) {
    if (!src.ok()) return done(src.status());
    if (!src->has_value()) return done(Status(ErrorCode::kNotFound, "no such file: " + from));
    const meta::NodeAttr source = **src;
    self->listings_->Resolve(to, [self, from, to, no_replace, source, done = std::move(done)](
                                     Result<std::optional<meta::NodeAttr>> dst) {
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
        if (target.is_dir()) {
          // Replacing a directory needs it empty, and that is a listing away; say so plainly.
          return done(Status(ErrorCode::kNotEmpty,
                             "'" + to + "' exists; remove it before renaming a directory onto it"));
        }
      }
      const bool forbid = no_replace || !self->options_.writes.allow_overwrite;
      if (source.is_dir()) return self->RenameDir(from, to, std::move(done));
      self->RenameFile(from, to, source, forbid, std::move(done));
    });
  });
}

void ObjectFilesystem::RenameFile(const std::string& from, const std::string& to,
                                  const meta::NodeAttr& attr, bool no_replace,
                                  StatusCallback done) {
  upload::CopySource source{meta::FileKey(options_.prefix, from), attr.etag, attr.size};
  WriteOptions wo;
  wo.forbid_overwrite = no_replace;
  upload::CopyObjectOnServer(
      data_.client(), upload_gate_, options_.writes.upload, std::move(source),
      meta::FileKey(options_.prefix, to), wo,
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

void ObjectFilesystem::RenameDir(const std::string& from, const std::string& to,
                                 StatusCallback done) {
  {
    std::lock_guard lock(writers_mu_);
    for (const auto& [p, w] : writers_) {
      if (p.compare(0, from.size() + 1, from + "/") == 0 && w.lock()) {
        return done(Status(ErrorCode::kBusy, "'" + from + "' holds a file being written"));
      }
    }
  }
  const std::string from_prefix = meta::DirPrefix(options_.prefix, from);
  const std::string to_prefix = meta::DirPrefix(options_.prefix, to);
  const size_t limit = options_.writes.rename_dir_limit;
  ListAll(data_.client(), from_prefix, limit,
          [self = shared_from_this(), from, to, from_prefix, to_prefix, limit,
           done = std::move(done)](Result<std::vector<ObjectInfo>> objects) {
            if (!objects.ok()) return done(objects.status());
            if (objects->size() > limit) {
              spdlog::warn(
                  "rename of directory '{}' refused: it holds more than {} objects "
                  "(--rename-dir-limit); copy it instead",
                  from, limit);
              return done(Status(ErrorCode::kCrossDevice,
                                 "'" + from + "' holds more than " + std::to_string(limit) +
                                     " objects (--rename-dir-limit): copy it instead"));
            }
            struct Copies {
              std::mutex mu;
              size_t pending = 0;
              Status first_error;
              std::vector<std::string> made;
              std::vector<std::string> sources;
            };
            auto copies = std::make_shared<Copies>();
            copies->pending = objects->size();
            auto finish = [self, from, to, copies, done]() {
              if (!copies->first_error.ok()) {
                // Sources are untouched; the copies made so far go, so nothing is half-moved.
                DeleteKeys(self->data_.client(), copies->made, [](Status) {});
                return done(copies->first_error);
              }
              DeleteKeys(
                  self->data_.client(), copies->sources, [self, from, to, done](Status deleted) {
                    meta::MetadataCache& cache = self->listings_->cache();
                    cache.ForgetTree(from);
                    cache.ForgetTree(to);
                    if (!deleted.ok()) {
                      spdlog::error(
                          "rename '{}' -> '{}': every object was copied but not every source "
                          "could be deleted ({}); both trees exist",
                          from, to, deleted.ToString());
                      cache.RecordChange(to, meta::DirAttr());
                      return done(deleted);
                    }
                    cache.RecordChange(from, std::nullopt);
                    cache.RecordChange(to, meta::DirAttr());
                    self->inodes_.Move(from, to);
                    done(Status::Ok());
                  });
            };
            if (objects->empty()) {
              // A directory no object stands for (only this mount's cache knew it): nothing to
              // copy.
              return finish();
            }
            for (const ObjectInfo& o : *objects) {
              const std::string dest = to_prefix + o.key.substr(from_prefix.size());
              upload::CopySource source{o.key, o.etag, o.size};
              upload::CopyObjectOnServer(self->data_.client(), self->upload_gate_,
                                         self->options_.writes.upload, std::move(source), dest,
                                         WriteOptions{},
                                         [copies, finish, dest, key = o.key](Result<PutResult> r) {
                                           bool last = false;
                                           {
                                             std::lock_guard lock(copies->mu);
                                             if (r.ok()) {
                                               copies->made.push_back(dest);
                                               copies->sources.push_back(key);
                                             } else if (copies->first_error.ok()) {
                                               copies->first_error = r.status();
                                             }
                                             last = --copies->pending == 0;
                                           }
                                           if (last) finish();
                                         });
            }
          });
}

}  // namespace ossmount::fs
