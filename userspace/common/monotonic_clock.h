// CLOCK_MONOTONIC in nanoseconds: the clock of every record's timestamp
// (bpf_ktime_get_ns), so user space compares its own times with them.
#pragma once

#include <time.h>

#include <cstdint>

namespace gpuobs {

inline int64_t monotonic_now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

}  // namespace gpuobs
