#include "catalogue/uvm_commands.h"

namespace gpuobs::uvm {
namespace {

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

}  // namespace

std::span<const UvmCommand> commands() { return kCommands; }

const UvmCommand* find_command(uint32_t cmd) {
  for (const UvmCommand& c : kCommands)
    if (c.number == cmd) return &c;
  return nullptr;
}

bool uvm_max_gpus_256(const NvidiaVersion& v) { return v.at_least(550, 40, 53); }
bool uvm_free_has_length(const NvidiaVersion& v) { return !v.at_least(590, 44, 1); }
bool tools_tracker_layout_known(const NvidiaVersion& v) { return !(v.at_least(550, 40, 53) && !v.at_least(565, 0, 0)); }

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

uint32_t large_aux_off(uint32_t cmd, const NvidiaVersion& v) {
  if (cmd == kMapExternalAllocation) return uvm_max_gpus_256(v) ? 9240 : 1176;
  return uvm_max_gpus_256(v) ? 9232 : 1168;  // kAllocSemaphorePool
}

}  // namespace gpuobs::uvm
