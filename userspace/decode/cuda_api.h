// The table of probed CUDA driver API symbols: for each, how it is probed and
// what its raw arguments mean. The BPF side only copies registers, stack
// slots, one out-value and one blob; this table turns them into typed rows.
// Prototypes: shared/abi-reference.md §4.2 (cuda.h 13.0).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace gpuobs {

enum class Family : uint8_t { launch, memory, copy, memset, stream, event, sync, module };
enum class ProbeKind : uint8_t {
  launch,       // cu_launch_kernel: 11-argument launch, entry only
  launch_ex,    // cu_launch_kernel_ex: CUlaunchConfig, entry only
  entry,        // cu_call: entry only (launch-like, hot path)
  entry_return,  // cu_call_enter + cu_call_exit: result, blocked time, out-value
  launch_dim3    // cu_call: a launch taking dim3 by value (hipLaunchKernel: grid and block in 2 registers each)
};

// Argument positions are 1-based; 0 = the call has no such argument.
struct ApiSpec {
  uint16_t id;
  std::string_view symbol;
  Family family;
  std::string_view op;    // alloc, free, copy, memset, create, destroy, record, wait_event, ...
  std::string_view kind;  // memory kind, copy direction, sync target, name kind
  ProbeKind probe;
  uint8_t out_arg = 0;    // read *(u64 *)arg at return
  uint8_t blob_arg = 0;   // copied at entry
  uint8_t blob_kind = 0;  // GPUOBS_BLOB_*
  uint16_t blob_len = 0;
  uint8_t dst = 0;        // address written / freed / first operand
  uint8_t src = 0;
  uint8_t bytes = 0;      // size in bytes (or elements for memsets, width for 2D)
  uint8_t count = 0;      // multiplies bytes (2D height, pitch allocations)
  uint8_t stream = 0;
  uint8_t event = 0;
  uint8_t handle = 0;     // module, library, kernel, graph, pool, context, host function
  uint8_t flags = 0;
  uint8_t value = 0;      // memset value, stream priority
  uint8_t elem = 1;       // memset element size in bytes
  bool per_thread = false;  // a _ptsz/_ptds variant: stream 0 means the per-thread stream
  uint8_t dir_arg = 0;    // the argument holding a copy direction (hipMemcpyKind)
  bool no_result = false; // returns void: the return probe's eax means nothing
  std::string_view vendor = "cuda";  // "cuda" (libcuda.so) or "hip" (libamdhip64.so)
};

// The CUDA driver API table (libcuda.so.1) and the HIP runtime table
// (libamdhip64.so, decode/hip_api.cpp; ids from 1001). Ids are unique across both.
std::span<const ApiSpec> cuda_api_table();
std::span<const ApiSpec> hip_api_table();
const ApiSpec* api_by_id(uint32_t id);
std::string_view api_name(uint32_t id);  // "unknown" when in neither table

}  // namespace gpuobs
