// Small string helpers shared by the wire-protocol code (header names, hosts, options).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ossmount {

// ASCII lowercase; other bytes (UTF-8 included) are kept as they are.
inline std::string ToLowerAscii(std::string_view in) {
  std::string out(in);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// ASCII case-insensitive equality (HTTP header names).
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

using NameValueList = std::vector<std::pair<std::string, std::string>>;

// The value of the first pair whose name equals `name` ignoring case, or nullptr.
inline const std::string* FindIgnoreCase(const NameValueList& list, std::string_view name) {
  for (const auto& [n, v] : list) {
    if (EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

}  // namespace ossmount
