// KiB and MiB for test sizes, declared once: the test files of one binary are compiled
// together (a unity build), where two file-local definitions would be ambiguous.
#pragma once

#include <cstdint>

namespace ossmount::testing {

inline constexpr uint64_t KiB = 1024;
inline constexpr uint64_t MiB = 1024 * KiB;

}  // namespace ossmount::testing
