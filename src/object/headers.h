// Case-insensitive lookups in an http::HeaderList, shared by the response parsers.
#pragma once

#include <string>
#include <string_view>

#include "http/fetch_engine.h"

namespace ossmount::object {

inline bool HeaderNameEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// The first header with this name, or nullptr.
inline const std::string* FindHeader(const http::HeaderList& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (HeaderNameEquals(n, name)) return &v;
  }
  return nullptr;
}

// Replaces every header of this name with one (name, value).
inline void SetHeader(http::HeaderList& headers, std::string name, std::string value) {
  for (auto it = headers.begin(); it != headers.end();) {
    it = HeaderNameEquals(it->first, name) ? headers.erase(it) : it + 1;
  }
  headers.emplace_back(std::move(name), std::move(value));
}

}  // namespace ossmount::object
