// Case-insensitive lookups in an http::HeaderList, shared by the response parsers.
#pragma once

#include <string>
#include <string_view>

#include "common/strings.h"
#include "http/fetch_engine.h"

namespace ossmount::object {

inline bool HeaderNameEquals(std::string_view a, std::string_view b) {
  return EqualsIgnoreCase(a, b);
}

// The first header with this name, or nullptr.
inline const std::string* FindHeader(const http::HeaderList& headers, std::string_view name) {
  return FindIgnoreCase(headers, name);
}

// Replaces every header of this name with one (name, value).
inline void SetHeader(http::HeaderList& headers, std::string name, std::string value) {
  for (auto it = headers.begin(); it != headers.end();) {
    it = HeaderNameEquals(it->first, name) ? headers.erase(it) : it + 1;
  }
  headers.emplace_back(std::move(name), std::move(value));
}

}  // namespace ossmount::object
