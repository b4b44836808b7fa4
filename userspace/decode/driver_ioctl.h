// GPU driver ioctls decoded: NVIDIA RM escapes (/dev/nvidiactl, /dev/nvidiaN),
// NVIDIA UVM (/dev/nvidia-uvm), AMD KFD (/dev/kfd) and DRM nodes (i915, xe,
// amdgpu, and the core requests of any DRM driver). Input: what the BPF
// ioctl exit copied (the argument struct, and the block one of its pointers
// names); output: the request's name, its fields, the driver's own status,
// and the driver object it created or destroyed. Pure functions over bytes,
// so every layout is unit-tested on recorded argument images.
// Numbers, layouts and version boundaries: docs/reference/abi-reference.md §1-§3, §7.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalogue/driver_catalogue.h"
#include "events.h"

namespace gpuobs {

struct IoctlCapture {
  uint32_t driver = GPUOBS_DRV_OTHER;  // GPUOBS_DRV_*
  uint32_t cmd = 0;
  uint32_t dev_minor = 0;
  int64_t ret = 0;        // syscall return (negative errno)
  std::string_view head;  // the argument struct as copied (may be shorter than the struct)
  std::string_view aux;   // what the rule's aux pointed to (empty if none)
  NvidiaVersion nvidia;   // for layouts that moved between driver versions
};

// A driver object created or destroyed by one call: RM objects (NVIDIA),
// GPU memory and queues (KFD). alloc and free pair up on (client, handle)
// for NVIDIA (a free names hObjectOld under hRoot) and on handle (KFD memory
// handle, queue id) for KFD, within a process.
struct DriverObject {
  std::string op;                        // "alloc" or "free"
  std::string kind;                      // memory, channel, engine, channel_group, context_share, vaspace, device,
                                         // subdevice, client, event, usermode, queue, other
  uint64_t client = 0;                   // NVIDIA hRoot/hClient; 0 for KFD
  uint64_t parent = 0;                   // NVIDIA hObjectParent; KFD: gpu_id
  uint64_t handle = 0;                   // NVIDIA object handle; KFD memory handle or queue id
  std::optional<uint32_t> object_class;  // NVIDIA class number (alloc only)
  std::string class_name;                // "HOPPER_CHANNEL_GPFIFO_A"; "" when not known
  std::optional<uint64_t> bytes;         // memory size (alloc of a memory class / KFD alloc)
  std::optional<uint64_t> flags;         // NV memory attr/flags, KFD alloc flags or queue type
  std::optional<uint64_t> address;       // KFD va_addr; NVIDIA: none
};

struct DecodedIoctl {
  std::string request;                   // "NV_ESC_RM_ALLOC", "UVM_REGISTER_GPU", "AMDKFD_IOC_CREATE_QUEUE";
                                         // "" when the command is not known for its driver
  std::optional<int64_t> status;         // the driver's status field (NV_STATUS / rmStatus); KFD: wait_result
  std::string status_name;               // "NV_OK", "NV_ERR_NO_MEMORY", "KFD_IOC_WAIT_RESULT_TIMEOUT", hex if unknown
  std::optional<uint32_t> object_class;  // RM alloc: hClass; RM control: the interface class (cmd >> 16)
  std::string class_name;
  std::optional<uint32_t> control;                   // RM control command
  std::string control_name;                          // "NV2080_CTRL_CMD_GPU_GET_INFO_V2"; "" when not in the table
  nlohmann::json fields = nlohmann::json::object();  // every decoded field, named as in the driver headers
  std::optional<DriverObject> object;
  // Every field the request has was in what BPF copied: false when the
  // argument was cut, or a block behind one of its pointers (xe binds,
  // amdgpu CS chunks) was unreadable or past the bound copied.
  bool args_complete = true;
  // The call failed: ret < 0, or a status that is an error (NV_WARN_* and
  // NV_OK are not; a KFD wait that timed out is not a failure either).
  bool failed = false;
};

DecodedIoctl decode_ioctl(const IoctlCapture& c);

// Names of NVIDIA RM classes and NV_STATUS codes ("" / hex when unknown).
std::string nv_class_name(uint32_t cls);
std::string nv_status_name(uint32_t status);

}  // namespace gpuobs
