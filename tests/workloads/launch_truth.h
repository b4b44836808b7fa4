// The argument formula of tests/workloads/launch_workload.cpp, shared with the
// tests that check every recorded argument against it.
#pragma once

#include <cstdint>

namespace gpuobs::testing {

struct LaunchArgs {
  uint64_t function;
  uint32_t grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem_bytes;
  uint64_t stream, kernel_params;
  bool ptsz;  // issued through cuLaunchKernel_ptsz
};

// Launch i (0-based) of worker `worker`. grid_x = i + 1 lets a test recover i.
// Values above 2^31 check that 32-bit arguments are not sign-extended.
inline LaunchArgs launch_args(uint32_t worker, uint32_t i) {
  LaunchArgs a;
  a.function = 0x7f0000001000ull + worker * 0x100 + i % 5;
  a.grid_x = i + 1;
  a.grid_y = worker + 1;
  a.grid_z = 0x80000003u;
  a.block_x = 32;
  a.block_y = 2 + i % 3;
  a.block_z = 1 + worker % 2;
  a.shared_mem_bytes = (i * 16) % 49152;
  a.stream = 0x5000 + worker;
  a.kernel_params = 0x600000 + worker * 0x1000 + (i % 7) * 8;
  a.ptsz = i % 4 == 3;
  return a;
}

}  // namespace gpuobs::testing
