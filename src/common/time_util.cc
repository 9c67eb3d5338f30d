#include "common/time_util.h"

#include <cstdio>
#include <cstring>
#include <ctime>

namespace ossmount {
namespace {

std::tm ToUtc(SystemTime t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return tm;
}

std::string Format(SystemTime t, const char* fmt) {
  std::tm tm = ToUtc(t);
  char buf[64];
  size_t n = std::strftime(buf, sizeof buf, fmt, &tm);
  return std::string(buf, n);
}

Status BadTime(std::string_view s) {
  return Status(ErrorCode::kProtocol, "unparseable time '" + std::string(s.substr(0, 64)) + "'");
}

bool ParseDigits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

Result<int64_t> FromFields(std::string_view s, int year, int mon, int day, int h, int m, int sec) {
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || h > 23 || m > 59 || sec > 60) {
    return BadTime(s);
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  return static_cast<int64_t>(timegm(&tm));
}

}  // namespace

std::string FormatRfc1123(SystemTime t) {
  // strftime's %a/%b follow the locale; the wire format needs the C names.
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::tm tm = ToUtc(t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday],
                tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  return buf;
}

std::string FormatIso8601Basic(SystemTime t) { return Format(t, "%Y%m%dT%H%M%SZ"); }
std::string FormatYyyymmdd(SystemTime t) { return Format(t, "%Y%m%d"); }
std::string FormatIso8601(SystemTime t) { return Format(t, "%Y-%m-%dT%H:%M:%SZ"); }

Result<int64_t> ParseRfc1123(std::string_view s) {
  // "Wed, 28 Dec 2022 10:27:41 GMT"
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (s.size() < 29 || s[3] != ',' || s.substr(26, 3) != "GMT") return BadTime(s);
  int day, year, h, m, sec;
  if (!ParseDigits(s, 5, 2, &day) || !ParseDigits(s, 12, 4, &year) || !ParseDigits(s, 17, 2, &h) ||
      !ParseDigits(s, 20, 2, &m) || !ParseDigits(s, 23, 2, &sec)) {
    return BadTime(s);
  }
  int mon = 0;
  for (int i = 0; i < 12; ++i) {
    if (s.substr(8, 3) == kMonths[i]) mon = i + 1;
  }
  if (mon == 0) return BadTime(s);
  return FromFields(s, year, mon, day, h, m, sec);
}

Result<int64_t> ParseIso8601(std::string_view s) {
  int year, mon, day, h, m, sec;
  if (s.size() >= 16 && s[8] == 'T') {  // basic: 20231012T020353Z
    if (!ParseDigits(s, 0, 4, &year) || !ParseDigits(s, 4, 2, &mon) ||
        !ParseDigits(s, 6, 2, &day) || !ParseDigits(s, 9, 2, &h) || !ParseDigits(s, 11, 2, &m) ||
        !ParseDigits(s, 13, 2, &sec)) {
      return BadTime(s);
    }
    return FromFields(s, year, mon, day, h, m, sec);
  }
  // extended: 2023-10-12T02:03:53[.000]Z
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') ||
      s[13] != ':' || s[16] != ':') {
    return BadTime(s);
  }
  if (!ParseDigits(s, 0, 4, &year) || !ParseDigits(s, 5, 2, &mon) || !ParseDigits(s, 8, 2, &day) ||
      !ParseDigits(s, 11, 2, &h) || !ParseDigits(s, 14, 2, &m) || !ParseDigits(s, 17, 2, &sec)) {
    return BadTime(s);
  }
  return FromFields(s, year, mon, day, h, m, sec);
}

Result<SystemTime> SystemTimeFromUnix(int64_t unix_seconds) {
  using std::chrono::seconds;
  constexpr int64_t kMax =
      std::chrono::duration_cast<seconds>(SystemTime::max().time_since_epoch()).count();
  constexpr int64_t kMin =
      std::chrono::duration_cast<seconds>(SystemTime::min().time_since_epoch()).count();
  if (unix_seconds > kMax || unix_seconds < kMin) {
    return Status(ErrorCode::kInvalidArgument,
                  "time " + std::to_string(unix_seconds) + " s is outside the representable range");
  }
  return SystemTime(std::chrono::duration_cast<SystemTime::duration>(seconds(unix_seconds)));
}

}  // namespace ossmount
