// PosixAttrs: a file's mode, owner and modification time as ossfs and s3fs keep them in an
// object's user metadata ("mode" is st_mode in decimal, type bits included; "uid", "gid";
// "mtime" in seconds, a fraction allowed; extended attributes in "xattr", see xattr_header.h),
// so that a bucket written by either shows the same through ossmount (--posix-metadata) and
// back.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "ossmount/object_client.h"

namespace ossmount::meta {

struct PosixAttrs {
  std::optional<uint32_t> mode;  // st_mode: type and permission bits
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<int64_t> mtime_sec;
  // Extended attributes by name. A name mapped to nullopt is absent: in a change, it is removed.
  std::map<std::string, std::optional<std::string>> xattrs;
  bool operator==(const PosixAttrs&) const = default;
};

// `base` with the attributes `change` sets written over it (xattrs name by name).
PosixAttrs MergePosix(PosixAttrs base, const PosixAttrs& change);
// The attributes `meta` holds; a value that does not parse is left out.
PosixAttrs PosixFromMetadata(const UserMetadata& meta);
// `meta` with the attributes set in `attrs` written over its own (other names kept).
// When attrs.xattrs names any attribute, "xattr" holds the present ones (none: it is dropped).
UserMetadata WithPosix(UserMetadata meta, const PosixAttrs& attrs);
// The extended attributes present in `attrs` (those mapped to a value).
std::map<std::string, std::string> PresentXattrs(const PosixAttrs& attrs);

// What user metadata costs against the services' limit (names and values, in bytes); OSS
// refuses more than 8 KiB.
size_t UserMetadataBytes(const UserMetadata& meta);
inline constexpr size_t kMaxUserMetadataBytes = 8 << 10;
// kNoSpace, naming `path`, when `meta` is over that limit.
Status CheckUserMetadataSize(const UserMetadata& meta, const std::string& path);

}  // namespace ossmount::meta
