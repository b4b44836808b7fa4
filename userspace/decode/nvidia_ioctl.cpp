// NVIDIA resource-manager escapes on /dev/nvidiactl and /dev/nvidiaN.
// Numbers, layouts and version boundaries: docs/reference/abi-reference.md §1.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string_view>

#include "catalogue/nvidia_escapes.h"
#include "decode/driver_ioctl.h"
#include "decode/driver_ioctl_internal.h"

namespace gpuobs {
using namespace nv;  // the escape numbers (catalogue/nvidia_escapes.h)
namespace {

using ioctl_detail::FieldReader;
using ioctl_detail::read_le;

struct Named {
  uint32_t number;
  std::string_view name;
};

template <size_t N>
std::string_view lookup(const Named (&table)[N], uint32_t number) {
  for (const Named& e : table)
    if (e.number == number) return e.name;
  return {};
}

// clang-format off
constexpr Named kEscapes[] = {
    {0x27, "NV_ESC_RM_ALLOC_MEMORY"}, {0x28, "NV_ESC_RM_ALLOC_OBJECT"}, {0x29, "NV_ESC_RM_FREE"},
    {0x2A, "NV_ESC_RM_CONTROL"}, {0x2B, "NV_ESC_RM_ALLOC"}, {0x34, "NV_ESC_RM_DUP_OBJECT"}, {0x35, "NV_ESC_RM_SHARE"},
    {0x39, "NV_ESC_RM_I2C_ACCESS"}, {0x41, "NV_ESC_RM_IDLE_CHANNELS"}, {0x4A, "NV_ESC_RM_VID_HEAP_CONTROL"},
    {0x4D, "NV_ESC_RM_ACCESS_REGISTRY"}, {0x4E, "NV_ESC_RM_MAP_MEMORY"}, {0x4F, "NV_ESC_RM_UNMAP_MEMORY"},
    {0x52, "NV_ESC_RM_GET_EVENT_DATA"}, {0x54, "NV_ESC_RM_ALLOC_CONTEXT_DMA2"},
    {0x56, "NV_ESC_RM_ADD_VBLANK_CALLBACK"}, {0x57, "NV_ESC_RM_MAP_MEMORY_DMA"}, {0x58, "NV_ESC_RM_UNMAP_MEMORY_DMA"},
    {0x59, "NV_ESC_RM_BIND_CONTEXT_DMA"}, {0x5C, "NV_ESC_RM_EXPORT_OBJECT_TO_FD"},
    {0x5D, "NV_ESC_RM_IMPORT_OBJECT_FROM_FD"}, {0x5E, "NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO"},
    {0x5F, "NV_ESC_RM_LOCKLESS_DIAGNOSTIC"}, {0xC8, "NV_ESC_CARD_INFO"}, {0xC9, "NV_ESC_REGISTER_FD"},
    {0xCE, "NV_ESC_ALLOC_OS_EVENT"}, {0xCF, "NV_ESC_FREE_OS_EVENT"}, {0xD1, "NV_ESC_STATUS_CODE"},
    {0xD2, "NV_ESC_CHECK_VERSION_STR"}, {0xD3, "NV_ESC_IOCTL_XFER_CMD"}, {0xD4, "NV_ESC_ATTACH_GPUS_TO_FD"},
    {0xD5, "NV_ESC_QUERY_DEVICE_INTR"}, {0xD6, "NV_ESC_SYS_PARAMS"}, {0xD7, "NV_ESC_NUMA_INFO"},
    {0xD8, "NV_ESC_SET_NUMA_STATUS"}, {0xD9, "NV_ESC_EXPORT_TO_DMABUF_FD"}, {0xDA, "NV_ESC_WAIT_OPEN_COMPLETE"},
};
// clang-format on

// RM classes (§1.6). 0x41 is both NV01_ROOT_CLIENT and NV04_MEMORY; as an
// allocated class it is the client, so that name is kept.
// clang-format off
constexpr Named kClasses[] = {
    {0x0000, "NV01_ROOT"}, {0x0001, "NV01_ROOT_NON_PRIV"}, {0x0041, "NV01_ROOT_CLIENT"},
    {0x0005, "NV01_EVENT"}, {0x0078, "NV01_EVENT_KERNEL_CALLBACK"}, {0x0079, "NV01_EVENT_OS_EVENT"},
    {0x007E, "NV01_EVENT_KERNEL_CALLBACK_EX"}, {0x0080, "NV01_DEVICE_0"}, {0x2080, "NV20_SUBDEVICE_0"},
    {0x2081, "NV2081_BINAPI"}, {0x2082, "NV2082_BINAPI_PRIVILEGED"}, {0x90E6, "GF100_SUBDEVICE_MASTER"},
    {0x00DE, "RM_USER_SHARED_DATA"}, {0x503C, "NV50_THIRD_PARTY_P2P"}, {0x503B, "NV50_P2P"},
    {0x83DE, "GT200_DEBUGGER"}, {0xCB33, "NV_CONFIDENTIAL_COMPUTE"}, {0x00DA, "NV_SEMAPHORE_SURFACE"},
    {0x900E, "MPS_COMPUTE"}, {0xC574, "UVM_CHANNEL_RETAINER"}, {0xC637, "AMPERE_SMC_PARTITION_REF"},
    {0xC638, "AMPERE_SMC_EXEC_PARTITION_REF"}, {0xC639, "AMPERE_SMC_CONFIG_SESSION"},
    {0xC640, "AMPERE_SMC_MONITOR_SESSION"}, {0xB1CC, "MAXWELL_PROFILER_CONTEXT"}, {0xB2CC, "MAXWELL_PROFILER_DEVICE"},
    // Memory. 0x3E is also NV01_CONTEXT_ERROR_TO_MEMORY, 0x70 also NV01_MEMORY_SYSTEM_DYNAMIC.
    {0x003E, "NV01_MEMORY_SYSTEM"}, {0x003F, "NV01_MEMORY_LOCAL_PRIVILEGED"}, {0x0040, "NV01_MEMORY_LOCAL_USER"},
    {0x0070, "NV01_MEMORY_VIRTUAL"}, {0x0071, "NV01_MEMORY_SYSTEM_OS_DESCRIPTOR"}, {0x0081, "NV01_MEMORY_LIST_SYSTEM"},
    {0x0082, "NV01_MEMORY_LIST_FBMEM"}, {0x00B1, "NV01_MEMORY_HW_RESOURCES"}, {0x00C2, "NV01_MEMORY_LOCAL_PHYSICAL"},
    {0x00E0, "NV_MEMORY_EXPORT"}, {0x00F8, "NV_MEMORY_FABRIC"}, {0x00F9, "NV_MEMORY_FABRIC_IMPORT_V2"},
    {0x00FB, "NV_MEMORY_FABRIC_IMPORTED_REF"}, {0x00FD, "NV_MEMORY_MULTICAST_FABRIC"}, {0x00FE, "NV_MEMORY_MAPPER"},
    {0x50A0, "NV50_MEMORY_VIRTUAL"}, {0x90CE, "NV01_MEMORY_DEVICELESS"},
    // VA spaces, TSG, usermode (doorbell page).
    {0x90F1, "FERMI_VASPACE_A"}, {0x00F2, "IO_VASPACE_A"}, {0x00FC, "FABRIC_VASPACE_A"},
    {0x9067, "FERMI_CONTEXT_SHARE_A"}, {0xA06C, "KEPLER_CHANNEL_GROUP_A"}, {0xC361, "VOLTA_USERMODE_A"},
    {0xC461, "TURING_USERMODE_A"}, {0xC561, "AMPERE_USERMODE_A"}, {0xC661, "HOPPER_USERMODE_A"},
    {0xC761, "BLACKWELL_USERMODE_A"},
    // GPFIFO channels.
    {0x906F, "GF100_CHANNEL_GPFIFO"}, {0xA06F, "KEPLER_CHANNEL_GPFIFO_A"}, {0xA16F, "KEPLER_CHANNEL_GPFIFO_B"},
    {0xB06F, "MAXWELL_CHANNEL_GPFIFO_A"}, {0xC06F, "PASCAL_CHANNEL_GPFIFO_A"}, {0xC36F, "VOLTA_CHANNEL_GPFIFO_A"},
    {0xC46F, "TURING_CHANNEL_GPFIFO_A"}, {0xC56F, "AMPERE_CHANNEL_GPFIFO_A"}, {0xC86F, "HOPPER_CHANNEL_GPFIFO_A"},
    {0xC96F, "BLACKWELL_CHANNEL_GPFIFO_A"}, {0xCA6F, "BLACKWELL_CHANNEL_GPFIFO_B"},
    // Compute.
    {0xA0C0, "KEPLER_COMPUTE_A"}, {0xA1C0, "KEPLER_COMPUTE_B"}, {0xB0C0, "MAXWELL_COMPUTE_A"},
    {0xB1C0, "MAXWELL_COMPUTE_B"}, {0xC0C0, "PASCAL_COMPUTE_A"}, {0xC1C0, "PASCAL_COMPUTE_B"},
    {0xC3C0, "VOLTA_COMPUTE_A"}, {0xC4C0, "VOLTA_COMPUTE_B"}, {0xC5C0, "TURING_COMPUTE_A"},
    {0xC6C0, "AMPERE_COMPUTE_A"}, {0xC7C0, "AMPERE_COMPUTE_B"}, {0xC9C0, "ADA_COMPUTE_A"},
    {0xCBC0, "HOPPER_COMPUTE_A"}, {0xCDC0, "BLACKWELL_COMPUTE_A"}, {0xCEC0, "BLACKWELL_COMPUTE_B"},
    // Copy engines.
    {0xA0B5, "KEPLER_DMA_COPY_A"}, {0xB0B5, "MAXWELL_DMA_COPY_A"}, {0xC0B5, "PASCAL_DMA_COPY_A"},
    {0xC1B5, "PASCAL_DMA_COPY_B"}, {0xC3B5, "VOLTA_DMA_COPY_A"}, {0xC5B5, "TURING_DMA_COPY_A"},
    {0xC6B5, "AMPERE_DMA_COPY_A"}, {0xC7B5, "AMPERE_DMA_COPY_B"}, {0xC8B5, "HOPPER_DMA_COPY_A"},
    {0xC9B5, "BLACKWELL_DMA_COPY_A"}, {0xCAB5, "BLACKWELL_DMA_COPY_B"},
    // Graphics 3D.
    {0xC697, "AMPERE_A"}, {0xC797, "AMPERE_B"}, {0xC997, "ADA_A"}, {0xCB97, "HOPPER_A"}, {0xCD97, "BLACKWELL_A"},
    {0xCE97, "BLACKWELL_B"},
    // UVM helpers.
    {0xB069, "MAXWELL_FAULT_BUFFER_A"}, {0xC365, "ACCESS_COUNTER_NOTIFY_BUFFER"}, {0xC369, "MMU_FAULT_BUFFER"},
    {0xC076, "GP100_UVM_SW"},
};
// clang-format on

// Video engines are named after their class number (NVxxB0_VIDEO_DECODER,
// NVxxB7_VIDEO_ENCODER, NVxxD1_VIDEO_NVJPG, NVxxFA_VIDEO_OFA; §1.6).
constexpr Named kVideoSuffixes[] = {
    {0xB0, "VIDEO_DECODER"}, {0xB7, "VIDEO_ENCODER"}, {0xD1, "VIDEO_NVJPG"}, {0xFA, "VIDEO_OFA"}};
bool is_video_class(uint32_t cls) {
  return cls >= 0xA000 && cls <= 0xFFFF && !lookup(kVideoSuffixes, cls & 0xFF).empty();
}

// RM control commands (§1.7), the "A / B" rows of the table written out.
// clang-format off
constexpr Named kControls[] = {
    {0x101, "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION"}, {0x1F0, "NV0000_CTRL_CMD_SYSTEM_GET_FEATURES"},
    {0x13A, "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_MATRIX"}, {0x201, "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS"},
    {0x202, "NV0000_CTRL_CMD_GPU_GET_ID_INFO"}, {0x205, "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2"},
    {0x214, "NV0000_CTRL_CMD_GPU_GET_PROBED_IDS"}, {0x215, "NV0000_CTRL_CMD_GPU_ATTACH_IDS"},
    {0x274, "NV0000_CTRL_CMD_GPU_GET_UUID_INFO"}, {0x275, "NV0000_CTRL_CMD_GPU_GET_UUID_FROM_GPU_ID"},
    {0x288, "NV0000_CTRL_CMD_GPU_GET_ACTIVE_DEVICE_IDS"}, {0xD01, "NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE"},
    {0xD04, "NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY"}, {0xA04, "NV0000_CTRL_CMD_SYNC_GPU_BOOST_GROUP_INFO"},
    {0x3D05, "NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD"}, {0x3D06, "NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD"},
    {0x800201, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST"}, {0x800292, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2"},
    {0x800280, "NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES"}, {0x800289, "NV0080_CTRL_CMD_GPU_GET_VIRTUALIZATION_MODE"},
    {0x80170D, "NV0080_CTRL_CMD_FIFO_GET_CHANNELLIST"}, {0x801713, "NV0080_CTRL_CMD_FIFO_GET_CAPS_V2"},
    {0x801402, "NV0080_CTRL_CMD_HOST_GET_CAPS_V2"}, {0x801307, "NV0080_CTRL_CMD_FB_GET_CAPS_V2"},
    {0x801909, "NV0080_CTRL_CMD_PERF_CUDA_LIMIT_SET_CONTROL"}, {0x20800101, "NV2080_CTRL_CMD_GPU_GET_INFO"},
    {0x20800102, "NV2080_CTRL_CMD_GPU_GET_INFO_V2"}, {0x20800110, "NV2080_CTRL_CMD_GPU_GET_NAME_STRING"},
    {0x20800111, "NV2080_CTRL_CMD_GPU_GET_SHORT_NAME_STRING"}, {0x2080014A, "NV2080_CTRL_CMD_GPU_GET_GID_INFO"},
    {0x2080012F, "NV2080_CTRL_CMD_GPU_QUERY_ECC_STATUS"}, {0x20800170, "NV2080_CTRL_CMD_GPU_GET_ENGINES_V2"},
    {0x2080018D, "NV2080_CTRL_CMD_GPU_GET_PIDS"}, {0x2080018E, "NV2080_CTRL_CMD_GPU_GET_PID_INFO"},
    {0x20800195, "NV2080_CTRL_CMD_GPU_GET_COMPUTE_POLICY_CONFIG"}, {0x20801201, "NV2080_CTRL_CMD_GR_GET_INFO"},
    {0x20801228, "NV2080_CTRL_CMD_GR_GET_INFO_V2"}, {0x20801218, "NV2080_CTRL_CMD_GR_GET_CTX_BUFFER_SIZE"},
    {0x2080121B, "NV2080_CTRL_CMD_GR_GET_GLOBAL_SM_ORDER"}, {0x2080122A, "NV2080_CTRL_CMD_GR_GET_GPC_MASK"},
    {0x2080122B, "NV2080_CTRL_CMD_GR_GET_TPC_MASK"}, {0x20801301, "NV2080_CTRL_CMD_FB_GET_INFO"},
    {0x20801303, "NV2080_CTRL_CMD_FB_GET_INFO_V2"}, {0x20801701, "NV2080_CTRL_CMD_MC_GET_ARCH_INFO"},
    {0x20801801, "NV2080_CTRL_CMD_BUS_GET_PCI_INFO"}, {0x2080110B, "NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS"},
    {0x20800301, "NV2080_CTRL_CMD_EVENT_SET_NOTIFICATION"}, {0x20800403, "NV2080_CTRL_CMD_TIMER_GET_TIME"},
    {0x20800406, "NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO"}, {0x2080200A, "NV2080_CTRL_CMD_PERF_BOOST"},
    {0x20803002, "NV2080_CTRL_CMD_NVLINK_GET_NVLINK_STATUS"}, {0x20803601, "NV2080_CTRL_CMD_GSP_GET_FEATURES"},
    {0xA06C0101, "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE"}, {0xA06C0102, "NVA06C_CTRL_CMD_BIND"},
    {0xA06C0103, "NVA06C_CTRL_CMD_SET_TIMESLICE"}, {0xA06C0104, "NVA06C_CTRL_CMD_GET_TIMESLICE"},
    {0xA06C0105, "NVA06C_CTRL_CMD_PREEMPT"}, {0xA06C0107, "NVA06C_CTRL_CMD_SET_INTERLEAVE_LEVEL"},
    {0xA06F0103, "NVA06F_CTRL_CMD_GPFIFO_SCHEDULE"}, {0xA06F0104, "NVA06F_CTRL_CMD_BIND"},
    {0xA06F0112, "NVA06F_CTRL_CMD_STOP_CHANNEL"}, {0x906F0101, "NV906F_CTRL_GET_CLASS_ENGINEID"},
    {0x906F0102, "NV906F_CTRL_CMD_RESET_CHANNEL"}, {0xC36F0108, "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN"},
    {0xC36F010A, "NVC36F_CTRL_CMD_GPFIFO_SET_WORK_SUBMIT_TOKEN_NOTIF_INDEX"},
    {0x90F10101, "NV90F1_CTRL_CMD_VASPACE_GET_GMMU_FORMAT"},
    {0x90F10102, "NV90F1_CTRL_CMD_VASPACE_GET_PAGE_LEVEL_INFO"}, {0x503C0102, "NV503C_CTRL_CMD_REGISTER_VA_SPACE"},
    {0x503C0104, "NV503C_CTRL_CMD_REGISTER_VIDMEM"}, {0x503C0105, "NV503C_CTRL_CMD_UNREGISTER_VIDMEM"},
    {0x83DE0309, "NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK"}, {0x83DE0317, "NV83DE_CTRL_CMD_DEBUG_SUSPEND_CONTEXT"},
    {0xCB330101, "NV_CONF_COMPUTE_CTRL_CMD_SYSTEM_GET_CAPABILITIES"},
};
// clang-format on

// NV_STATUS (§1.8).
// clang-format off
constexpr Named kStatuses[] = {
    {0x0, "NV_OK"}, {0x3, "NV_ERR_BUSY_RETRY"}, {0xB, "NV_ERR_ECC_ERROR"}, {0xF, "NV_ERR_GPU_IS_LOST"},
    {0x16, "NV_ERR_ILLEGAL_ACTION"}, {0x17, "NV_ERR_IN_USE"}, {0x1A, "NV_ERR_INSUFFICIENT_RESOURCES"},
    {0x1B, "NV_ERR_INSUFFICIENT_PERMISSIONS"}, {0x1E, "NV_ERR_INVALID_ADDRESS"}, {0x1F, "NV_ERR_INVALID_ARGUMENT"},
    {0x22, "NV_ERR_INVALID_CLASS"}, {0x24, "NV_ERR_INVALID_COMMAND"}, {0x26, "NV_ERR_INVALID_DEVICE"},
    {0x33, "NV_ERR_INVALID_OBJECT_HANDLE"}, {0x3A, "NV_ERR_INVALID_PARAM_STRUCT"}, {0x40, "NV_ERR_INVALID_STATE"},
    {0x4D, "NV_ERR_MORE_PROCESSING_REQUIRED"}, {0x51, "NV_ERR_NO_MEMORY"}, {0x56, "NV_ERR_NOT_SUPPORTED"},
    {0x57, "NV_ERR_OBJECT_NOT_FOUND"}, {0x62, "NV_ERR_RESET_REQUIRED"}, {0x63, "NV_ERR_STATE_IN_USE"},
    {0x65, "NV_ERR_TIMEOUT"}, {0xFFFF, "NV_ERR_GENERIC"}, {0x10006, "NV_WARN_NOTHING_TO_DO"},
};
// clang-format on

// Kinds of the classes that do not follow a per-generation pattern (§1.6).
constexpr uint32_t kClientClasses[] = {0x0000, 0x0001, 0x0041};
constexpr uint32_t kEventClasses[] = {0x0005, 0x0078, 0x0079, 0x007E};
constexpr uint32_t kVaspaceClasses[] = {0x90F1, 0x00F2, 0x00FC};
// Memory objects by where the memory is: video memory ("memory"), system
// memory the GPU maps ("sysmem"), and address-space reservations that hold
// no memory ("virtual": NV50_MEMORY_VIRTUAL reserves GiBs of VA per context).
constexpr uint32_t kMemoryClasses[] = {0x003F, 0x0040, 0x0082, 0x00B1, 0x00C2, 0x00E0,
                                       0x00F8, 0x00F9, 0x00FB, 0x00FD, 0x00FE, 0x90CE};
constexpr uint32_t kSysmemClasses[] = {0x003E, 0x0071, 0x0081};
constexpr uint32_t kVirtualClasses[] = {0x0070, 0x50A0};

template <size_t N>
bool contains(const uint32_t (&set)[N], uint32_t v) {
  return std::find(std::begin(set), std::end(set), v) != std::end(set);
}

std::string_view class_kind(uint32_t cls) {
  if (contains(kClientClasses, cls)) return "client";
  if (contains(kEventClasses, cls)) return "event";
  if (contains(kVaspaceClasses, cls)) return "vaspace";
  if (contains(kMemoryClasses, cls)) return "memory";
  if (contains(kSysmemClasses, cls)) return "sysmem";
  if (contains(kVirtualClasses, cls)) return "virtual";
  switch (cls) {
    case 0x0080: return "device";
    case 0x2080: return "subdevice";
    case 0xA06C: return "channel_group";
    case 0x9067: return "context_share";
    default: break;
  }
  if (cls > 0xFF) {
    // Per-generation classes share their low byte (§1.6): xx6F GPFIFO
    // channels, xxC0 compute, xxB5 copy, xx97 3D, xx61 usermode.
    switch (cls & 0xFF) {
      case 0x6F: return "channel";
      case 0xC0:
      case 0xB5:
      case 0x97: return "engine";
      case 0x61: return "usermode";
      default: break;
    }
    if (is_video_class(cls)) return "engine";
  }
  return "other";
}

// The class parameter block that pAllocParms points to (§1.5), as far as the
// aux copy holds it (BPF copies at most 256 bytes, the prefixes below).
void decode_alloc_params(uint32_t cls, std::string_view kind, std::string_view aux, nlohmann::json& params,
                         DriverObject& obj) {
  FieldReader r(aux, params);
  // NV_MEMORY_ALLOCATION_PARAMS is the block of the classes §1.5 names for it;
  // other memory classes (OS descriptor, fabric, ...) take other structs.
  if (cls == 0x3E || cls == 0x40 || cls == 0x50A0) {
    r.u32("owner", 0);
    r.u32("type", 4);
    r.u32("flags", 8);
    auto attr = r.u32("attr", 24);
    r.u32("attr2", 28);
    r.u64("rangeLo", 48);
    auto size = r.u64("size", 64);  // offset stable 515 -> 595
    r.u64("alignment", 72);
    r.u64("offset", 80);
    r.u64("limit", 88);
    r.u64("address", 96);
    r.u32("hVASpace", 108);
    obj.bytes = size;
    obj.flags = attr;
  } else if (kind == "channel") {  // NV_CHANNEL_ALLOC_PARAMS: this prefix is stable 515 -> 595
    r.u32("hObjectError", 0);
    r.u32("hObjectBuffer", 4);
    r.u64("gpFifoOffset", 8);
    r.u32("gpFifoEntries", 16);
    r.u32("flags", 20);
    r.u32("hContextShare", 24);
    r.u32("hVASpace", 28);
    r.u32("engineType", 128);
  } else if (kind == "client") {  // NV0000_ALLOC_PARAMETERS
    r.u32("hClient", 0);
    r.u32("processID", 4);
    r.cstr("processName", 8, 100);
  } else if (cls == 0x05 || cls == 0x79) {  // NV0005_ALLOC_PARAMETERS
    r.u32("hParentClient", 0);
    r.u32("hSrcResource", 4);
    r.u32("hClass", 8);
    r.u32("notifyIndex", 12);
    r.u64("data", 16);
  } else if (cls == 0x80) {  // NV0080_ALLOC_PARAMETERS
    r.u32("deviceId", 0);
    r.u32("hClientShare", 4);
    r.u32("flags", 16);
    r.u64("vaSpaceSize", 24);
    r.u32("vaMode", 48);
  } else if (cls == 0x2080) {  // NV2080_ALLOC_PARAMETERS
    r.u32("subDeviceId", 0);
  } else if (cls == 0xA06C) {  // NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS
    r.u32("hObjectError", 0);
    r.u32("hObjectEccError", 4);
    r.u32("hVASpace", 8);
    r.u32("engineType", 12);
  } else if (cls == 0x90F1) {  // NV_VASPACE_ALLOCATION_PARAMETERS
    r.u32("index", 0);
    r.u32("flags", 4);
    r.u64("vaSize", 8);
    r.u32("bigPageSize", 32);
    r.u64("vaBase", 40);
  }
}

// One escape's argument image; an XFER_CMD decodes its inner escape with the
// same function (depth 1).
struct Escape {
  uint32_t nr;
  uint32_t size;          // the struct size the caller declared (_IOC_SIZE, or xfer.size)
  std::string_view head;  // already cut to size
  std::string_view aux;
  const NvidiaVersion& version;
  int depth;
};

std::optional<uint32_t> status_at(std::string_view head, size_t off) {
  auto v = read_le(head, off, 4);
  return v ? std::optional<uint32_t>(uint32_t(*v)) : std::nullopt;
}

void decode_rm_alloc(const Escape& e, DecodedIoctl& d) {
  FieldReader r(e.head, d.fields);
  auto client = r.u32("hRoot", 0);
  auto parent = r.u32("hObjectParent", 4);
  auto handle = r.u32("hObjectNew", 8);
  auto cls = r.u32("hClass", 12);
  r.u64("pAllocParms", 16);
  // The driver accepts NVOS64 or NVOS21, told apart by size; the status moved
  // as fields were added (§1.4): NVOS64 grew paramsSize+flags in r535 (48 B),
  // the 40-byte NVOS64 had flags from r525, NVOS21 gained paramsSize in r535.
  std::optional<uint32_t> status;
  if (e.size == 48) {
    r.u64("pRightsRequested", 24);
    r.u32("paramsSize", 32);
    r.u32("flags", 36);
    status = status_at(e.head, 40);
  } else if (e.size == 40) {
    r.u64("pRightsRequested", 24);
    if (e.version.at_least(525, 0, 0)) {
      r.u32("flags", 32);
      status = status_at(e.head, 36);
    } else {
      status = status_at(e.head, 32);
    }
  } else if (e.size == 32) {
    if (e.version.at_least(535, 0, 0)) {
      r.u32("paramsSize", 24);
      status = status_at(e.head, 28);
    } else {
      status = status_at(e.head, 24);
    }
  }
  ioctl_detail::set_nv_status(d, status);
  if (!cls) return;
  d.object_class = *cls;
  d.class_name = nv_class_name(*cls);
  DriverObject obj = ioctl_detail::driver_object("alloc", std::string(class_kind(*cls)), handle.value_or(0));
  // A client is its own root: its RM_FREE names it under itself.
  obj.client = obj.kind == "client" ? handle.value_or(0) : client.value_or(0);
  obj.parent = parent.value_or(0);
  obj.object_class = *cls;
  obj.class_name = d.class_name;
  if (!e.aux.empty()) {
    nlohmann::json params = nlohmann::json::object();
    decode_alloc_params(*cls, obj.kind, e.aux, params, obj);
    // One flat set of fields per call, so SQL reads json_extract(args, '$.size').
    // A parameter named like an NVOS field (flags) gets a "params_" prefix.
    for (auto& [name, value] : params.items())
      d.fields[d.fields.contains(name) ? "params_" + name : name] = std::move(value);
  }
  d.object = std::move(obj);
}

void decode_rm_control(const Escape& e, DecodedIoctl& d) {
  FieldReader r(e.head, d.fields);
  r.u32("hClient", 0);
  r.u32("hObject", 4);
  auto cmd = r.u32("cmd", 8);
  r.u32("flags", 12);
  r.u64("params", 16);
  r.u32("paramsSize", 24);
  ioctl_detail::set_nv_status(d, status_at(e.head, 28));
  if (!cmd) return;
  d.control = *cmd;
  d.control_name = std::string(lookup(kControls, *cmd));
  // The top 16 bits name the interface class whose API the command is (§1.7).
  d.object_class = *cmd >> 16;
  d.class_name = nv_class_name(*cmd >> 16);
  if (d.control_name.empty()) {
    d.fields["category"] = (*cmd >> 8) & 0xFF;
    d.fields["index"] = *cmd & 0xFF;
  }
}

// RM object lifetime outside NV_ESC_RM_ALLOC: memory allocated with an fd
// (NVOS02) and frees (NVOS00).
void decode_rm_alloc_memory(const Escape& e, DecodedIoctl& d) {  // nv_ioctl_nvos02_parameters_with_fd
  FieldReader r(e.head, d.fields);
  auto client = r.u32("hRoot", 0);
  auto parent = r.u32("hObjectParent", 4);
  auto handle = r.u32("hObjectNew", 8);
  auto cls = r.u32("hClass", 12);
  r.u32("flags", 16);
  r.u64("pMemory", 24);
  auto limit = r.u64("limit", 32);
  ioctl_detail::set_nv_status(d, status_at(e.head, 40));
  r.s32("fd", 48);
  if (!cls) return;
  d.object_class = *cls;
  d.class_name = nv_class_name(*cls);
  d.object = ioctl_detail::driver_object("alloc", std::string(class_kind(*cls)), handle.value_or(0));
  d.object->client = client.value_or(0);
  d.object->parent = parent.value_or(0);
  d.object->object_class = *cls;
  d.object->class_name = d.class_name;
  if (limit) d.object->bytes = *limit + 1;  // limit is the last byte's offset
}

void decode_rm_free(const Escape& e, DecodedIoctl& d) {  // NVOS00
  FieldReader r(e.head, d.fields);
  auto client = r.u32("hRoot", 0);
  auto parent = r.u32("hObjectParent", 4);
  auto handle = r.u32("hObjectOld", 8);
  ioctl_detail::set_nv_status(d, status_at(e.head, 12));
  // The kind is not in the call: it comes from the alloc this free pairs with.
  if (handle) {
    d.object = ioctl_detail::driver_object("free", "", *handle);
    d.object->client = client.value_or(0);
    d.object->parent = parent.value_or(0);
  }
}

// CPU and GPU mappings of RM memory: NVOS33/34 (CPU), NVOS56, NVOS46/47 (GPU
// virtual address space).
void decode_rm_mapping(const Escape& e, DecodedIoctl& d) {
  FieldReader r(e.head, d.fields);
  switch (e.nr) {
    case kRmMapMemory:  // nv_ioctl_nvos33_parameters_with_fd
      r.u32("hClient", 0);
      r.u32("hDevice", 4);
      r.u32("hMemory", 8);
      r.u64("offset", 16);
      r.u64("length", 24);
      r.u64("pLinearAddress", 32);
      ioctl_detail::set_nv_status(d, status_at(e.head, 40));
      r.u32("flags", 44);
      r.s32("fd", 48);
      break;
    case kRmUnmapMemory:  // NVOS34
      r.u32("hClient", 0);
      r.u32("hDevice", 4);
      r.u32("hMemory", 8);
      r.u64("pLinearAddress", 16);
      ioctl_detail::set_nv_status(d, status_at(e.head, 24));
      r.u32("flags", 28);
      break;
    case kRmUpdateDeviceMappingInfo:  // NVOS56
      r.u32("hClient", 0);
      r.u32("hDevice", 4);
      r.u32("hMemory", 8);
      r.u64("pOldCpuAddress", 16);
      r.u64("pNewCpuAddress", 24);
      ioctl_detail::set_nv_status(d, status_at(e.head, 32));
      break;
    case kRmMapMemoryDma:  // NVOS46: flags2 was inserted after flags in 580.65.06 (56 -> 64 B)
      r.u32("hClient", 0);
      r.u32("hDevice", 4);
      r.u32("hDma", 8);
      r.u32("hMemory", 12);
      r.u64("offset", 16);
      r.u64("length", 24);
      r.u32("flags", 32);
      if (e.size == 64) {
        r.u32("flags2", 36);
        r.u32("kindOverride", 40);
        r.u64("dmaOffset", 48);
        ioctl_detail::set_nv_status(d, status_at(e.head, 56));
      } else if (e.size == 56) {
        r.u32("kindOverride", 36);
        r.u64("dmaOffset", 40);
        ioctl_detail::set_nv_status(d, status_at(e.head, 48));
      }
      break;
    case kRmUnmapMemoryDma:  // NVOS47: size was added before status in 550.40.07 (40 -> 48 B)
      r.u32("hClient", 0);
      r.u32("hDevice", 4);
      r.u32("hDma", 8);
      r.u32("hMemory", 12);
      r.u32("flags", 16);
      r.u64("dmaOffset", 24);
      if (e.size == 48) {
        r.u64("size", 32);
        ioctl_detail::set_nv_status(d, status_at(e.head, 40));
      } else if (e.size == 40) {
        ioctl_detail::set_nv_status(d, status_at(e.head, 32));
      }
      break;
  }
}

// The other RM escapes with a known layout: object duplication and sharing,
// and the video heap.
void decode_rm_other(const Escape& e, DecodedIoctl& d) {
  FieldReader r(e.head, d.fields);
  switch (e.nr) {
    case kRmDupObject:  // NVOS55
      r.u32("hClient", 0);
      r.u32("hParent", 4);
      r.u32("hObject", 8);
      r.u32("hClientSrc", 12);
      r.u32("hObjectSrc", 16);
      r.u32("flags", 20);
      ioctl_detail::set_nv_status(d, status_at(e.head, 24));
      break;
    case kRmShare:  // NVOS57 (24 B): only its last field, the status, is known here
      if (e.size == 24) ioctl_detail::set_nv_status(d, status_at(e.head, 20));
      break;
    case kRmVidHeapControl:  // NVOS32: the data union is function-specific
      r.u32("hRoot", 0);
      r.u32("hObjectParent", 4);
      r.u32("function", 8);
      r.u32("hVASpace", 12);
      r.u16("ivcHeapNumber", 16);
      ioctl_detail::set_nv_status(d, status_at(e.head, 20));
      r.u64("total", 24);
      r.u64("free", 32);
      break;
  }
}

// The driver's own escapes (nv.c, not RM): OS events, fds, version check,
// GPU lists, card info, system parameters.
void decode_os_escape(const Escape& e, DecodedIoctl& d) {
  FieldReader r(e.head, d.fields);
  switch (e.nr) {
    case kAllocOsEvent:
    case kFreeOsEvent:  // nv_ioctl_alloc_os_event_t / nv_ioctl_free_os_event_t
      r.u32("hClient", 0);
      r.u32("hDevice", 4);
      r.s32("fd", 8);
      ioctl_detail::set_nv_status(d, status_at(e.head, 12));  // "Status"
      break;
    case kRegisterFd: r.s32("ctl_fd", 0); break;
    case kCheckVersionStr:  // nv_ioctl_rm_api_version_t
      r.u32("cmd", 0);
      r.u32("reply", 4);
      r.cstr("versionString", 8, 64);
      break;
    case kAttachGpusToFd: {  // NvU32 gpu ids, as many as the size says
      uint32_t n = e.size / 4;
      nlohmann::json ids = nlohmann::json::array();
      for (uint32_t i = 0; i < n; ++i) {
        auto id = read_le(e.head, size_t(i) * 4, 4);
        if (!id) break;
        ids.push_back(*id);
      }
      d.fields["gpu_count"] = n;
      d.fields["gpu_ids"] = std::move(ids);
      break;
    }
    case kCardInfo: d.fields["count"] = e.size / 72; break;  // nv_ioctl_card_info_t[], 72 B each
    case kSysParams: r.u64("memblock_size", 0); break;
    case kWaitOpenComplete:
      r.s32("rc", 0);
      r.u32("adapterStatus", 4);
      break;
  }
}

void decode_escape(const Escape& e, DecodedIoctl& d);

// nv_ioctl_xfer_t {cmd, size, ptr}: the real escape's argument is at ptr,
// copied as aux; decoded as that escape with _IOC_SIZE = size (one level).
void decode_xfer(const Escape& e, DecodedIoctl& d) {
  auto cmd = read_le(e.head, 0, 4);
  auto size = read_le(e.head, 4, 4);
  if (e.depth > 0 || !cmd || !size) {
    FieldReader r(e.head, d.fields);
    r.u32("cmd", 0);
    r.u32("size", 4);
    r.u64("ptr", 8);
    return;
  }
  Escape inner{.nr = uint32_t(*cmd),
               .size = uint32_t(*size),
               .head = e.aux.substr(0, *size),
               .aux = {},
               .version = e.version,
               .depth = e.depth + 1};
  decode_escape(inner, d);
  d.fields["xfer"] = true;
}

void decode_escape(const Escape& e, DecodedIoctl& d) {
  d.request = std::string(lookup(kEscapes, e.nr));
  switch (e.nr) {
    case kRmAlloc: decode_rm_alloc(e, d); break;
    case kRmControl: decode_rm_control(e, d); break;
    case kRmAllocMemory: decode_rm_alloc_memory(e, d); break;
    case kRmFree: decode_rm_free(e, d); break;
    case kRmMapMemory:
    case kRmUnmapMemory:
    case kRmUpdateDeviceMappingInfo:
    case kRmMapMemoryDma:
    case kRmUnmapMemoryDma: decode_rm_mapping(e, d); break;
    case kRmDupObject:
    case kRmShare:
    case kRmVidHeapControl: decode_rm_other(e, d); break;
    case kIoctlXferCmd: decode_xfer(e, d); break;
    default: decode_os_escape(e, d); break;  // or named only
  }
}

}  // namespace

std::string nv_class_name(uint32_t cls) {
  if (auto name = lookup(kClasses, cls); !name.empty()) return std::string(name);
  if (is_video_class(cls)) {
    char prefix[8];
    std::snprintf(prefix, sizeof prefix, "NV%04X_", cls);
    return prefix + std::string(lookup(kVideoSuffixes, cls & 0xFF));
  }
  return "";
}

std::string nv_status_name(uint32_t status) {
  if (auto name = lookup(kStatuses, status); !name.empty()) return std::string(name);
  return ioctl_detail::hex(status);
}

namespace ioctl_detail {

void decode_nvidia(const IoctlCapture& c, DecodedIoctl& d) {
  if (ioc_type(c.cmd) == kNvIoctlMagic) {
    uint32_t size = ioc_size(c.cmd);
    Escape e{.nr = ioc_nr(c.cmd),
             .size = size,
             .head = c.head.substr(0, size),
             .aux = c.aux,
             .version = c.nvidia,
             .depth = 0};
    decode_escape(e, d);
  }
  // The syscall returns 0 even when RM failed: the status says (NV_WARN_* are not failures).
  d.failed = c.ret < 0 || (d.status && nv_status_is_error(uint32_t(*d.status)));
  if (d.failed) d.object.reset();  // nothing was created or destroyed
}

}  // namespace ioctl_detail
}  // namespace gpuobs
