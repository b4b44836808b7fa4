// What BPF copies at each watched ioctl's exit (the ioctl_rules map), per
// driver and driver version: built from the command catalogues, installed by
// the loader (Engine::set_ioctl_rules).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "catalogue/driver_catalogue.h"
#include "catalogue/drm_uapi.h"
#include "catalogue/nvidia_escapes.h"
#include "catalogue/uvm_commands.h"

namespace gpuobs {
namespace {

// One ioctl_rules value (events.h: struct gpuobs_ioctl_rule).
gpuobs_ioctl_rule ioctl_rule(uint16_t head_len, uint8_t aux_mode = GPUOBS_IOCTL_AUX_NONE, uint16_t aux_off = 0,
                             uint16_t aux_len = 0, uint8_t aux_len_field = 0) {
  gpuobs_ioctl_rule r{};
  r.head_len = head_len;
  r.aux_off = aux_off;
  r.aux_len = aux_len;
  r.aux_mode = aux_mode;
  r.aux_len_field = aux_len_field;
  return r;
}

void add_nvidia_rules(std::vector<IoctlRuleEntry>& rules) {
  using namespace nv;
  auto key = [](uint32_t nr) {
    return gpuobs_ioctl_rule_key{.driver = GPUOBS_DRV_NVIDIA, .cmd_key = (kNvIoctlMagic << 8) | nr};
  };
  // RM_ALLOC: the whole argument (its size tells the layout) and the class
  // parameter block pAllocParms points to.
  rules.push_back({key(kRmAlloc), ioctl_rule(0, GPUOBS_IOCTL_AUX_PTR, 16, GPUOBS_IOCTL_AUX_MAX)});
  // IOCTL_XFER_CMD: the wrapped argument at ptr, as long as its size (the u32 at head[4]).
  rules.push_back({key(kIoctlXferCmd), ioctl_rule(16, GPUOBS_IOCTL_AUX_PTR, 8, GPUOBS_IOCTL_AUX_MAX, 4 + 1)});
}

void add_uvm_rules(const NvidiaVersion& v, std::vector<IoctlRuleEntry>& rules) {
  using namespace uvm;
  for (const UvmCommand& c : commands()) {
    if (!c.routed) continue;
    gpuobs_ioctl_rule_key key{.driver = GPUOBS_DRV_NVIDIA_UVM, .cmd_key = c.number};
    if (c.number == kMapExternalAllocation || c.number == kAllocSemaphorePool) {
      uint32_t off = large_aux_off(c.number, v);
      auto aux_len = uint16_t(params_size(c, v) - off);
      rules.push_back({key, ioctl_rule(kLargeHeadLen, GPUOBS_IOCTL_AUX_ARG, uint16_t(off), aux_len)});
      continue;
    }
    uint32_t size = params_size(c, v);
    if (size == 0 || size > GPUOBS_IOCTL_HEAD_MAX) continue;  // unknown, or past what the head holds
    rules.push_back({key, ioctl_rule(uint16_t(size))});
  }
}

// DRM driver requests: the key is ('d' << 8) | (DRM_COMMAND_BASE + nr).
gpuobs_ioctl_rule_key drm_key(uint32_t driver, uint32_t nr) {
  return gpuobs_ioctl_rule_key{.driver = driver, .cmd_key = (drm::kIoctlType << 8) | (drm::kCommandBase + nr)};
}

void add_drm_rules(std::vector<IoctlRuleEntry>& rules) {
  using namespace drm;
  // xe: VM_BIND's binds behind vector_of_binds when there are several (the
  // first kXeVmBindOpsCopied of them); EXEC_QUEUE_CREATE's engines behind
  // instances. The head is the whole struct (_IOC_SIZE).
  rules.push_back(
      {drm_key(GPUOBS_DRV_XE, kXeVmBind), ioctl_rule(0, GPUOBS_IOCTL_AUX_PTR, uint16_t(offsetof(XeVmBind, bind)),
                                                     uint16_t(kXeVmBindOpsCopied * sizeof(XeVmBindOp)))});
  rules.push_back({drm_key(GPUOBS_DRV_XE, kXeExecQueueCreate),
                   ioctl_rule(0, GPUOBS_IOCTL_AUX_PTR, uint16_t(offsetof(XeExecQueueCreate, instances)),
                              uint16_t(kXeInstancesCopied * sizeof(XeEngineClassInstance)))});
  // amdgpu: the unions whose outputs overwrite their first inputs keep those
  // inputs as they were at entry; CS walks its chunks (bpf/drm.bpf.h).
  for (uint32_t nr : {kAmdgpuGemCreate, kAmdgpuGemMmap, kAmdgpuCtx, kAmdgpuBoList, kAmdgpuWaitCs, kAmdgpuGemWaitIdle,
                      kAmdgpuWaitFences, kAmdgpuVm, kAmdgpuFenceToHandle, kAmdgpuUserq})
    rules.push_back({drm_key(GPUOBS_DRV_AMDGPU, nr), ioctl_rule(0, GPUOBS_IOCTL_AUX_ENTRY, 0, GPUOBS_IOCTL_ENTRY_MAX)});
  rules.push_back({drm_key(GPUOBS_DRV_AMDGPU, kAmdgpuCs),
                   ioctl_rule(0, GPUOBS_IOCTL_AUX_AMDGPU_CS, 0, sizeof(gpuobs_amdgpu_cs_aux))});
}

}  // namespace

std::vector<IoctlRuleEntry> ioctl_rules(const NvidiaVersion& v) {
  std::vector<IoctlRuleEntry> rules;
  add_nvidia_rules(rules);
  add_uvm_rules(v, rules);
  add_drm_rules(rules);
  // KFD needs none: its structs fit in the default _IOC_SIZE copy.
  return rules;
}

}  // namespace gpuobs
