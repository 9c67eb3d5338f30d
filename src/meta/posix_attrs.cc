#include "meta/posix_attrs.h"

#include <charconv>
#include <string>

#include "meta/xattr_header.h"

namespace ossmount::meta {
namespace {

template <typename T>
std::optional<T> MetaNumber(const std::string& text) {
  T value{};
  // "mtime" may carry a fraction (s3fs writes "1700000000.123456789"): the seconds count.
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr == text.data() || (ptr != end && *ptr != '.')) return std::nullopt;
  return value;
}

void SetMeta(UserMetadata& meta, const std::string& name, const std::string& value) {
  for (auto& [n, v] : meta) {
    if (n == name) {
      v = value;
      return;
    }
  }
  meta.emplace_back(name, value);
}

void EraseMeta(UserMetadata& meta, const std::string& name) {
  std::erase_if(meta, [&](const auto& entry) { return entry.first == name; });
}

}  // namespace

PosixAttrs MergePosix(PosixAttrs base, const PosixAttrs& change) {
  if (change.mode) base.mode = change.mode;
  if (change.uid) base.uid = change.uid;
  if (change.gid) base.gid = change.gid;
  if (change.mtime_sec) base.mtime_sec = change.mtime_sec;
  for (const auto& [name, value] : change.xattrs) base.xattrs[name] = value;
  return base;
}

PosixAttrs PosixFromMetadata(const UserMetadata& meta) {
  PosixAttrs a;
  for (const auto& [name, value] : meta) {
    if (name == "mode") {
      a.mode = MetaNumber<uint32_t>(value);
    } else if (name == "uid") {
      a.uid = MetaNumber<uint32_t>(value);
    } else if (name == "gid") {
      a.gid = MetaNumber<uint32_t>(value);
    } else if (name == "mtime") {
      a.mtime_sec = MetaNumber<int64_t>(value);
    } else if (name == "xattr") {
      if (std::optional<Xattrs> xattrs = DecodeXattrHeader(value)) {
        a.xattrs.insert(xattrs->begin(), xattrs->end());
      }
    }
  }
  return a;
}

UserMetadata WithPosix(UserMetadata meta, const PosixAttrs& attrs) {
  if (attrs.mode) SetMeta(meta, "mode", std::to_string(*attrs.mode));
  if (attrs.uid) SetMeta(meta, "uid", std::to_string(*attrs.uid));
  if (attrs.gid) SetMeta(meta, "gid", std::to_string(*attrs.gid));
  if (attrs.mtime_sec) SetMeta(meta, "mtime", std::to_string(*attrs.mtime_sec));
  if (!attrs.xattrs.empty()) {
    const Xattrs present = PresentXattrs(attrs);
    if (present.empty()) {
      EraseMeta(meta, "xattr");
    } else {
      SetMeta(meta, "xattr", EncodeXattrHeader(present));
    }
  }
  return meta;
}

std::map<std::string, std::string> PresentXattrs(const PosixAttrs& attrs) {
  std::map<std::string, std::string> present;
  for (const auto& [name, value] : attrs.xattrs) {
    if (value) present.emplace(name, *value);
  }
  return present;
}

Status CheckUserMetadataSize(const UserMetadata& meta, const std::string& path) {
  if (UserMetadataBytes(meta) <= kMaxUserMetadataBytes) return Status::Ok();
  return Status(ErrorCode::kNoSpace, "'" + path +
                                         "': its metadata would pass the 8 KiB that an "
                                         "object's user metadata may hold");
}

size_t UserMetadataBytes(const UserMetadata& meta) {
  size_t bytes = 0;
  for (const auto& [name, value] : meta) bytes += name.size() + value.size();
  return bytes;
}

}  // namespace ossmount::meta
