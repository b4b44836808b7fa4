// A kernel launch as the capture stores it, decoded from whichever record the
// probe produced: the 11-argument cuLaunchKernel record (gpuobs_launch), a
// cuLaunchKernelEx CUlaunchConfig blob, or a HIP launch taking dim3 by value.
// Pure: bytes in, values out; the store only binds them (store/launch_rows.h).
#pragma once

#include <cstdint>

#include "catalogue/api_spec.h"
#include "decode/decoder.h"
#include "events.h"

namespace gpuobs {

struct LaunchRecord {
  uint32_t api = 0;  // ApiSpec id (GPUOBS_API_*); api_name() gives the symbol
  uint64_t function = 0;
  uint32_t grid[3] = {0, 0, 0};   // blocks
  uint32_t block[3] = {0, 0, 0};  // threads per block
  uint64_t shared_mem_bytes = 0;
  uint64_t stream = 0;
  uint64_t kernel_params = 0;  // pointer values only
  uint64_t extra = 0;
  bool args_complete = true;  // false: stack arguments or the launch config were unreadable
  bool cooperative = false;
  bool per_thread_stream = false;
  bool has_cluster = false;  // cuLaunchKernelEx set CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
  uint32_t cluster[3] = {0, 0, 0};
  uint32_t attributes = 0;  // cuLaunchKernelEx numAttrs
};

// cuLaunchKernel(_ptsz), cuLaunchCooperativeKernel and hipExtModuleLaunchKernel
// (grid given in threads: turned into blocks here).
LaunchRecord decode_launch(const gpuobs_launch& l);
// A launch probed as an API call: cuLaunchKernelEx (ProbeKind::launch_ex) or
// hipLaunchKernel-style dim3 launches (ProbeKind::launch_dim3).
LaunchRecord decode_launch(const ApiCallEvent& e, const ApiSpec& s);

}  // namespace gpuobs
