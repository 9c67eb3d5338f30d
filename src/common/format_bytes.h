// Byte counts for people: "512 B", "1.5 MiB", "3.2 GiB" (binary units, one decimal above B).
// Used by progress and status output (ossmount stats, ossmount warmup, prefetch messages).
#pragma once

#include <cstdio>
#include <string>

namespace ossmount {

inline std::string FormatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

}  // namespace ossmount
