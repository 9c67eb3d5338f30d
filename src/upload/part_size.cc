#include <algorithm>

#include "upload/upload_options.h"

namespace ossmount::upload {

uint64_t PartSizeFor(int part_number, uint64_t base) {
  constexpr uint64_t kMaxPart = 5ull << 30;
  const int doublings = std::clamp((part_number - 1) / 1000, 0, 9);
  return std::min(kMaxPart, std::max<uint64_t>(base, 1) << doublings);
}

}  // namespace ossmount::upload
