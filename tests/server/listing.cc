#include "listing.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "xml_writer.h"

namespace ossmount::testserver {

Result<ListPage> SyntheticPage(const ListQuery& query, const std::string& prefix, uint64_t count) {
  ListPage page;
  static const auto created = std::make_shared<const SystemTime>(std::chrono::system_clock::now());
  auto add = [&](uint64_t i) {
    auto obj = std::make_shared<ObjectInfo>();
    char name[16];
    snprintf(name, sizeof(name), "f%010llu", static_cast<unsigned long long>(i));
    obj->key = prefix + name;
    obj->size = 1;
    obj->mtime = *created;
    obj->etag = "00000000000000000000000000000001";
    page.contents.push_back(std::move(obj));
  };
  if (query.prefix != prefix) {
    // A listing of one name (a probe): the key itself, if it is one of the generated ones.
    const std::string rest = query.prefix.substr(prefix.size());
    if (rest.size() == 11 && rest[0] == 'f' &&
        rest.find_first_not_of("0123456789", 1) == std::string::npos) {
      const uint64_t i = std::stoull(rest.substr(1));
      if (count == 0 || i < count) add(i);
    }
    return page;
  }
  uint64_t first = 0;
  if (!query.continuation_token.empty()) {
    if (query.continuation_token.rfind("syn-", 0) != 0) {
      return Status(ErrorCode::kInvalidArgument, "The continuation token provided is incorrect");
    }
    first = std::stoull(query.continuation_token.substr(4));
  }
  const uint64_t n = static_cast<uint64_t>(std::max(query.max_keys, 0));
  const uint64_t end = count == 0 ? first + n : std::min(count, first + n);
  for (uint64_t i = first; i < end; ++i) add(i);
  page.truncated = count == 0 || end < count;
  if (page.truncated) page.next_token = "syn-" + std::to_string(end);
  return page;
}

std::string PrefixSuccessor(std::string prefix) {
  while (!prefix.empty()) {
    unsigned char last = static_cast<unsigned char>(prefix.back());
    if (last != 0xFF) {
      prefix.back() = static_cast<char>(last + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return prefix;
}

namespace {

// Keys strictly after `value`, or after the whole subtree when it is a common prefix.
ObjectIndex::const_iterator SeekAfter(const ObjectIndex& index, const std::string& value,
                                      bool is_common_prefix) {
  if (is_common_prefix) {
    std::string next = PrefixSuccessor(value);
    return next.empty() ? index.end() : index.lower_bound(next);
  }
  return index.upper_bound(value);
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

Result<ListPage> ListIndex(const ObjectIndex& index, const ListQuery& q) {
  ListPage page;
  auto it = index.lower_bound(q.prefix);
  auto later = [&](ObjectIndex::const_iterator other) {
    if (other == index.end() || it == index.end()) {
      it = index.end();
    } else if (other->first > it->first) {
      it = other;
    }
  };
  if (!q.continuation_token.empty()) {
    std::string raw;
    if (!Base64UrlDecode(q.continuation_token, raw) || raw.empty() ||
        (raw[0] != 'k' && raw[0] != 'p')) {
      return Status(ErrorCode::kInvalidArgument, "The continuation token provided is incorrect");
    }
    later(SeekAfter(index, raw.substr(1), raw[0] == 'p'));
  } else if (!q.start_after.empty()) {
    later(SeekAfter(index, q.start_after, false));
  }
  if (!q.marker.empty()) {
    bool marker_is_prefix = false;
    if (!q.delimiter.empty() && StartsWith(q.marker, q.prefix)) {
      size_t pos = q.marker.find(q.delimiter, q.prefix.size());
      marker_is_prefix = pos != std::string::npos && pos + q.delimiter.size() == q.marker.size();
    }
    later(SeekAfter(index, q.marker, marker_is_prefix));
  }

  int count = 0;
  std::string last_value;
  bool last_is_prefix = false;
  while (it != index.end() && StartsWith(it->first, q.prefix)) {
    const std::string& key = it->first;
    std::optional<std::string> common;
    if (!q.delimiter.empty()) {
      size_t pos = key.find(q.delimiter, q.prefix.size());
      if (pos != std::string::npos) common = key.substr(0, pos + q.delimiter.size());
    }
    if (count >= q.max_keys) {
      page.truncated = true;
      break;
    }
    ++count;
    if (common) {
      page.common_prefixes.push_back(*common);
      last_value = *common;
      last_is_prefix = true;
      std::string next = PrefixSuccessor(*common);
      it = next.empty() ? index.end() : index.lower_bound(next);
    } else {
      page.contents.push_back(it->second);
      last_value = key;
      last_is_prefix = false;
      ++it;
    }
  }
  if (page.truncated) {
    page.next_token = Base64UrlEncode((last_is_prefix ? "p" : "k") + last_value);
    page.next_marker = last_value;
  }
  return page;
}

}  // namespace ossmount::testserver
