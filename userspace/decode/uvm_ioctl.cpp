// NVIDIA UVM ioctls on /dev/nvidia-uvm and /dev/nvidia-uvm-tools. The
// commands are raw numbers (no _IOC size or type), so BPF copies nothing
// unless a rule names the size. Numbers and layouts: shared/abi-reference.md §2.
#include <string_view>

#include "decode/driver_ioctl.h"
#include "decode/driver_ioctl_internal.h"

namespace gpuobs {
namespace {

using ioctl_detail::FieldReader;
using ioctl_detail::read_le;

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

constexpr UvmCommand kCommands[] = {
    {1, "UVM_RESERVE_VA", 24, false},
    {2, "UVM_RELEASE_VA", 24, false},
    {3, "UVM_REGION_COMMIT", 48, false},
    {4, "UVM_REGION_DECOMMIT", 24, false},
    {5, "UVM_REGION_SET_STREAM", 48, false},
    {6, "UVM_SET_STREAM_RUNNING", 16, false},
    {7, "UVM_SET_STREAM_STOPPED", 272, false},
    {9, "UVM_RUN_TEST", 0, false},  // removed in 590.44.01
    {10, "UVM_ADD_SESSION", 8, false},
    {11, "UVM_REMOVE_SESSION", 0, false},  // removed in 590.44.01
    {12, "UVM_ENABLE_COUNTERS", 904, false},
    {13, "UVM_MAP_COUNTER", 40, false},
    {14, "UVM_CREATE_EVENT_QUEUE", 40, false},
    {15, "UVM_REMOVE_EVENT_QUEUE", 8, false},
    {16, "UVM_MAP_EVENT_QUEUE", 56, false},
    {17, "UVM_EVENT_CTRL", 16, false},
    {18, "UVM_REGISTER_MPS_SERVER", 0, false},  // removed in 590.44.01
    {19, "UVM_REGISTER_MPS_CLIENT", 0, false},  // removed in 590.44.01
    {20, "UVM_GET_GPU_UUID_TABLE", 520, false},
    {21, "UVM_REGION_SET_BACKING", 0, false},    // Windows only
    {22, "UVM_REGION_UNSET_BACKING", 0, false},  // Windows only
    {23, "UVM_CREATE_RANGE_GROUP", 16, true},
    {24, "UVM_DESTROY_RANGE_GROUP", 16, true},
    {25, "UVM_REGISTER_GPU_VASPACE", 32, true},
    {26, "UVM_UNREGISTER_GPU_VASPACE", 20, true},
    {27, "UVM_REGISTER_CHANNEL", 56, true},
    {28, "UVM_UNREGISTER_CHANNEL", 12, true},
    {29, "UVM_ENABLE_PEER_ACCESS", 36, true},
    {30, "UVM_DISABLE_PEER_ACCESS", 36, true},
    {31, "UVM_SET_RANGE_GROUP", 32, true},
    {33, "UVM_MAP_EXTERNAL_ALLOCATION", 9264, true},  // 1200 before 550.40.53
    {34, "UVM_FREE", 16, true},                       // 24 before 590.44.01
    {35, "UVM_MEM_MAP", 24, false},
    {36, "UVM_DEBUG_ACCESS_MEMORY", 0, false},  // removed in 575.51.02
    {37, "UVM_REGISTER_GPU", 40, true},
    {38, "UVM_UNREGISTER_GPU", 20, true},
    {39, "UVM_PAGEABLE_MEM_ACCESS", 8, true},
    {40, "UVM_PREVENT_MIGRATION_RANGE_GROUPS", 272, true},
    {41, "UVM_ALLOW_MIGRATION_RANGE_GROUPS", 272, true},
    {42, "UVM_SET_PREFERRED_LOCATION", 40, true},
    {43, "UVM_UNSET_PREFERRED_LOCATION", 24, true},
    {44, "UVM_ENABLE_READ_DUPLICATION", 24, true},
    {45, "UVM_DISABLE_READ_DUPLICATION", 24, true},
    {46, "UVM_SET_ACCESSED_BY", 40, true},
    {47, "UVM_UNSET_ACCESSED_BY", 40, true},
    {51, "UVM_MIGRATE", 80, true},
    {53, "UVM_MIGRATE_RANGE_GROUP", 32, true},
    {54, "UVM_ENABLE_SYSTEM_WIDE_ATOMICS", 0, true},   // removed in 595.44.02
    {55, "UVM_DISABLE_SYSTEM_WIDE_ATOMICS", 0, true},  // removed in 595.44.02
    {56, "UVM_TOOLS_INIT_EVENT_TRACKER", 56, true},
    {57, "UVM_TOOLS_SET_NOTIFICATION_THRESHOLD", 8, true},
    {58, "UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS", 16, true},
    {59, "UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS", 16, true},
    {60, "UVM_TOOLS_ENABLE_COUNTERS", 16, true},
    {61, "UVM_TOOLS_DISABLE_COUNTERS", 16, true},
    {62, "UVM_TOOLS_READ_PROCESS_MEMORY", 40, true},
    {63, "UVM_TOOLS_WRITE_PROCESS_MEMORY", 40, true},
    {64, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE", 16, true},
    {65, "UVM_MAP_DYNAMIC_PARALLELISM_REGION", 40, true},
    {66, "UVM_UNMAP_EXTERNAL", 40, true},
    {67, "UVM_TOOLS_FLUSH_EVENTS", 4, true},
    {68, "UVM_ALLOC_SEMAPHORE_POOL", 9248, true},  // 1184 before 550.40.53
    {69, "UVM_CLEAN_UP_ZOMBIE_RESOURCES", 4, true},
    {70, "UVM_PAGEABLE_MEM_ACCESS_ON_GPU", 24, true},
    {71, "UVM_POPULATE_PAGEABLE", 24, true},
    {72, "UVM_VALIDATE_VA_RANGE", 24, true},
    {73, "UVM_CREATE_EXTERNAL_RANGE", 24, true},
    {74, "UVM_MAP_EXTERNAL_SPARSE", 40, true},
    {75, "UVM_MM_INITIALIZE", 8, true},                       // since 535.43.02
    {76, "UVM_TOOLS_INIT_EVENT_TRACKER_V2", 56, true},        // since 565.57.01
    {77, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2", 16, true},  // since 565.57.01
    {78, "UVM_ALLOC_DEVICE_P2P", 56, true},                   // since 565.57.01
    {79, "UVM_CLEAR_ALL_ACCESS_COUNTERS", 4, true},           // since 565.57.01
    {80, "UVM_DISCARD", 32, true},                            // since 580.65.06
    {2047, "UVM_IS_8_SUPPORTED", 8, false},
    {0x30000001, "UVM_INITIALIZE", 16, true},
    {0x30000002, "UVM_DEINITIALIZE", 0, true},
};

const UvmCommand* find_command(uint32_t cmd) {
  for (const UvmCommand& c : kCommands)
    if (c.number == cmd) return &c;
  return nullptr;
}

// UVM_MAX_GPUS went from 32 to 256 in 550.40.53, which moved every field
// after the perGpuAttributes array (§2).
bool uvm_max_gpus_256(const NvidiaVersion& v) { return v.at_least(550, 40, 53); }
// UVM_FREE lost its length field in 590.44.01.
bool uvm_free_has_length(const NvidiaVersion& v) { return !v.at_least(590, 44, 1); }
// UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS had another layout in 550.40.53 - 560.x.
bool tools_tracker_layout_known(const NvidiaVersion& v) { return !(v.at_least(550, 40, 53) && !v.at_least(565, 0, 0)); }

// The params size this driver version uses; 0 when not known.
uint32_t params_size(const UvmCommand& c, const NvidiaVersion& v) {
  switch (c.number) {
    case kMapExternalAllocation: return uvm_max_gpus_256(v) ? 9264 : 1200;
    case kAllocSemaphorePool: return uvm_max_gpus_256(v) ? 9248 : 1184;
    case kFree: return uvm_free_has_length(v) ? 24 : 16;
    case kToolsInitEventTracker:
    case kToolsInitEventTrackerV2: return tools_tracker_layout_known(v) ? c.size : 0;
    default: return c.size;
  }
}

// The two structs too large for the head: the first fields come with the
// head, the fields after the per-GPU array (from gpuAttributesCount) as aux.
constexpr uint16_t kLargeHeadLen = 24;
uint32_t large_aux_off(uint32_t cmd, const NvidiaVersion& v) {
  if (cmd == kMapExternalAllocation) return uvm_max_gpus_256(v) ? 9240 : 1176;
  return uvm_max_gpus_256(v) ? 9232 : 1168;  // kAllocSemaphorePool
}

std::optional<uint32_t> u32_at(std::string_view b, size_t off) {
  auto v = read_le(b, off, 4);
  return v ? std::optional<uint32_t>(uint32_t(*v)) : std::nullopt;
}

// Decodes the fields; returns the rmStatus when the copy holds it.
std::optional<uint32_t> decode_params(const IoctlCapture& c, uint32_t size, nlohmann::json& f) {
  const NvidiaVersion& v = c.nvidia;
  FieldReader r(c.head, f);
  switch (c.cmd) {
    case kInitialize: r.u64("flags", 0); return u32_at(c.head, 8);
    case kMmInitialize: r.s32("uvmFd", 0); return u32_at(c.head, 4);
    case kRegisterGpu:
      r.uuid("gpu_uuid", 0);
      r.nv_bool("numaEnabled", 16);
      r.s32("numaNodeId", 20);
      r.s32("rmCtrlFd", 24);
      r.u32("hClient", 28);
      r.u32("hSmcPartRef", 32);
      return u32_at(c.head, 36);
    case kRegisterGpuVaspace:
      r.uuid("gpuUuid", 0);
      r.s32("rmCtrlFd", 16);
      r.u32("hClient", 20);
      r.u32("hVaSpace", 24);
      return u32_at(c.head, 28);
    case kRegisterChannel:
      r.uuid("gpuUuid", 0);
      r.s32("rmCtrlFd", 16);
      r.u32("hClient", 20);
      r.u32("hChannel", 24);
      r.u64("base", 32);
      r.u64("length", 40);
      return u32_at(c.head, 48);
    case kCreateRangeGroup:
    case kDestroyRangeGroup: r.u64("rangeGroupId", 0); return u32_at(c.head, 8);
    case kCreateExternalRange:
      r.u64("base", 0);
      r.u64("length", 8);
      return u32_at(c.head, 16);
    case kMapExternalAllocation: {
      r.u64("base", 0);
      r.u64("length", 8);
      r.u64("offset", 16);
      FieldReader tail(c.aux, f);  // from gpuAttributesCount on
      tail.u64("gpuAttributesCount", 0);
      tail.s32("rmCtrlFd", 8);
      tail.u32("hClient", 12);
      tail.u32("hMemory", 16);
      return u32_at(c.aux, 20);
    }
    case kAllocSemaphorePool: {
      r.u64("base", 0);
      r.u64("length", 8);
      FieldReader tail(c.aux, f);
      tail.u64("gpuAttributesCount", 0);
      return u32_at(c.aux, 8);
    }
    case kFree:
      r.u64("base", 0);
      if (!uvm_free_has_length(v)) return u32_at(c.head, 8);
      r.u64("length", 8);
      return u32_at(c.head, 16);
    case kMigrate:
      r.u64("base", 0);
      r.u64("length", 8);
      r.uuid("destinationUuid", 16);
      r.u32("flags", 32);
      r.u64("semaphoreAddress", 40);
      r.u32("semaphorePayload", 48);
      r.s32("cpuNumaNode", 52);
      r.u64("userSpaceStart", 56);
      r.u64("userSpaceLength", 64);
      return u32_at(c.head, 72);
    case kSetPreferredLocation:
      r.u64("requestedBase", 0);
      r.u64("length", 8);
      r.uuid("preferredLocation", 16);
      if (!v.at_least(550, 40, 7)) return u32_at(c.head, 32);
      r.s32("preferredCpuNumaNode", 32);
      return u32_at(c.head, 36);
    case kSetAccessedBy:
      r.u64("requestedBase", 0);
      r.u64("length", 8);
      r.uuid("accessedByUuid", 16);
      return u32_at(c.head, 32);
    case kUnmapExternal:
      r.u64("base", 0);
      r.u64("length", 8);
      r.uuid("gpuUuid", 16);
      return u32_at(c.head, 32);
    case kPageableMemAccess: r.nv_bool("pageableMemAccess", 0); return u32_at(c.head, 4);
    case kToolsInitEventTracker:
    case kToolsInitEventTrackerV2:
      if (!tools_tracker_layout_known(v)) return std::nullopt;
      r.u64("queueBuffer", 0);
      r.u64("queueBufferSize", 8);
      r.u64("controlBuffer", 16);
      r.uuid("processor", 24);
      r.u32("allProcessors", 40);
      r.s32("uvmFd", 44);
      return u32_at(c.head, 48);
    default:
      // Every params struct ends with rmStatus. One whose size is not a
      // multiple of 8 has no 8-byte member, hence no tail padding: its
      // last four bytes are rmStatus.
      if (size % 8 != 0) return u32_at(c.head, size - 4);
      return std::nullopt;
  }
}

}  // namespace

namespace ioctl_detail {

void decode_uvm(const IoctlCapture& c, DecodedIoctl& d) {
  if (const UvmCommand* cmd = find_command(c.cmd)) {
    d.request = std::string(cmd->name);
    if (cmd->routed) set_nv_status(d, decode_params(c, params_size(*cmd, c.nvidia), d.fields));
  }
  d.failed = c.ret < 0 || (d.status && nv_status_is_error(uint32_t(*d.status)));
}

void add_uvm_rules(const NvidiaVersion& v, std::vector<IoctlRuleEntry>& rules) {
  for (const UvmCommand& c : kCommands) {
    if (!c.routed) continue;
    gpuobs_ioctl_rule_key key{.driver = GPUOBS_DRV_NVIDIA_UVM, .cmd_key = c.number};
    if (c.number == kMapExternalAllocation || c.number == kAllocSemaphorePool) {
      uint32_t off = large_aux_off(c.number, v);
      auto aux_len = uint16_t(params_size(c, v) - off);
      rules.push_back({key, ioctl_detail::ioctl_rule(kLargeHeadLen, GPUOBS_IOCTL_AUX_ARG, uint16_t(off), aux_len)});
      continue;
    }
    uint32_t size = params_size(c, v);
    if (size == 0 || size > GPUOBS_IOCTL_HEAD_MAX) continue;  // unknown, or past what the head holds
    rules.push_back({key, ioctl_detail::ioctl_rule(uint16_t(size))});
  }
}

}  // namespace ioctl_detail
}  // namespace gpuobs
