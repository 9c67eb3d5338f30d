#include "range.h"

#include <charconv>
#include <optional>

namespace ossmount::testserver {

namespace {
std::optional<uint64_t> ParseNumber(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}
}  // namespace

RangeResult EvaluateRange(std::string_view header, uint64_t size, RangeMode mode) {
  using Kind = RangeResult::Kind;
  RangeResult whole;
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  if (header.substr(0, 6) != "bytes=") return whole;
  std::string_view spec = header.substr(6);
  spec = spec.substr(0, spec.find(','));
  while (!spec.empty() && spec.back() == ' ') spec.remove_suffix(1);
  while (!spec.empty() && spec.front() == ' ') spec.remove_prefix(1);
  size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return whole;
  const bool legacy = mode == RangeMode::kOssLegacy;
  RangeResult unsatisfiable{Kind::kUnsatisfiable, 0, 0};

  if (dash == 0) {  // suffix: last n bytes
    auto n = ParseNumber(spec.substr(1));
    if (!n) return whole;
    if (*n == 0 || size == 0) return legacy ? whole : unsatisfiable;
    if (*n >= size) return legacy ? whole : RangeResult{Kind::kPartial, 0, size - 1};
    return RangeResult{Kind::kPartial, size - *n, size - 1};
  }
  auto first = ParseNumber(spec.substr(0, dash));
  if (!first) return whole;
  std::optional<uint64_t> last;
  if (dash + 1 < spec.size()) {
    last = ParseNumber(spec.substr(dash + 1));
    if (!last || *last < *first) return whole;
  }
  if (*first >= size) return legacy ? whole : unsatisfiable;
  if (last && *last >= size) {
    if (legacy) return whole;
    last = size - 1;
  }
  return RangeResult{Kind::kPartial, *first, last ? *last : size - 1};
}

}  // namespace ossmount::testserver
