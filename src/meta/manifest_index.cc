#include "meta/manifest_index.h"

#include <algorithm>
#include <numeric>

namespace ossmount::meta {

namespace {

// Tokens: 'K' + the last key returned, or 'P' + the last common prefix returned.
constexpr char kAfterKey = 'K';
constexpr char kAfterPrefix = 'P';

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// The smallest string greater than every string that starts with `prefix`, or nullopt when
// there is none (the prefix is all 0xFF bytes, or empty).
std::optional<std::string> PrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty() && static_cast<unsigned char>(s.back()) == 0xFF) s.pop_back();
  if (s.empty()) return std::nullopt;
  s.back() = static_cast<char>(static_cast<unsigned char>(s.back()) + 1);
  return s;
}

}  // namespace

void ManifestIndex::Builder::Add(std::string_view key, uint64_t size, std::string_view etag,
                                 uint32_t line) {
  Record r;
  r.offset = arena_.size();
  r.size = size;
  r.key_len = static_cast<uint32_t>(key.size());
  r.etag_len = static_cast<uint16_t>(etag.size());
  arena_.insert(arena_.end(), key.begin(), key.end());
  arena_.insert(arena_.end(), etag.begin(), etag.end());
  records_.push_back(r);
  lines_.push_back(line);
}

ManifestIndex ManifestIndex::Builder::Finish(std::vector<Duplicate>* duplicates) {
  ManifestIndex index;
  index.arena_ = std::move(arena_);
  index.arena_.shrink_to_fit();
  const char* arena = index.arena_.data();
  auto key_of = [arena](const Record& r) { return std::string_view(arena + r.offset, r.key_len); };

  // Sort a permutation (4 bytes per entry) so each record keeps its line for the report;
  // equal keys stay in line order, so the first of two equal keys is the earlier line.
  std::vector<uint32_t> order(records_.size());
  std::iota(order.begin(), order.end(), 0u);
  auto by_key = [&](uint32_t a, uint32_t b) {
    int c = key_of(records_[a]).compare(key_of(records_[b]));
    return c < 0 || (c == 0 && a < b);
  };
  // Manifests written from a listing are already in key order: one pass instead of a sort.
  if (!std::is_sorted(order.begin(), order.end(), by_key)) {
    std::sort(order.begin(), order.end(), by_key);
  }
  index.records_.reserve(records_.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const Record& r = records_[order[i]];
    if (!index.records_.empty() && key_of(index.records_.back()) == key_of(r)) {
      if (duplicates) {
        // The first line of this key is the one kept: the previous entry in sorted order.
        duplicates->push_back(
            Duplicate{std::string(key_of(r)), lines_[order[i]], lines_[order[i - 1]]});
      }
      continue;
    }
    index.records_.push_back(r);
  }
  // The first line of a run of duplicates is the kept one; report every later one against
  // it (the loop above compares with the immediately previous line, fix that up).
  if (duplicates) {
    for (size_t i = 1; i < duplicates->size(); ++i) {
      Duplicate& d = (*duplicates)[i];
      const Duplicate& prev = (*duplicates)[i - 1];
      if (d.key == prev.key) d.first_line = prev.first_line;
    }
  }
  records_ = {};
  lines_ = {};
  index.records_.shrink_to_fit();
  return index;
}

ManifestIndex::Entry ManifestIndex::at(size_t i) const {
  const Record& r = records_[i];
  return Entry{KeyOf(r), r.size,
               std::string_view(arena_.data() + r.offset + r.key_len, r.etag_len)};
}

size_t ManifestIndex::LowerBound(std::string_view key) const {
  auto it = std::lower_bound(records_.begin(), records_.end(), key,
                             [this](const Record& r, std::string_view k) { return KeyOf(r) < k; });
  return static_cast<size_t>(it - records_.begin());
}

std::optional<size_t> ManifestIndex::Find(std::string_view key) const {
  size_t i = LowerBound(key);
  if (i < records_.size() && KeyOf(records_[i]) == key) return i;
  return std::nullopt;
}

ManifestIndex::Page ManifestIndex::List(std::string_view prefix, std::string_view delimiter,
                                        std::string_view token, int max_keys) const {
  Page page;
  if (max_keys <= 0) max_keys = 1000;
  const size_t n = records_.size();
  size_t i = LowerBound(prefix);
  if (token.size() > 1 && StartsWith(token.substr(1), prefix)) {
    std::string_view after = token.substr(1);
    if (token[0] == kAfterKey) {
      i = std::max(i, LowerBound(after));
      if (i < n && KeyOf(records_[i]) == after) ++i;
    } else if (token[0] == kAfterPrefix) {
      auto next = PrefixSuccessor(after);
      i = next ? std::max(i, LowerBound(*next)) : n;
    }
  }
  int count = 0;
  std::string last;  // the token of the last item on the page
  while (i < n) {
    std::string_view key = KeyOf(records_[i]);
    if (!StartsWith(key, prefix)) break;
    if (count == max_keys) {
      page.truncated = true;
      page.next_token = std::move(last);
      return page;
    }
    size_t d = delimiter.empty() ? std::string_view::npos : key.find(delimiter, prefix.size());
    if (d != std::string_view::npos) {
      std::string_view common = key.substr(0, d + delimiter.size());
      page.prefixes.emplace_back(common);
      last = kAfterPrefix + std::string(common);
      auto next = PrefixSuccessor(common);
      i = next ? LowerBound(*next) : n;
    } else {
      page.objects.push_back(i);
      last = kAfterKey + std::string(key);
      ++i;
    }
    ++count;
  }
  return page;
}

size_t ManifestIndex::MemoryBytes() const {
  return arena_.capacity() + records_.capacity() * sizeof(Record);
}

}  // namespace ossmount::meta
