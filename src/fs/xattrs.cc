// Extended attributes (ObjectFilesystem::GetXattr and the rest), with --posix-metadata only:
// the user.* names are kept in the object's "xattr" user metadata, as s3fs and ossfs keep
// them. Reading costs nothing beyond the HEAD the file's lookup made; setting or removing
// one is a copy of the object onto itself (WriteService::StorePosix), or, on a file open for
// writing, is stored with the version its close completes.
#include <sys/xattr.h>

#include "fs/object_filesystem.h"

namespace ossmount::fs {
namespace {

// Other namespaces mean something to the kernel (security.*, system.posix_acl_*,
// trusted.*): objects keep no such thing.
bool IsUserName(const std::string& name) { return name.rfind("user.", 0) == 0 && name.size() > 5; }

Status CheckXattrFlags(const meta::PosixAttrs& now, const std::string& path,
                       const std::string& name, int flags) {
  auto it = now.xattrs.find(name);
  const bool present = it != now.xattrs.end() && it->second.has_value();
  if ((flags & XATTR_CREATE) && present) {
    return Status(ErrorCode::kAlreadyExists, "'" + path + "' has " + name + " already");
  }
  if ((flags & XATTR_REPLACE) && !present) {
    return Status(ErrorCode::kNoAttribute, "'" + path + "' has no " + name);
  }
  return Status::Ok();
}

}  // namespace

bool ObjectFilesystem::KeepsXattrs() const { return options_.posix_metadata; }

std::shared_ptr<WriteHandle> ObjectFilesystem::WriterOf(InodeId ino,
                                                        const meta::InodeTable::Node& node) const {
  std::shared_ptr<WriteHandle> handle =
      node.detached ? writes_->WritingOn(ino) : writes_->OwnerOf(node.path);
  return handle && handle->may_write ? handle : nullptr;
}

void ObjectFilesystem::CurrentPosix(InodeId ino, Callback<meta::PosixAttrs> done) {
  auto node = inodes_.Get(ino);
  if (!node) return done(NoSuchInode(ino));
  if (std::shared_ptr<WriteHandle> handle = WriterOf(ino, *node)) {
    // What the version being written starts from, and what was set on it since.
    std::lock_guard lock(handle->mu);
    return done(handle->CurrentPosixLocked());
  }
  if (node->is_dir) return done(meta::PosixAttrs{});
  ResolveWithPosix(node->path, [path = node->path,
                                done = std::move(done)](Result<std::optional<meta::NodeAttr>> r) {
    if (!r.ok()) return done(r.status());
    if (!r->has_value()) return done(Status(ErrorCode::kNotFound, "no such file: " + path));
    done((*r)->posix.value_or(meta::PosixAttrs{}));
  });
}

void ObjectFilesystem::GetXattr(InodeId ino, std::string name, Callback<std::string> done) {
  // security.capability is asked before every write: answered here, without a lookup.
  if (!options_.posix_metadata || !IsUserName(name)) {
    return done(Status(ErrorCode::kNoAttribute, "no extended attribute " + name));
  }
  CurrentPosix(ino, [name, done = std::move(done)](Result<meta::PosixAttrs> now) {
    if (!now.ok()) return done(now.status());
    auto it = now->xattrs.find(name);
    if (it == now->xattrs.end() || !it->second) {
      return done(Status(ErrorCode::kNoAttribute, "no extended attribute " + name));
    }
    done(std::move(*it->second));
  });
}

void ObjectFilesystem::ListXattr(InodeId ino, Callback<std::vector<std::string>> done) {
  if (!options_.posix_metadata) return done(std::vector<std::string>{});
  CurrentPosix(ino, [done = std::move(done)](Result<meta::PosixAttrs> now) {
    if (!now.ok()) return done(now.status());
    std::vector<std::string> names;
    for (const auto& [name, value] : now->xattrs) {
      if (value) names.push_back(name);
    }
    done(std::move(names));
  });
}

void ObjectFilesystem::SetXattr(InodeId ino, std::string name, std::string value, int flags,
                                StatusCallback done) {
  ChangeXattr(ino, std::move(name), std::optional<std::string>(std::move(value)), flags,
              std::move(done));
}

void ObjectFilesystem::RemoveXattr(InodeId ino, std::string name, StatusCallback done) {
  ChangeXattr(ino, std::move(name), std::nullopt, XATTR_REPLACE, std::move(done));
}

void ObjectFilesystem::ChangeXattr(InodeId ino, std::string name, std::optional<std::string> value,
                                   int flags, StatusCallback done) {
  Status writable = CheckWrites();
  if (!writable.ok()) return done(writable);
  if (!options_.posix_metadata) {
    return done(Status(ErrorCode::kNotSupported,
                       "extended attributes are kept only with --posix-metadata"));
  }
  if (!IsUserName(name)) {
    return done(
        Status(ErrorCode::kNotSupported, "only user.* extended attributes are kept, not " + name));
  }
  auto node = inodes_.Get(ino);
  if (!node) return done(NoSuchInode(ino));
  if (node->is_dir) {
    return done(Status(ErrorCode::kNotSupported,
                       "directories keep no extended attributes ('" + node->path + "')"));
  }
  meta::PosixAttrs change;
  change.xattrs.emplace(name, std::move(value));
  if (std::shared_ptr<WriteHandle> handle = WriterOf(ino, *node)) {
    // Stored with the version the file's close completes, as chmod on an open file is.
    std::lock_guard lock(handle->mu);
    const meta::PosixAttrs now = handle->CurrentPosixLocked();
    Status allowed = CheckXattrFlags(now, node->path, name, flags);
    if (!allowed.ok()) return done(allowed);
    const meta::PosixAttrs after = meta::MergePosix(now, change);
    Status fits = meta::CheckUserMetadataSize(meta::WithPosix({}, after), node->path);
    if (!fits.ok()) return done(fits);
    handle->ChangePosixLocked(change);
    return done(Status::Ok());
  }
  writes_->StorePosix(node->path, change, std::move(done),
                      [path = node->path, name, flags](const meta::PosixAttrs& now) {
                        return CheckXattrFlags(now, path, name, flags);
                      });
}

}  // namespace ossmount::fs
