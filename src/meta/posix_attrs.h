// PosixAttrs: a file's mode, owner and modification time as ossfs and s3fs keep them in an
// object's user metadata ("mode" is st_mode in decimal, type bits included; "uid", "gid";
// "mtime" in seconds, a fraction allowed), so that a bucket written by either shows the same
// through ossmount (--posix-metadata) and back.
#pragma once

#include <cstdint>
#include <optional>

#include "ossmount/object_client.h"

namespace ossmount::meta {

struct PosixAttrs {
  std::optional<uint32_t> mode;  // st_mode: type and permission bits
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<int64_t> mtime_sec;
  bool operator==(const PosixAttrs&) const = default;
};

// `base` with the attributes `change` sets written over it.
PosixAttrs MergePosix(PosixAttrs base, const PosixAttrs& change);
// The attributes `meta` holds; a value that does not parse is left out.
PosixAttrs PosixFromMetadata(const UserMetadata& meta);
// `meta` with the attributes set in `attrs` written over its own (other names kept).
UserMetadata WithPosix(UserMetadata meta, const PosixAttrs& attrs);

}  // namespace ossmount::meta
