// Range header evaluation in the three flavours the server speaks.
//
// kOssLegacy (no x-oss-range-behavior header): a range outside the object is ignored and
// the whole object comes back with 200. kOssStandard (x-oss-range-behavior: standard) and
// kS3: a range starting at or past the end is 416; one running past the end is clamped
// (206). In every mode a malformed header (bad syntax, first > last) is ignored (200), and
// only the first range of a multi-range header is served.
#pragma once

#include <cstdint>
#include <string_view>

namespace ossmount::testserver {

enum class RangeMode { kOssLegacy, kOssStandard, kS3 };

struct RangeResult {
  enum class Kind { kWhole, kPartial, kUnsatisfiable } kind = Kind::kWhole;
  uint64_t first = 0;
  uint64_t last = 0;  // inclusive; meaningful for kPartial
};

RangeResult EvaluateRange(std::string_view header, uint64_t size, RangeMode mode);

}  // namespace ossmount::testserver
