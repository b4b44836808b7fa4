// A byte count as people read it ("512 B", "16.0 KiB", "2.4 GiB"): gpuobs
// status and gpuobs summary print sizes the same way.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace gpuobs {

inline std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

}  // namespace gpuobs
