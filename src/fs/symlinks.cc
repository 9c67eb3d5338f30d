// Symbolic links (ObjectFilesystem::MakeSymlink, ReadLink): each is one object the client
// stores as a link (ObjectClient::PutSymlink, GetSymlink). Listings say which objects are
// links, so telling one from a file costs no request; reading its target costs one, which the
// kernel then keeps (FUSE_CAP_CACHE_SYMLINKS).
#include "common/time_util.h"
#include "fs/object_filesystem.h"
#include "meta/key_mapping.h"

namespace ossmount::fs {

void ObjectFilesystem::MakeSymlink(InodeId parent, std::string name, std::string target,
                                   Callback<Entry> done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  auto path = ChildPath(parent, name);
  if (!path.ok()) return done(path.status());
  // The target is stored in a header (OSS) or as the object's bytes (S3): a key's length.
  if (target.empty() || target.size() > 1023) {
    return done(Status(target.empty() ? ErrorCode::kNotFound : ErrorCode::kNameTooLong,
                       "symlink '" + *path + "': a target of " + std::to_string(target.size()) +
                           " bytes (1 to 1,023 are stored)"));
  }
  if (!data_.client()->ListsLinks() && !options_.posix_metadata) {
    // A link stored as s3fs does would show as a file at the next listing: only a HEAD of
    // each file (--posix-metadata) tells.
    return done(Status(ErrorCode::kNotPermitted,
                       "symlink '" + *path +
                           "': S3 listings cannot tell a link from a file, so links on S3 need "
                           "--posix-metadata"));
  }
  if (writes_->OwnerOf(*path)) {
    return done(Status(ErrorCode::kAlreadyExists, "'" + *path + "' exists (being written)"));
  }
  listings_->Resolve(
      *path, [self = shared_from_this(), path = *path, target = std::move(target),
              done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) mutable {
        if (!r.ok()) return done(r.status());
        if (r->has_value()) return done(Status(ErrorCode::kAlreadyExists, "'" + path + "' exists"));
        // A new name: a link never replaces what another client made meanwhile.
        WriteOptions options;
        options.forbid_overwrite = true;
        const size_t target_size = target.size();
        self->data_.client()->PutSymlink(
            meta::FileKey(self->options_.prefix, path), target, options,
            [self, path, target_size, done = std::move(done)](Status s) {
              if (!s.ok()) return done(s);
              meta::NodeAttr attr;
              attr.kind = meta::NodeKind::kSymlink;
              attr.size = target_size;  // lstat's size of a link: its target's length
              attr.mtime_sec = UnixSecondsNow();
              self->listings_->cache().RecordChange(path, attr);
              const InodeId ino = self->inodes_.Ensure(path, false, 1);
              done(self->MakeEntry(ino, attr));
            });
      });
}

void ObjectFilesystem::ReadLink(InodeId ino, Callback<std::string> done) {
  auto node = inodes_.Get(ino);
  if (!node) {
    return done(NoSuchInode(ino));
  }
  if (node->is_dir) return done(Status(ErrorCode::kInvalidArgument, "a directory is not a link"));
  data_.client()->GetSymlink(meta::FileKey(options_.prefix, node->path), std::move(done));
}

}  // namespace ossmount::fs
