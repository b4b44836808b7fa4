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

// The CPU time the calling thread has used, ns (what a thread of gpuobs
// itself costs: the GPU metrics sampler counts its own).
inline uint64_t thread_cpu_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return uint64_t(t.tv_sec) * 1'000'000'000 + uint64_t(t.tv_nsec);
}

}  // namespace gpuobs
