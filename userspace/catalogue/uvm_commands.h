// NVIDIA UVM commands (/dev/nvidia-uvm, /dev/nvidia-uvm-tools): numbers,
// names and parameter sizes by driver version. The commands are raw numbers
// (no _IOC size or type), so what BPF copies comes from this table
// (catalogue/ioctl_rules.cpp) and the decoder (decode/uvm_ioctl.cpp) reads
// the same sizes. Numbers and layouts: docs/reference/abi-reference.md §2.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "catalogue/driver_catalogue.h"

namespace gpuobs::uvm {

enum UvmCmd : uint32_t {
  kCreateRangeGroup = 23,
  kDestroyRangeGroup = 24,
  kRegisterGpuVaspace = 25,
  kRegisterChannel = 27,
  kMapExternalAllocation = 33,
  kFree = 34,
  kRegisterGpu = 37,
  kPageableMemAccess = 39,
  kSetPreferredLocation = 42,
  kSetAccessedBy = 46,
  kMigrate = 51,
  kToolsInitEventTracker = 56,
  kUnmapExternal = 66,
  kAllocSemaphorePool = 68,
  kCreateExternalRange = 73,
  kMmInitialize = 75,
  kToolsInitEventTrackerV2 = 76,
  kInitialize = 0x30000001,
};

struct UvmCommand {
  uint32_t number;
  std::string_view name;
  uint32_t size;  // params size at 595.45.04; 0 when the reference gives none
  bool routed;    // handled by the Linux driver (uvm.c, uvm_tools.c); the others fail
};

const UvmCommand* find_command(uint32_t cmd);
std::span<const UvmCommand> commands();

// UVM_MAX_GPUS went from 32 to 256 in 550.40.53, which moved every field
// after the perGpuAttributes array (§2).
bool uvm_max_gpus_256(const NvidiaVersion& v);
// UVM_FREE lost its length field in 590.44.01.
bool uvm_free_has_length(const NvidiaVersion& v);
// UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS had another layout in 550.40.53 - 560.x.
bool tools_tracker_layout_known(const NvidiaVersion& v);

// The params size this driver version uses; 0 when not known.
uint32_t params_size(const UvmCommand& c, const NvidiaVersion& v);

// The two structs too large for the head: the first fields come with the
// head, the fields after the per-GPU array (from gpuAttributesCount) as aux.
constexpr uint16_t kLargeHeadLen = 24;
uint32_t large_aux_off(uint32_t cmd, const NvidiaVersion& v);

}  // namespace gpuobs::uvm
