#include "config/option_values.h"

#include <cctype>
#include <charconv>
#include <iterator>
#include <limits>

namespace ossmount::config {
namespace {

Status Invalid(std::string_view option, std::string_view text, std::string_view expected) {
  return Status(ErrorCode::kInvalidArgument, std::string(option) + ": '" + std::string(text) +
                                                 "' is not valid; expected " +
                                                 std::string(expected));
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "123abc" into the leading digits and the rest. Returns false when there are no
// leading digits or the number overflows uint64_t.
bool SplitNumber(std::string_view text, uint64_t* number, std::string_view* suffix) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + i, *number);
  if (ec != std::errc() || ptr != text.data() + i) return false;
  *suffix = text.substr(i);
  return true;
}

bool MulOverflows(uint64_t a, uint64_t b) {
  return b != 0 && a > std::numeric_limits<uint64_t>::max() / b;
}

}  // namespace

Status InvalidOption(std::string message) {
  return Status(ErrorCode::kInvalidArgument, std::move(message));
}

Result<uint64_t> ParseSize(std::string_view option, std::string_view text) {
  constexpr std::string_view kExpected =
      "a size in bytes, optionally with a suffix K, M, G, T (or KiB, MiB, GiB, TiB), e.g. 8MiB";
  uint64_t n = 0;
  std::string_view suffix;
  if (!SplitNumber(text, &n, &suffix)) return Invalid(option, text, kExpected);
  std::string s = Lower(suffix);
  uint64_t mult = 0;
  if (s.empty() || s == "b") {
    mult = 1;
  } else if (s == "k" || s == "kib" || s == "kb") {
    mult = 1ull << 10;
  } else if (s == "m" || s == "mib" || s == "mb") {
    mult = 1ull << 20;
  } else if (s == "g" || s == "gib" || s == "gb") {
    mult = 1ull << 30;
  } else if (s == "t" || s == "tib" || s == "tb") {
    mult = 1ull << 40;
  } else {
    return Invalid(option, text, kExpected);
  }
  if (MulOverflows(n, mult)) return Invalid(option, text, "a size that fits in 64 bits");
  return n * mult;
}

std::string SizeText(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  while (unit + 1 < std::size(kUnits) && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + kUnits[unit];
}

Result<SizeOrShare> ParseSizeOrPercent(std::string_view option, std::string_view text) {
  constexpr std::string_view kExpected =
      "a size (e.g. 2GiB) or a percentage below 100% with at most two decimals (e.g. 5%)";
  if (text.empty() || text.back() != '%') {
    Result<uint64_t> size = ParseSize(option, text);
    if (!size.ok()) return Invalid(option, text, kExpected);
    return SizeOrShare{*size, 0};
  }
  // Whole hundredths of a percent, so that "5%" is exactly 500 and no float is parsed.
  std::string_view number = text.substr(0, text.size() - 1);
  const size_t dot = number.find('.');
  std::string_view whole = number.substr(0, dot);
  std::string_view decimals = dot == std::string_view::npos ? "" : number.substr(dot + 1);
  uint64_t w = 0, d = 0;
  std::string_view rest;
  if (!SplitNumber(whole, &w, &rest) || !rest.empty() || w >= 100) {
    return Invalid(option, text, kExpected);
  }
  if (dot != std::string_view::npos) {
    if (decimals.empty() || decimals.size() > 2 || !SplitNumber(decimals, &d, &rest) ||
        !rest.empty()) {
      return Invalid(option, text, kExpected);
    }
    if (decimals.size() == 1) d *= 10;
  }
  return SizeOrShare{0, static_cast<double>(w * 100 + d) / 10000.0};
}

Result<std::chrono::milliseconds> ParseDuration(std::string_view option, std::string_view text) {
  constexpr std::string_view kExpected =
      "a whole number of seconds, or a number with a unit ms, s, m or h (e.g. 30s)";
  uint64_t n = 0;
  std::string_view suffix;
  if (!SplitNumber(text, &n, &suffix)) return Invalid(option, text, kExpected);
  std::string s = Lower(suffix);
  uint64_t ms_per = 0;
  if (s == "ms") {
    ms_per = 1;
  } else if (s.empty() || s == "s") {
    ms_per = 1000;
  } else if (s == "m" || s == "min") {
    ms_per = 60'000;
  } else if (s == "h") {
    ms_per = 3'600'000;
  } else {
    return Invalid(option, text, kExpected);
  }
  // Cap at ~100 years: anything longer is a typo, and keeps the arithmetic far from
  // overflow when callers add it to a time point.
  constexpr uint64_t kMaxMs = 100ull * 365 * 24 * 3600 * 1000;
  if (MulOverflows(n, ms_per) || n * ms_per > kMaxMs) {
    return Invalid(option, text, "a duration below 100 years (or 'indefinite' for a TTL)");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(n * ms_per));
}

Result<std::optional<std::chrono::milliseconds>> ParseTtl(std::string_view option,
                                                          std::string_view text) {
  std::string s = Lower(text);
  if (s == "indefinite" || s == "inf" || s == "infinite" || s == "forever") {
    return std::optional<std::chrono::milliseconds>();
  }
  auto d = ParseDuration(option, text);
  if (!d.ok()) {
    return Invalid(option, text,
                   "'indefinite', a number of seconds (e.g. 60, or 0 to always revalidate), "
                   "or a number with a unit ms, s, m or h");
  }
  return std::optional<std::chrono::milliseconds>(*d);
}

Result<uint32_t> ParseOctalMode(std::string_view option, std::string_view text) {
  constexpr std::string_view kExpected = "octal permission bits between 0 and 0777, e.g. 0444";
  std::string_view digits = text;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'o' || digits[1] == 'O')) {
    digits.remove_prefix(2);
  }
  if (digits.empty() || digits.size() > 12) return Invalid(option, text, kExpected);
  uint32_t mode = 0;
  for (char c : digits) {
    if (c < '0' || c > '7') return Invalid(option, text, kExpected);
    mode = mode * 8 + static_cast<uint32_t>(c - '0');
    if (mode > 0777) {
      return Invalid(option, text, "at most 0777 (setuid, setgid and sticky bits are not allowed)");
    }
  }
  return mode;
}

Result<int64_t> ParseInteger(std::string_view option, std::string_view text, int64_t min,
                             int64_t max) {
  std::string expected =
      "an integer between " + std::to_string(min) + " and " + std::to_string(max);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return Invalid(option, text, expected);
  }
  if (v < min || v > max) return Invalid(option, text, expected);
  return v;
}

namespace {

Status ValidateBucket(std::string_view bucket, std::string_view source) {
  auto bad = [&](std::string_view why) {
    return Status(ErrorCode::kInvalidArgument,
                  "bucket in '" + std::string(source) + "': '" + std::string(bucket) + "' " +
                      std::string(why) +
                      " (bucket names are 3-63 characters: lowercase letters, digits, '-' "
                      "and '.', starting and ending with a letter or digit)");
  };
  if (bucket.empty()) return bad("is empty");
  if (bucket.size() < 3 || bucket.size() > 63) return bad("has the wrong length");
  for (char c : bucket) {
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.')) {
      return bad("contains a character that is not allowed");
    }
  }
  auto alnum = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c));
  };
  if (!alnum(bucket.front()) || !alnum(bucket.back())) {
    return bad("must start and end with a letter or digit");
  }
  return Status::Ok();
}

// "/a/b" or "a/b/" -> "a/b/"; "" or "/" -> "".
Result<std::string> NormalizePrefix(std::string_view raw, std::string_view source) {
  std::string_view p = raw;
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  if (p.empty()) return std::string();
  std::string out;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    std::string_view comp = p.substr(start, end - start);
    if (comp.empty() || comp == "." || comp == "..") {
      return Status(
          ErrorCode::kInvalidArgument,
          "prefix in '" + std::string(source) + "': path components may not be empty, '.' or '..'");
    }
    if (comp.size() > 255) {
      return Status(ErrorCode::kInvalidArgument, "prefix in '" + std::string(source) +
                                                     "': a path component is longer than 255 "
                                                     "bytes");
    }
    out.append(comp);
    out.push_back('/');
    start = end + 1;
  }
  return out;
}

}  // namespace

Result<MountSource> ParseMountSource(std::string_view text) {
  MountSource src;
  std::string_view bucket;
  std::string_view prefix;
  std::string lower = Lower(text.substr(0, std::min<size_t>(text.size(), 6)));
  size_t scheme_len = 0;
  if (lower.rfind("oss://", 0) == 0) {
    src.url_protocol = Protocol::kOss;
    scheme_len = 6;
  } else if (lower.rfind("s3://", 0) == 0) {
    src.url_protocol = Protocol::kS3;
    scheme_len = 5;
  } else if (text.find("://") != std::string_view::npos) {
    return Status(ErrorCode::kInvalidArgument,
                  "source '" + std::string(text) +
                      "': only oss:// and s3:// URLs are understood (or BUCKET[:/PREFIX])");
  }
  if (scheme_len > 0) {
    std::string_view rest = text.substr(scheme_len);
    size_t slash = rest.find('/');
    bucket = rest.substr(0, slash);
    if (slash != std::string_view::npos) prefix = rest.substr(slash);
  } else {
    size_t colon = text.find(':');
    bucket = text.substr(0, colon);
    if (colon != std::string_view::npos) prefix = text.substr(colon + 1);
  }
  if (Status st = ValidateBucket(bucket, text); !st.ok()) return st;
  auto normalized = NormalizePrefix(prefix, text);
  if (!normalized.ok()) return normalized.status();
  src.bucket = std::string(bucket);
  src.prefix = std::move(*normalized);
  return src;
}

Result<std::string> ParseEndpoint(std::string_view option_view, std::string_view text) {
  const std::string option(option_view);
  std::string endpoint(text);
  size_t scheme = endpoint.find("://");
  size_t host_start = scheme == std::string::npos ? 0 : scheme + 3;
  while (endpoint.size() > host_start && endpoint.back() == '/') endpoint.pop_back();
  if (endpoint.empty()) return InvalidOption(option + ": is empty");
  std::string host = endpoint;
  if (scheme != std::string::npos) {
    std::string s = endpoint.substr(0, scheme);
    if (s != "http" && s != "https") {
      return InvalidOption(option + ": '" + endpoint + "' has scheme '" + s +
                           "'; use http://, https:// or a bare host name");
    }
    host = endpoint.substr(scheme + 3);
  }
  if (host.empty() || host.find_first_of(" /?#@") != std::string::npos) {
    return InvalidOption(option + ": '" + endpoint +
                         "' is not an endpoint; expected a host[:port] with an optional http:// or "
                         "https://, e.g. oss-cn-beijing.aliyuncs.com");
  }
  return endpoint;
}

std::string RegionFromEndpoint(std::string_view endpoint) {
  std::string host = Lower(endpoint);
  if (size_t p = host.find("://"); p != std::string::npos) host = host.substr(p + 3);
  if (size_t p = host.find_first_of("/:"); p != std::string::npos) host.resize(p);
  auto strip_internal = [](std::string r) {
    constexpr std::string_view kInternal = "-internal";
    if (r.size() > kInternal.size() &&
        r.compare(r.size() - kInternal.size(), kInternal.size(), kInternal) == 0) {
      r.resize(r.size() - kInternal.size());
    }
    return r;
  };
  constexpr std::string_view kAliyun = ".aliyuncs.com";
  if (host.size() <= kAliyun.size() ||
      host.compare(host.size() - kAliyun.size(), kAliyun.size(), kAliyun) != 0) {
    return "";
  }
  std::string head = host.substr(0, host.size() - kAliyun.size());
  // <region>[-internal].oss-data-acc
  constexpr std::string_view kAcc = ".oss-data-acc";
  if (head.size() > kAcc.size() &&
      head.compare(head.size() - kAcc.size(), kAcc.size(), kAcc) == 0) {
    return strip_internal(head.substr(0, head.size() - kAcc.size()));
  }
  if (head.rfind("s3.", 0) == 0) head = head.substr(3);
  // oss-<region>[-internal]; "oss-accelerate" and friends carry no region.
  if (head.rfind("oss-", 0) == 0 && head.find('.') == std::string::npos) {
    std::string region = strip_internal(head.substr(4));
    if (region.rfind("accelerate", 0) == 0) return "";
    return region;
  }
  // <region>.oss (dual stack)
  constexpr std::string_view kDual = ".oss";
  if (head.size() > kDual.size() &&
      head.compare(head.size() - kDual.size(), kDual.size(), kDual) == 0 &&
      head.find('.') == head.size() - kDual.size()) {
    return head.substr(0, head.size() - kDual.size());
  }
  return "";
}

}  // namespace ossmount::config
