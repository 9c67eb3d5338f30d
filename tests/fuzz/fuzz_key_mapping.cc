// Fuzz target: key-to-path mapping (meta::DirectoryBuilder, NormalizeMountPrefix,
// CheckLookupName), the rules that decide which object keys, chosen by whoever writes to the
// bucket, become names in the mount.
//
// Input layout: newline-separated lines. Line 0 is the mount prefix, line 1 the directory
// path inside the mount; every further line is a key (or, when it ends with '/', a
// CommonPrefix), in pages of up to 8 entries.
//
// Invariants: every child of a directory is a valid POSIX name (non-empty, not '.' or '..',
// no '/', no NUL, at most 255 bytes); children are sorted and unique; the path of a child
// never has an empty, '.' or '..' component; a normalized prefix has only valid components;
// CheckLookupName accepts exactly the valid components.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "meta/key_mapping.h"

using namespace ossmount;
using namespace ossmount::meta;

namespace {

// Every '/'-separated component of `path` is a valid name ("" is the root, no components).
bool AllComponentsValid(std::string_view path) {
  if (path.empty()) return true;
  size_t start = 0;
  while (true) {
    size_t end = path.find('/', start);
    std::string_view part =
        path.substr(start, end == std::string_view::npos ? path.npos : end - start);
    if (!ValidComponent(part) || part == "." || part == ".." || part.empty()) return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> lines;
  while (!input.empty() && lines.size() < 4096) {
    size_t eol = input.find('\n');
    lines.push_back(input.substr(0, eol));
    input = eol == std::string_view::npos ? std::string_view() : input.substr(eol + 1);
  }
  if (lines.size() < 2) return 0;

  for (std::string_view line : lines) {
    bool valid = ValidComponent(line);
    FUZZ_CHECK(valid == CheckLookupName(line).ok());
  }

  auto prefix = NormalizeMountPrefix(lines[0]);
  if (!prefix.ok()) return 0;
  FUZZ_CHECK(prefix->empty() || prefix->back() == '/');
  FUZZ_CHECK(prefix->empty() ||
             AllComponentsValid(std::string_view(*prefix).substr(0, prefix->size() - 1)));
  std::string dir(lines[1]);
  if (!AllComponentsValid(dir)) return 0;  // the filesystem only lists paths it built

  DirectoryBuilder builder(DirPrefix(*prefix, dir));
  ListPage page;
  size_t entries = 0;
  for (size_t i = 2; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (!line.empty() && line.back() == '/') {
      page.common_prefixes.emplace_back(line);
    } else {
      ObjectInfo info;
      info.key = std::string(line);
      info.size = i;
      page.objects.push_back(std::move(info));
    }
    if (++entries % 8 == 0) {
      builder.AddPage(page);
      page = ListPage();
    }
  }
  builder.AddPage(page);
  std::vector<DirChild> children = builder.Finish();
  for (size_t i = 0; i < children.size(); ++i) {
    const DirChild& child = children[i];
    FUZZ_CHECK(ValidComponent(child.name));
    FUZZ_CHECK(CheckLookupName(child.name).ok());
    if (i > 0) FUZZ_CHECK(children[i - 1].name < child.name);
    std::string path = JoinPath(dir, child.name);
    FUZZ_CHECK(AllComponentsValid(path));
    FUZZ_CHECK(SplitPath(path).second == child.name);
    FUZZ_CHECK(SplitPath(path).first == dir);
    // The key a file child is read from lies under the mount prefix and is the listed key.
    std::string key = child.attr.is_dir() ? DirPrefix(*prefix, path) : FileKey(*prefix, path);
    FUZZ_CHECK(key.compare(0, prefix->size(), *prefix) == 0);
  }
  return 0;
}
