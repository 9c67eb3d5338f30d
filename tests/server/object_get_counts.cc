#include "object_get_counts.h"

#include <algorithm>

#include <cstdio>

namespace ossmount::testserver {

namespace {
// A JSON string: keys may hold any byte, so quotes, backslashes and control bytes are escaped.
std::string JsonQuotedKey(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}
}  // namespace

void ObjectGetCounts::Count(const std::string& bucket, const std::string& key) {
  std::string name;
  name.reserve(bucket.size() + 1 + key.size());
  name.append(bucket).append(1, '/').append(key);
  std::lock_guard lock(mu_);
  ++counts_[name];
}

void ObjectGetCounts::Reset() {
  std::lock_guard lock(mu_);
  counts_.clear();
}

std::map<std::string, uint64_t> ObjectGetCounts::Snapshot() const {
  std::lock_guard lock(mu_);
  return std::map<std::string, uint64_t>(counts_.begin(), counts_.end());
}

std::string ObjectGetCounts::ToJson() const {
  const auto all = Snapshot();
  uint64_t gets = 0, max = 0;
  std::string keys;
  for (const auto& [name, n] : all) {
    gets += n;
    max = std::max(max, n);
    keys += (keys.empty() ? "" : ",") + JsonQuotedKey(name) + ":" + std::to_string(n);
  }
  return "{\"objects\":" + std::to_string(all.size()) + ",\"gets\":" + std::to_string(gets) +
         ",\"max\":" + std::to_string(max) + ",\"keys\":{" + keys + "}}";
}

}  // namespace ossmount::testserver
