// What BPF copies at each watched ioctl's exit (the ioctl_rules map), per
// driver and driver version: built from the command catalogues, installed by
// the loader (Engine::set_ioctl_rules).
#include <cstdint>
#include <vector>

#include "catalogue/driver_catalogue.h"
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

}  // namespace

std::vector<IoctlRuleEntry> ioctl_rules(const NvidiaVersion& v) {
  std::vector<IoctlRuleEntry> rules;
  add_nvidia_rules(rules);
  add_uvm_rules(v, rules);
  // KFD needs none: its structs fit in the default _IOC_SIZE copy.
  return rules;
}

}  // namespace gpuobs
