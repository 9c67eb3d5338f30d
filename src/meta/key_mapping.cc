#include "meta/key_mapping.h"

#include <sys/stat.h>

#include <algorithm>

#include "common/strings.h"

namespace ossmount::meta {

bool ValidComponent(std::string_view name) {
  if (name.empty() || name.size() > kNameMax) return false;
  if (name == "." || name == "..") return false;
  return name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

Status CheckLookupName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") {
    return Status(ErrorCode::kNotFound, "'.', '..' and empty names are not looked up here");
  }
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos) {
    return Status(ErrorCode::kInvalidArgument, "a name cannot contain '/' or NUL");
  }
  if (name.size() > kNameMax) {
    return Status(ErrorCode::kNameTooLong, "name too long (over 255 bytes)");
  }
  return Status::Ok();
}

Status CheckNewKey(std::string_view key, std::string_view what) {
  const std::string name(what);
  if (key.size() > kKeyMax) {
    return Status(ErrorCode::kNameTooLong, "'" + name + "' would be an object key of " +
                                               std::to_string(key.size()) +
                                               " bytes; the service allows at most 1,023");
  }
  if (!IsValidUtf8(key)) {
    return Status(ErrorCode::kInvalidArgument,
                  "'" + name + "' is not valid UTF-8, which object keys must be");
  }
  if (!key.empty() && key.front() == '\\') {
    return Status(ErrorCode::kInvalidArgument,
                  "'" + name +
                      "' would be an object key starting with '\\', which the service "
                      "refuses");
  }
  return Status::Ok();
}

std::string JoinPath(std::string_view parent, std::string_view name) {
  std::string out;
  out.reserve(parent.size() + 1 + name.size());
  out.append(parent);
  if (!parent.empty()) out.push_back('/');
  out.append(name);
  return out;
}

std::pair<std::string_view, std::string_view> SplitPath(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return {std::string_view(), path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

std::string FileKey(std::string_view mount_prefix, std::string_view path) {
  std::string key(mount_prefix);
  key.append(path);
  return key;
}

std::string DirPrefix(std::string_view mount_prefix, std::string_view path) {
  std::string key(mount_prefix);
  if (!path.empty()) {
    key.append(path);
    key.push_back('/');
  }
  return key;
}

Result<std::string> NormalizeMountPrefix(std::string_view prefix) {
  while (!prefix.empty() && prefix.front() == '/') prefix.remove_prefix(1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix.empty()) return std::string();
  size_t start = 0;
  while (start <= prefix.size()) {
    size_t end = prefix.find('/', start);
    if (end == std::string_view::npos) end = prefix.size();
    if (!ValidComponent(prefix.substr(start, end - start))) {
      return Status(ErrorCode::kInvalidArgument,
                    "the mount prefix '" + std::string(prefix) +
                        "' has an empty, '.', '..' or over-long component");
    }
    start = end + 1;
  }
  return std::string(prefix) + "/";
}

NodeAttr FileAttrFrom(const ObjectInfo& info) {
  NodeAttr a;
  a.kind = info.symlink ? NodeKind::kSymlink : NodeKind::kFile;
  a.size = info.size;
  a.mtime_sec = info.mtime_sec;
  a.etag = info.etag;
  a.crc64 = info.crc64;
  a.appendable = info.appendable;
  if (info.has_user_meta) {
    a.posix = PosixFromMetadata(info.user_meta);
    // A link s3fs made (S3 has no link objects): its mode says so.
    if (a.posix->mode && S_ISLNK(*a.posix->mode)) a.kind = NodeKind::kSymlink;
  }
  return a;
}

NodeAttr DirAttr() {
  NodeAttr a;
  a.kind = NodeKind::kDir;
  return a;
}

DirectoryBuilder::DirectoryBuilder(std::string list_prefix) : prefix_(std::move(list_prefix)) {}

void DirectoryBuilder::Hide(const std::string& key) {
  ++hidden_.invalid;
  if (examples_.size() < 3) examples_.push_back(key);
}

void DirectoryBuilder::AddPage(const ListPage& page) {
  for (const auto& obj : page.objects) {
    if (obj.key.size() < prefix_.size() || obj.key.compare(0, prefix_.size(), prefix_) != 0) {
      continue;  // not ours; a server bug, ignore rather than mangle
    }
    std::string_view rest = std::string_view(obj.key).substr(prefix_.size());
    if (rest.empty()) continue;  // the directory's own marker
    if (!ValidComponent(rest)) {
      Hide(obj.key);
      continue;
    }
    files_.push_back({std::string(rest), FileAttrFrom(obj)});
    const DirChild& added = files_.back();
    bytes_ += sizeof(DirChild) + (added.name.capacity() > 15 ? added.name.capacity() + 1 : 0) +
              (added.attr.etag.capacity() > 15 ? added.attr.etag.capacity() + 1 : 0);
  }
  for (const auto& cp : page.common_prefixes) {
    if (cp.size() <= prefix_.size() || cp.compare(0, prefix_.size(), prefix_) != 0 ||
        cp.back() != '/') {
      continue;
    }
    std::string_view rest = std::string_view(cp).substr(prefix_.size());
    rest.remove_suffix(1);
    if (!ValidComponent(rest)) {
      Hide(cp);
      continue;
    }
    dirs_.emplace_back(rest);
    bytes_ += sizeof(std::string) + (rest.size() > 15 ? rest.size() + 1 : 0);
  }
}

std::vector<DirChild> DirectoryBuilder::Finish() {
  std::sort(dirs_.begin(), dirs_.end());
  dirs_.erase(std::unique(dirs_.begin(), dirs_.end()), dirs_.end());
  std::sort(files_.begin(), files_.end(),
            [](const DirChild& a, const DirChild& b) { return a.name < b.name; });
  std::vector<DirChild> out;
  out.reserve(files_.size() + dirs_.size());
  size_t f = 0;
  size_t d = 0;
  while (f < files_.size() || d < dirs_.size()) {
    if (d < dirs_.size() && (f >= files_.size() || dirs_[d] <= files_[f].name)) {
      // Skip every file of the same name: the directory wins.
      while (f < files_.size() && files_[f].name == dirs_[d]) {
        ++hidden_.clashes;
        ++f;
      }
      out.push_back({std::move(dirs_[d]), DirAttr()});
      ++d;
    } else {
      if (out.empty() || out.back().name != files_[f].name) out.push_back(std::move(files_[f]));
      ++f;
    }
  }
  files_.clear();
  dirs_.clear();
  bytes_ = 0;
  return out;
}

}  // namespace ossmount::meta
