// Time formats on the wire: RFC 1123 (Date, Last-Modified), ISO 8601 basic (x-oss-date,
// x-amz-date) and ISO 8601 extended (listing LastModified, credential Expiration).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "ossmount/status.h"

namespace ossmount {

using SystemTime = std::chrono::system_clock::time_point;

// Seconds since the Unix epoch, now (an mtime this mount gives what it writes).
inline int64_t UnixSecondsNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "Wed, 28 Dec 2022 10:27:41 GMT"
std::string FormatRfc1123(SystemTime t);
// "20231216T162057Z"
std::string FormatIso8601Basic(SystemTime t);
// "20231216"
std::string FormatYyyymmdd(SystemTime t);
// "2023-12-16T16:20:57Z"
std::string FormatIso8601(SystemTime t);

// Unix seconds from "Wed, 28 Dec 2022 10:27:41 GMT".
Result<int64_t> ParseRfc1123(std::string_view s);
// Unix seconds from "2023-10-12T02:03:53.000Z", "2023-10-12T02:03:53Z" or
// "20231012T020353Z". Fractions are dropped.
Result<int64_t> ParseIso8601(std::string_view s);

// The SystemTime of `unix_seconds`, or kInvalidArgument when it cannot be represented:
// system_clock counts nanoseconds in 64 bits, so only about 1678..2262 fits. Parsers accept
// 4-digit years up to 9999; converting those unchecked would overflow (undefined behaviour).
Result<SystemTime> SystemTimeFromUnix(int64_t unix_seconds);

}  // namespace ossmount
