#include "listing.h"

#include "xml_writer.h"

namespace ossmount::testserver {

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
