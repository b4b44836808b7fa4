// The catalogue of probed GPU API symbols: for each, how it is probed and
// what its raw arguments mean. The BPF side only copies registers, stack
// slots, one out-value and one blob; decode/api_record.cpp turns them into
// typed records with this table. It sits below loader, decode and store, which
// all read it (docs/design.md, layers).
// Prototypes: docs/reference/abi-reference.md §4.2 (cuda.h 13.0), §5.2 (HIP).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace gpuobs {

enum class Family : uint8_t { launch, memory, copy, memset, stream, event, sync, module, collective, context };
enum class ProbeKind : uint8_t {
  launch,        // cu_launch_kernel: 11-argument launch, entry only
  launch_ex,     // cu_launch_kernel_ex: CUlaunchConfig, entry only
  entry,         // cu_call: entry only (launch-like, hot path)
  entry_return,  // cu_call_enter + cu_call_exit: result, blocked time, out-value
  launch_dim3,   // cu_call: a launch taking dim3 by value (hipLaunchKernel: grid and block in 2 registers each)
  // outer_call_enter + outer_call_exit: entry_return for a library whose
  // calls make probed libcuda calls before they return (NCCL): its entries
  // are kept in a map of their own, so a nested call cannot replace them.
  outer_entry_return,
  // ze_launch_kernel: a launch whose group count is a struct behind argument
  // blob_arg (Level Zero); entry only, emitted as a launch record with the
  // kernel's group size (bpf/level_zero.bpf.h). No blob: the count is not read.
  launch_group_count,
  group_size,  // ze_set_group_size: zeKernelSetGroupSize, kept in BPF for the launches; no record
};

// What a call does. The SQL text of each value (memory_ops.op, gpu_modules.op,
// ...) is to_string(op): C++ compares enums, only the store binds text.
// Grouped by family, one line per group (clang-format would put one value per line).
// clang-format off
enum class ApiOp : uint8_t {
  launch, host_func, graph_launch,                                          // launches
  alloc, free, create, release, map, unmap,                                 // memory
  copy, copy_async, memset, memset_async,                                   // copies
  destroy, wait_event, query, capture_begin, capture_end, record,          // streams, events (and create)
  sync,                                                                     // synchronizations
  load, get_function, get_kernel, kernel_function, register_function,       // modules, kernel names
  init, driver_version, device_get, device_count, device_attribute,         // set-up: driver, devices
  device_total_mem, context_create, context_destroy,                        //   (context_ops, schema 24)
  primary_retain, primary_release, primary_reset, primary_set_flags,        //   primary contexts
};

// The qualifier the row stores next to the op: a memory kind, a copy
// direction, a sync target, a module or name kind, a launch variant.
enum class ApiKind : uint8_t {
  none,                                              // ""
  cooperative, ex, ext, global_size,                 // launches (global_size: HIP work sizes in threads)
  device, pitch, managed, host, async, pool,         // memory_ops.kind
  physical, virtual_,                                // cuMemCreate / cuMemMap ("virtual")
  default_,                                          // copy direction the driver infers ("default")
  HtoD, DtoH, DtoD, DtoA, AtoD, HtoA, AtoH, AtoA, peer,  // copy directions named by the symbol
  two_d, three_d,                                    // "2d", "3d": the direction is in the descriptor
  stream, event, context, fence,                     // sync targets
  function, kernel, module, library,                 // module ops: what the handle is
};

// clang-format on
// libcuda.so, libamdhip64.so, libnccl.so/librccl.so, libze_loader.so
enum class Vendor : uint8_t { cuda, hip, nccl, level_zero };

// What an NCCL call does (Family::collective; catalogue/nccl_api.cpp). Its
// SQL text (nccl_calls.op) is to_string(op).
enum class NcclOp : uint8_t {
  comm_init,
  comm_init_all,
  comm_split,
  comm_destroy,
  comm_abort,
  comm_device,  // communicators
  all_reduce,
  broadcast,
  reduce,
  all_gather,
  reduce_scatter,
  all_to_all,  // collectives
  send,
  recv,  // point to point
  group_start,
  group_end,
  gather,
  scatter,  // collectives (NCCL 2.28)
  comm_rank,
  comm_count,  // communicator queries
};
std::string_view to_string(NcclOp op);

// SQL text of each value: the only place it is spelled.
std::string_view to_string(ApiOp op);
std::string_view to_string(ApiKind kind);
std::string_view to_string(Vendor vendor);

// Argument positions are 1-based; 0 = the call has no such argument.
struct ApiSpec {
  uint16_t id;
  std::string_view symbol;
  Family family;
  ApiOp op;
  ApiKind kind = ApiKind::none;
  ProbeKind probe;
  uint8_t out_arg = 0;    // read *(u64 *)arg at return
  uint8_t blob_arg = 0;   // copied at entry
  uint8_t blob_kind = 0;  // GPUOBS_BLOB_*
  uint16_t blob_len = 0;
  uint8_t dst = 0;  // address written / freed / first operand
  uint8_t src = 0;
  uint8_t bytes = 0;  // size in bytes (or elements for memsets, width for 2D)
  uint8_t count = 0;  // multiplies bytes (2D height, pitch allocations)
  uint8_t stream = 0;
  uint8_t event = 0;
  uint8_t handle = 0;  // module, library, kernel, graph, pool, context, host function
  uint8_t flags = 0;
  uint8_t value = 0;        // memset value, stream priority; set-up: cuDeviceGet's ordinal, the attribute asked
  uint8_t device = 0;       // set-up calls: the CUdevice argument
  uint8_t elem = 1;         // memset element size in bytes
  bool per_thread = false;  // a _ptsz/_ptds variant: stream 0 means the per-thread stream
  uint8_t dir_arg = 0;      // the argument holding a copy direction (hipMemcpyKind)
  // A memset whose pattern is behind a pointer (the blob) and whose width in
  // bytes is this argument (zeCommandListAppendMemoryFill).
  uint8_t value_width_arg = 0;
  bool no_result = false;  // returns void: the return probe's eax means nothing
  Vendor vendor = Vendor::cuda;
  // NCCL (Family::collective): what the call does and where its operands are
  // (count in `bytes`, the communicator in `handle`, the stream in `stream`).
  NcclOp nccl = NcclOp::comm_init;
  uint8_t dtype_arg = 0;  // ncclDataType_t
  uint8_t redop_arg = 0;  // ncclRedOp_t
  uint8_t peer_arg = 0;   // root (broadcast, reduce) or peer (send, recv)
  uint8_t nranks_arg = 0;
  uint8_t rank_arg = 0;
};

// The CUDA driver API table (libcuda.so.1), the HIP runtime table
// (libamdhip64.so, catalogue/hip_api.cpp; ids from 1001) and the NCCL table
// (libnccl.so.2 and RCCL's librccl.so.1, which exports the same API;
// catalogue/nccl_api.cpp; ids from 2001). Ids are unique across all three.
std::span<const ApiSpec> cuda_api_table();
std::span<const ApiSpec> hip_api_table();
std::span<const ApiSpec> nccl_api_table();
// Level Zero (libze_loader.so.1; catalogue/level_zero_api.cpp; ids from 3001).
std::span<const ApiSpec> level_zero_api_table();
// The table for a library file by its name: libamdhip64.so* -> HIP,
// libnccl.so* and librccl.so* -> NCCL, libze_loader.so* -> Level Zero,
// anything else -> CUDA.
std::span<const ApiSpec> api_table_for_library(std::string_view path);
const ApiSpec* api_by_id(uint32_t id);
// By symbol, CUDA's table first (nullptr when in neither): for tests and
// benches that build events by name.
const ApiSpec* api_by_symbol(std::string_view symbol);
std::string_view api_name(uint32_t id);  // "unknown" when in neither table

}  // namespace gpuobs
