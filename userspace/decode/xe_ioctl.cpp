// xe's requests (xe_drm.h): EXEC on an exec queue, VM_BIND with its bind
// operations (inline for one, behind vector_of_binds for more: the rule
// copies the first drm::kXeVmBindOpsCopied), exec queues with their engines
// (behind instances), buffers, VMs, user-fence waits, device queries.
// Numbers and layouts: docs/reference/abi-reference.md §7.
#include <algorithm>
#include <string>

#include "catalogue/drm_uapi.h"
#include "decode/drm_ioctl_internal.h"

namespace gpuobs::ioctl_detail {
namespace {

using namespace drm;

constexpr DrmName kRequests[] = {
    {kXeDeviceQuery, "DRM_IOCTL_XE_DEVICE_QUERY"},
    {kXeGemCreate, "DRM_IOCTL_XE_GEM_CREATE"},
    {kXeGemMmapOffset, "DRM_IOCTL_XE_GEM_MMAP_OFFSET"},
    {kXeVmCreate, "DRM_IOCTL_XE_VM_CREATE"},
    {kXeVmDestroy, "DRM_IOCTL_XE_VM_DESTROY"},
    {kXeVmBind, "DRM_IOCTL_XE_VM_BIND"},
    {kXeExecQueueCreate, "DRM_IOCTL_XE_EXEC_QUEUE_CREATE"},
    {kXeExecQueueDestroy, "DRM_IOCTL_XE_EXEC_QUEUE_DESTROY"},
    {kXeExecQueueGetProperty, "DRM_IOCTL_XE_EXEC_QUEUE_GET_PROPERTY"},
    {kXeExec, "DRM_IOCTL_XE_EXEC"},
    {kXeWaitUserFence, "DRM_IOCTL_XE_WAIT_USER_FENCE"},
};

constexpr DrmName kBindOps[] = {{0, "MAP"}, {1, "UNMAP"}, {2, "MAP_USERPTR"}, {3, "UNMAP_ALL"}, {4, "PREFETCH"}};
constexpr DrmName kEngineClasses[] = {{0, "RENDER"},        {1, "COPY"},    {2, "VIDEO_DECODE"},
                                      {3, "VIDEO_ENHANCE"}, {4, "COMPUTE"}, {5, "VM_BIND"}};
constexpr DrmName kQueries[] = {{0, "ENGINES"},  {1, "MEM_REGIONS"}, {2, "CONFIG"},       {3, "GT_LIST"},
                                {4, "HWCONFIG"}, {5, "GT_TOPOLOGY"}, {6, "ENGINE_CYCLES"}};
constexpr DrmName kFenceOps[] = {{0, "EQ"}, {1, "NEQ"}, {2, "GT"}, {3, "GTE"}, {4, "LT"}, {5, "LTE"}};

// One drm_xe_vm_bind_op at the start of bytes, as a JSON object; false when
// the image holds less than a whole one.
bool bind_op(std::string_view bytes, nlohmann::json& out) {
  if (bytes.size() < sizeof(XeVmBindOp)) return false;
  FieldReader r(bytes, out);
  if (auto op = r.u32("op", offsetof(XeVmBindOp, op))) out["op_name"] = drm_name_or_number(kBindOps, *op);
  r.u32("flags", offsetof(XeVmBindOp, flags));
  r.u32("obj", offsetof(XeVmBindOp, obj));
  r.u64("obj_offset", offsetof(XeVmBindOp, obj_offset));
  r.u64("range", offsetof(XeVmBindOp, range));
  r.u64("addr", offsetof(XeVmBindOp, addr));
  r.u16("pat_index", offsetof(XeVmBindOp, pat_index));
  r.u32("prefetch_mem_region_instance", offsetof(XeVmBindOp, prefetch_mem_region_instance));
  return true;
}

void vm_bind(const IoctlCapture& c, DecodedIoctl& d) {
  FieldReader r(c.head, d.fields);
  r.u32("vm_id", offsetof(XeVmBind, vm_id));
  r.u32("exec_queue_id", offsetof(XeVmBind, exec_queue_id));
  r.u32("num_syncs", offsetof(XeVmBind, num_syncs));
  auto n = r.u32("num_binds", offsetof(XeVmBind, num_binds));
  if (!n) return;
  nlohmann::json binds = nlohmann::json::array();
  uint32_t want = *n;
  if (*n == 1) {
    nlohmann::json b = nlohmann::json::object();
    if (bind_op(c.head.substr(offsetof(XeVmBind, bind)), b)) binds.push_back(b);
  } else {
    r.u64("vector_of_binds", offsetof(XeVmBind, bind));
    want = std::min(*n, kXeVmBindOpsCopied);
    for (uint32_t i = 0; i < want; ++i) {
      nlohmann::json b = nlohmann::json::object();
      size_t off = size_t(i) * sizeof(XeVmBindOp);
      if (off >= c.aux.size() || !bind_op(c.aux.substr(off), b)) break;
      binds.push_back(b);
    }
    if (*n > kXeVmBindOpsCopied) d.fields["binds_cut"] = *n - kXeVmBindOpsCopied;
  }
  if (binds.size() < *n) d.args_complete = false;  // cut at the bound, or unreadable
  d.fields["binds"] = binds;
}

void exec_queue_create(const IoctlCapture& c, DecodedIoctl& d) {
  FieldReader r(c.head, d.fields);
  auto width = r.u16("width", offsetof(XeExecQueueCreate, width));
  auto placements = r.u16("num_placements", offsetof(XeExecQueueCreate, num_placements));
  r.u32("vm_id", offsetof(XeExecQueueCreate, vm_id));
  r.u32("flags", offsetof(XeExecQueueCreate, flags));
  r.u64("instances", offsetof(XeExecQueueCreate, instances));
  if (c.ret >= 0) r.u32("exec_queue_id", offsetof(XeExecQueueCreate, exec_queue_id));
  if (!width || !placements) return;
  uint32_t total = uint32_t(*width) * *placements;
  uint32_t want = std::min(total, kXeInstancesCopied);
  nlohmann::json engines = nlohmann::json::array();
  for (uint32_t i = 0; i < want; ++i) {
    size_t off = size_t(i) * sizeof(XeEngineClassInstance);
    if (c.aux.size() < off + sizeof(XeEngineClassInstance)) break;
    nlohmann::json e = nlohmann::json::object();
    FieldReader er(c.aux.substr(off), e);
    auto cls = er.u16("engine_class", offsetof(XeEngineClassInstance, engine_class));
    e["engine_class_name"] = drm_name_or_number(kEngineClasses, *cls);
    er.u16("engine_instance", offsetof(XeEngineClassInstance, engine_instance));
    er.u16("gt_id", offsetof(XeEngineClassInstance, gt_id));
    engines.push_back(e);
  }
  // The queue's engine class (all its placements share one class).
  if (!engines.empty()) d.fields["engine"] = engines[0]["engine_class_name"];
  if (total > kXeInstancesCopied) d.fields["engines_cut"] = total - kXeInstancesCopied;
  if (engines.size() < total) d.args_complete = false;
  d.fields["engines"] = engines;
}

}  // namespace

bool decode_xe(uint32_t nr, const IoctlCapture& c, DecodedIoctl& d) {
  std::string_view name = drm_lookup(kRequests, nr);
  if (name.empty()) return false;
  d.request = std::string(name);
  FieldReader r(c.head, d.fields);
  bool ok = c.ret >= 0;
  switch (nr) {
    case kXeExec:
      r.u32("exec_queue_id", offsetof(XeExec, exec_queue_id));
      r.u32("num_syncs", offsetof(XeExec, num_syncs));
      r.u64("syncs", offsetof(XeExec, syncs));
      r.u64("address", offsetof(XeExec, address));
      r.u16("num_batch_buffer", offsetof(XeExec, num_batch_buffer));
      break;
    case kXeVmBind: vm_bind(c, d); break;
    case kXeExecQueueCreate: exec_queue_create(c, d); break;
    case kXeExecQueueDestroy: r.u32("exec_queue_id", 0); break;
    case kXeGemCreate:
      r.u64("size", offsetof(XeGemCreate, size));
      r.u32("placement", offsetof(XeGemCreate, placement));
      r.u32("flags", offsetof(XeGemCreate, flags));
      r.u32("vm_id", offsetof(XeGemCreate, vm_id));
      r.u16("cpu_caching", offsetof(XeGemCreate, cpu_caching));
      if (ok) r.u32("handle", offsetof(XeGemCreate, handle));
      break;
    case kXeGemMmapOffset:
      r.u32("handle", offsetof(XeGemMmapOffset, handle));
      r.u32("flags", offsetof(XeGemMmapOffset, flags));
      if (ok) r.u64("offset", offsetof(XeGemMmapOffset, offset));
      break;
    case kXeVmCreate:
      r.u32("flags", offsetof(XeVmCreate, flags));
      if (ok) r.u32("vm_id", offsetof(XeVmCreate, vm_id));
      break;
    case kXeVmDestroy: r.u32("vm_id", offsetof(XeVmDestroy, vm_id)); break;
    case kXeWaitUserFence: {
      r.u64("addr", offsetof(XeWaitUserFence, addr));
      if (auto op = r.u16("op", offsetof(XeWaitUserFence, op)))
        d.fields["op_name"] = drm_name_or_number(kFenceOps, *op);
      r.u16("flags", offsetof(XeWaitUserFence, flags));
      r.u64("value", offsetof(XeWaitUserFence, value));
      r.u64("mask", offsetof(XeWaitUserFence, mask));
      if (auto t = read_le(c.head, offsetof(XeWaitUserFence, timeout), 8)) d.fields["timeout"] = int64_t(*t);
      r.u32("exec_queue_id", offsetof(XeWaitUserFence, exec_queue_id));
      break;
    }
    case kXeDeviceQuery:
      if (auto q = r.u32("query", offsetof(XeDeviceQuery, query)))
        d.fields["query_name"] = drm_name_or_number(kQueries, *q);
      r.u32("size", offsetof(XeDeviceQuery, size));
      r.u64("data", offsetof(XeDeviceQuery, data));
      break;
    default: break;  // named only
  }
  return true;
}

}  // namespace gpuobs::ioctl_detail
