#include "object/content_types.h"

#include <fstream>
#include <sstream>

#include "common/strings.h"

namespace ossmount::object {
namespace {

const std::unordered_map<std::string, std::string>& SystemTable() {
  static const std::unordered_map<std::string, std::string> table = [] {
    std::ifstream in("/etc/mime.types");
    std::stringstream text;
    text << in.rdbuf();
    return ParseMimeTypes(text.str());
  }();
  return table;
}

}  // namespace

std::unordered_map<std::string, std::string> ParseMimeTypes(std::string_view text) {
  std::unordered_map<std::string, std::string> table;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string type, ext;
    if (!(words >> type) || type.find('/') == std::string::npos) continue;
    while (words >> ext) table.emplace(ToLowerAscii(ext), type);
  }
  return table;
}

std::string ContentTypeFor(std::string_view key) {
  // A directory marker ("dir/"), typed as ossfs and s3fs type theirs.
  if (!key.empty() && key.back() == '/') return "application/x-directory";
  const size_t slash = key.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  const size_t dot = name.rfind('.');
  // No extension, or a name that is only one (".bashrc").
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) {
    return kDefaultContentType;
  }
  const std::string ext = ToLowerAscii(name.substr(dot + 1));
  // PyTorch's .pt is "application/vnd.snesdev-page-table" in the table; a checkpoint is bytes.
  if (ext == "pt") return kDefaultContentType;
  const auto& table = SystemTable();
  auto it = table.find(ext);
  return it == table.end() ? kDefaultContentType : it->second;
}

}  // namespace ossmount::object
