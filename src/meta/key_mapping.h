// Key <-> path mapping: which object keys show up in the mount, under which names.
//
// Paths are relative to the mount root: "" is the root, "train/cls1/img.jpg" a file. Every
// path component is a valid POSIX name (ValidComponent), so no path can name anything
// outside the mount. The key of a path is mount_prefix + path ("imagenet/" + "train/x").
//
// What a delimiter listing of a directory shows (BuildDirectory):
//   - an object key directly under the directory is a file;
//   - a CommonPrefix is a subdirectory (this is also how 'dir/' marker keys appear: a marker
//     is not a file);
//   - the directory's own marker (key == the listing prefix) is skipped silently;
//   - a name that is both a file and a directory shows as the directory only (a clash);
//   - names that are not valid POSIX names are hidden, never mangled: empty components
//     ('a//b', a leading '/'), '.' and '..', components over 255 bytes, names with NUL.
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "meta/posix_attrs.h"
#include "ossmount/object_client.h"
#include "ossmount/status.h"

namespace ossmount::meta {

constexpr size_t kNameMax = 255;

// True for a name that may appear in the mount: non-empty, not "." or "..", at most
// kNameMax bytes, no '/' and no NUL.
bool ValidComponent(std::string_view name);

// Checks a name the kernel asks to look up, before any request is made. Returns OK, or:
// "." / ".." / "" -> kNotFound (ENOENT: those never resolve through this layer);
// '/' or NUL inside -> kInvalidArgument (EINVAL);
// over kNameMax bytes -> kNameTooLong (ENAMETOOLONG).
Status CheckLookupName(std::string_view name);

// The longest object key OSS and S3 accept, in bytes.
constexpr size_t kKeyMax = 1023;

// Checks the object key a write would create (a file, a directory's "dir/" marker, a rename
// target), before any request is made: the service refuses keys over kKeyMax bytes
// (kNameTooLong, ENAMETOOLONG), keys that are not valid UTF-8, and keys starting with '\'
// (kInvalidArgument, EINVAL). `what` names the path in the message.
Status CheckNewKey(std::string_view key, std::string_view what);

// "a/b" + "c" -> "a/b/c"; "" + "c" -> "c". REQUIRES: ValidComponent(name).
std::string JoinPath(std::string_view parent, std::string_view name);
// The parent path and the last name: "a/b/c" -> {"a/b", "c"}; "c" -> {"", "c"}.
std::pair<std::string_view, std::string_view> SplitPath(std::string_view path);

// The object key of a file path: prefix + path.
std::string FileKey(std::string_view mount_prefix, std::string_view path);
// The listing prefix of a directory path: prefix + path + "/" ("" path -> prefix).
std::string DirPrefix(std::string_view mount_prefix, std::string_view path);

// Normalises a user-given mount prefix: strips leading '/', adds a trailing '/' unless
// empty. Returns kInvalidArgument when the prefix contains an invalid component.
Result<std::string> NormalizeMountPrefix(std::string_view prefix);

enum class NodeKind { kFile, kDir, kSymlink };

// What the listing or a HEAD says about one name.
struct NodeAttr {
  NodeKind kind = NodeKind::kFile;
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  std::string etag;  // files only, quoted as the server sent it
  std::optional<uint64_t> crc64;
  bool appendable = false;  // AppendObject may extend it (OSS)
  // With --posix-metadata, what the object's user metadata says (read by a HEAD; nullopt
  // until one was made, as listings carry none).
  std::optional<PosixAttrs> posix;
  bool is_dir() const { return kind == NodeKind::kDir; }
  bool is_symlink() const { return kind == NodeKind::kSymlink; }
};

NodeAttr FileAttrFrom(const ObjectInfo& info);
NodeAttr DirAttr();

struct DirChild {
  std::string name;
  NodeAttr attr;
};

// Why keys were left out of a directory.
struct HiddenCounts {
  uint64_t invalid = 0;  // not a valid POSIX name (empty, '.', '..', too long, NUL)
  uint64_t clashes = 0;  // files hidden by a directory of the same name
  uint64_t total() const { return invalid + clashes; }
};

// Accumulates the pages of one delimiter listing of `list_prefix` (the DirPrefix of the
// directory) into its children. Pages may split a clash ('a' on one page, 'a/' on the next).
class DirectoryBuilder {
 public:
  explicit DirectoryBuilder(std::string list_prefix);
  void AddPage(const ListPage& page);
  // Children sorted by name (bytewise), unique, and what was hidden.
  std::vector<DirChild> Finish();
  const HiddenCounts& hidden() const { return hidden_; }
  // A few hidden keys, for the log line (at most 3).
  const std::vector<std::string>& hidden_examples() const { return examples_; }
  // Bytes the children gathered so far hold (estimated), before Finish.
  size_t MemoryBytes() const { return bytes_; }

 private:
  void Hide(const std::string& key);

  size_t bytes_ = 0;
  std::string prefix_;
  std::vector<DirChild> files_;
  std::vector<std::string> dirs_;
  HiddenCounts hidden_;
  std::vector<std::string> examples_;
};

}  // namespace ossmount::meta
