// NVIDIA UVM ioctls on /dev/nvidia-uvm and /dev/nvidia-uvm-tools, decoded.
// The commands, their sizes by driver version and the copy rules built from
// them: catalogue/uvm_commands.h. Layouts: docs/reference/abi-reference.md §2.
#include <string_view>

#include "catalogue/uvm_commands.h"
#include "decode/driver_ioctl.h"
#include "decode/driver_ioctl_internal.h"

namespace gpuobs {
using namespace uvm;  // the command numbers and sizes (catalogue/uvm_commands.h)
namespace {

using ioctl_detail::FieldReader;
using ioctl_detail::read_le;

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

}  // namespace ioctl_detail
}  // namespace gpuobs
