#include <strings.h>

#include "http/fetch_engine.h"

namespace ossmount::http {

const std::string* Response::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() && strncasecmp(key.data(), name.data(), name.size()) == 0) {
      return &value;
    }
  }
  return nullptr;
}

}  // namespace ossmount::http
