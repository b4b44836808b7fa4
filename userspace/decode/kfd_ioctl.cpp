// AMD KFD ioctls on /dev/kfd. The kernel dispatches on _IOC_NR and
// zero-extends or truncates the size, so old and new struct sizes both occur
// (CREATE_QUEUE is 88 or 96 bytes): decode by number, read only what the
// argument holds. Numbers and layouts: docs/reference/abi-reference.md §3.
#include <string_view>

#include "decode/driver_ioctl.h"
#include "decode/driver_ioctl_internal.h"

namespace gpuobs {
namespace {

using ioctl_detail::FieldReader;

struct Named {
  uint32_t number;
  std::string_view name;
};

constexpr uint32_t kKfdIoctlMagic = 'K';  // 0x4B

enum KfdNr : uint32_t {
  kGetVersion = 0x01,
  kCreateQueue = 0x02,
  kDestroyQueue = 0x03,
  kUpdateQueue = 0x07,
  kCreateEvent = 0x08,
  kDestroyEvent = 0x09,
  kSetEvent = 0x0A,
  kResetEvent = 0x0B,
  kWaitEvents = 0x0C,
  kAcquireVm = 0x15,
  kAllocMemoryOfGpu = 0x16,
  kFreeMemoryOfGpu = 0x17,
  kMapMemoryToGpu = 0x18,
  kUnmapMemoryFromGpu = 0x19,
  kSvm = 0x20,
};

constexpr Named kRequests[] = {
    {0x01, "AMDKFD_IOC_GET_VERSION"},
    {0x02, "AMDKFD_IOC_CREATE_QUEUE"},
    {0x03, "AMDKFD_IOC_DESTROY_QUEUE"},
    {0x04, "AMDKFD_IOC_SET_MEMORY_POLICY"},
    {0x05, "AMDKFD_IOC_GET_CLOCK_COUNTERS"},
    {0x06, "AMDKFD_IOC_GET_PROCESS_APERTURES"},
    {0x07, "AMDKFD_IOC_UPDATE_QUEUE"},
    {0x08, "AMDKFD_IOC_CREATE_EVENT"},
    {0x09, "AMDKFD_IOC_DESTROY_EVENT"},
    {0x0A, "AMDKFD_IOC_SET_EVENT"},
    {0x0B, "AMDKFD_IOC_RESET_EVENT"},
    {0x0C, "AMDKFD_IOC_WAIT_EVENTS"},
    {0x0D, "AMDKFD_IOC_DBG_REGISTER_DEPRECATED"},
    {0x0E, "AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED"},
    {0x0F, "AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED"},
    {0x10, "AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED"},
    {0x11, "AMDKFD_IOC_SET_SCRATCH_BACKING_VA"},
    {0x12, "AMDKFD_IOC_GET_TILE_CONFIG"},
    {0x13, "AMDKFD_IOC_SET_TRAP_HANDLER"},
    {0x14, "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW"},
    {0x15, "AMDKFD_IOC_ACQUIRE_VM"},
    {0x16, "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU"},
    {0x17, "AMDKFD_IOC_FREE_MEMORY_OF_GPU"},
    {0x18, "AMDKFD_IOC_MAP_MEMORY_TO_GPU"},
    {0x19, "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU"},
    {0x1A, "AMDKFD_IOC_SET_CU_MASK"},
    {0x1B, "AMDKFD_IOC_GET_QUEUE_WAVE_STATE"},
    {0x1C, "AMDKFD_IOC_GET_DMABUF_INFO"},
    {0x1D, "AMDKFD_IOC_IMPORT_DMABUF"},
    {0x1E, "AMDKFD_IOC_ALLOC_QUEUE_GWS"},
    {0x1F, "AMDKFD_IOC_SMI_EVENTS"},
    {0x20, "AMDKFD_IOC_SVM"},
    {0x21, "AMDKFD_IOC_SET_XNACK_MODE"},
    {0x22, "AMDKFD_IOC_CRIU_OP"},
    {0x23, "AMDKFD_IOC_AVAILABLE_MEMORY"},
    {0x24, "AMDKFD_IOC_EXPORT_DMABUF"},
    {0x25, "AMDKFD_IOC_RUNTIME_ENABLE"},
    {0x26, "AMDKFD_IOC_DBG_TRAP"},
    {0x27, "AMDKFD_IOC_CREATE_PROCESS"},  // KFD 1.19
    // ROCm DKMS builds only (AMDKFD_COMMAND_START_2 0x80). Old DKMS had
    // DBG_TRAP at 0x82 before upstream moved it to 0x26 (KFD 1.13).
    {0x80, "AMDKFD_IOC_IPC_IMPORT_HANDLE"},
    {0x81, "AMDKFD_IOC_IPC_EXPORT_HANDLE"},
    {0x82, "AMDKFD_IOC_DBG_TRAP"},
    {0x83, "AMDKFD_IOC_CROSS_MEMORY_COPY"},
    {0x84, "AMDKFD_IOC_RLC_SPM"},
    {0x85, "AMDKFD_IOC_PC_SAMPLE"},
};

constexpr std::string_view kQueueTypes[] = {"COMPUTE", "SDMA", "COMPUTE_AQL", "SDMA_XGMI", "SDMA_BY_ENG_ID"};

// KFD_IOC_ALLOC_MEM_FLAGS_*, by bit.
constexpr Named kAllocFlags[] = {
    {1u << 0, "VRAM"},           {1u << 1, "GTT"},
    {1u << 2, "USERPTR"},        {1u << 3, "DOORBELL"},
    {1u << 4, "MMIO_REMAP"},     {1u << 23, "CONTIGUOUS_BEST_EFFORT"},
    {1u << 24, "EXT_COHERENT"},  {1u << 25, "UNCACHED"},
    {1u << 26, "COHERENT"},      {1u << 27, "AQL_QUEUE_MEM"},
    {1u << 28, "NO_SUBSTITUTE"}, {1u << 29, "PUBLIC"},
    {1u << 30, "EXECUTABLE"},    {1u << 31, "WRITABLE"},
};

constexpr std::string_view kWaitResults[] = {"KFD_IOC_WAIT_RESULT_COMPLETE", "KFD_IOC_WAIT_RESULT_TIMEOUT",
                                             "KFD_IOC_WAIT_RESULT_FAIL"};
constexpr uint32_t kWaitResultFail = 2;

nlohmann::json alloc_flag_names(uint32_t flags) {
  nlohmann::json names = nlohmann::json::array();
  uint32_t rest = flags;
  for (const Named& f : kAllocFlags) {
    if (flags & f.number) names.push_back(f.name);
    rest &= ~f.number;
  }
  if (rest) names.push_back(ioctl_detail::hex(rest));  // bits this table does not know
  return names;
}

void decode_args(uint32_t nr, std::string_view head, DecodedIoctl& d) {
  FieldReader r(head, d.fields);
  switch (nr) {
    case kGetVersion:
      r.u32("major_version", 0);
      r.u32("minor_version", 4);
      break;
    case kCreateQueue: {
      r.u64("ring_base_address", 0);
      r.u64("write_pointer_address", 8);
      r.u64("read_pointer_address", 16);
      r.u64("doorbell_offset", 24);
      r.u32("ring_size", 32);
      auto gpu_id = r.u32("gpu_id", 36);
      auto type = r.u32("queue_type", 40);
      if (type && *type < std::size(kQueueTypes)) d.fields["queue_type_name"] = kQueueTypes[*type];
      r.u32("queue_percentage", 44);
      r.u32("queue_priority", 48);
      auto queue_id = r.u32("queue_id", 52);
      r.u64("eop_buffer_address", 56);
      r.u64("eop_buffer_size", 64);
      r.u64("ctx_save_restore_address", 72);
      r.u32("ctx_save_restore_size", 80);
      r.u32("ctl_stack_size", 84);
      r.u32("sdma_engine_id", 88);  // KFD 1.17 (96-byte struct)
      if (queue_id) {
        d.object = ioctl_detail::driver_object("alloc", "queue", *queue_id);
        d.object->parent = gpu_id.value_or(0);
        d.object->flags = type;
      }
      break;
    }
    case kDestroyQueue:
      if (auto queue_id = r.u32("queue_id", 0)) d.object = ioctl_detail::driver_object("free", "queue", *queue_id);
      break;
    case kUpdateQueue:
      r.u64("ring_base_address", 0);
      r.u32("queue_id", 8);
      r.u32("ring_size", 12);
      r.u32("queue_percentage", 16);
      r.u32("queue_priority", 20);
      break;
    case kCreateEvent:
      r.u64("event_page_offset", 0);
      r.u32("event_trigger_data", 8);
      r.u32("event_type", 12);
      r.u32("auto_reset", 16);
      r.u32("node_id", 20);
      r.u32("event_id", 24);
      r.u32("event_slot_index", 28);
      break;
    case kDestroyEvent:
    case kSetEvent:
    case kResetEvent: r.u32("event_id", 0); break;
    case kWaitEvents: {
      r.u64("events_ptr", 0);
      r.u32("num_events", 8);
      r.u32("wait_for_all", 12);
      r.u32("timeout", 16);  // ms
      if (auto result = r.u32("wait_result", 20)) {
        d.status = *result;
        d.status_name =
            *result < std::size(kWaitResults) ? std::string(kWaitResults[*result]) : ioctl_detail::hex(*result);
      }
      break;
    }
    case kAcquireVm:
      r.s32("drm_fd", 0);
      r.u32("gpu_id", 4);
      break;
    case kAllocMemoryOfGpu: {
      auto va = r.u64("va_addr", 0);
      auto size = r.u64("size", 8);
      auto handle = r.u64("handle", 16);
      r.u64("mmap_offset", 24);
      auto gpu_id = r.u32("gpu_id", 32);
      auto flags = r.u32("flags", 36);
      if (flags) d.fields["flag_names"] = alloc_flag_names(*flags);
      if (handle) {
        // VRAM is device memory; GTT and userptr are system memory the GPU
        // maps; doorbell and MMIO pages are not memory at all.
        uint32_t f = flags.value_or(0);
        std::string kind = (f & 1u) ? "memory" : (f & 6u) ? "sysmem" : "other";
        d.object = ioctl_detail::driver_object("alloc", kind, *handle);
        d.object->parent = gpu_id.value_or(0);
        d.object->bytes = size;
        d.object->flags = flags;
        d.object->address = va;
      }
      break;
    }
    case kFreeMemoryOfGpu:
      // The kind is the allocation's (the writer pairs the free with it).
      if (auto handle = r.u64("handle", 0)) d.object = ioctl_detail::driver_object("free", "", *handle);
      break;
    case kMapMemoryToGpu:
    case kUnmapMemoryFromGpu:
      r.u64("handle", 0);
      r.u64("device_ids_array_ptr", 8);
      r.u32("n_devices", 16);
      r.u32("n_success", 20);
      break;
    case kSvm:
      r.u64("start_addr", 0);
      r.u64("size", 8);
      r.u32("op", 16);
      r.u32("nattr", 20);
      break;
    default: break;  // named only
  }
}

}  // namespace

namespace ioctl_detail {

void decode_kfd(const IoctlCapture& c, DecodedIoctl& d) {
  if (ioc_type(c.cmd) == kKfdIoctlMagic) {
    uint32_t nr = ioc_nr(c.cmd);
    for (const Named& e : kRequests)
      if (e.number == nr) d.request = std::string(e.name);
    decode_args(nr, c.head.substr(0, ioc_size(c.cmd)), d);
  }
  // KFD reports errors through the return value; a wait that timed out is
  // an answer, not a failure.
  d.failed = c.ret < 0 || (ioc_nr(c.cmd) == kWaitEvents && d.status == int64_t(kWaitResultFail));
  if (d.failed) d.object.reset();  // nothing was created or destroyed
}

}  // namespace ioctl_detail
}  // namespace gpuobs
