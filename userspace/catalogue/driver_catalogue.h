// The GPU drivers gpuobs knows by device: which driver a /proc/devices name
// is, the NVIDIA driver version that picks argument layouts, and what BPF
// copies at each ioctl (the ioctl_rules map the loader installs). Below
// loader, decode and store: the loader matches devices and installs the
// rules, the decoders (decode/*_ioctl.cpp) read the same command tables
// (catalogue/uvm_commands.h, nvidia_escapes.h) to decode the arguments.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "events.h"

namespace gpuobs {

// The NVIDIA kernel module's version, from /proc/driver/nvidia/version
// ("580.159.04"); zero fields when unknown (then the newest layouts apply).
struct NvidiaVersion {
  int major = 0, minor = 0, patch = 0;
  bool known() const { return major != 0; }
  // Is this version at least a.b.c? Unknown counts as the newest.
  bool at_least(int a, int b, int c) const;
};
// Parses "NVRM version: NVIDIA UNIX ... Kernel Module  580.159.04  Tue ..." or
// a bare "580.159.04"; unknown (all zero) when there is no version in it.
NvidiaVersion parse_nvidia_version(std::string_view text);

// What BPF must copy for one request of one driver: an entry of the
// ioctl_rules map.
struct IoctlRuleEntry {
  gpuobs_ioctl_rule_key key;
  gpuobs_ioctl_rule rule;
};
// Every rule for this driver version (catalogue/ioctl_rules.cpp).
std::vector<IoctlRuleEntry> ioctl_rules(const NvidiaVersion& v);

// The key BPF computes for a command of a driver (events.h).
uint32_t ioctl_cmd_key(uint32_t driver, uint32_t cmd);
// Driver kind of a /proc/devices name ("nvidia", "nvidiactl", "nvidia-uvm",
// "kfd"), of a DRM node's kernel driver ("i915", "xe", "amdgpu"; "drm" for
// the core requests of any other) or of a user's spec prefix;
// GPUOBS_DRV_OTHER if none.
uint32_t driver_from_name(std::string_view name);
// "nvidia", "nvidia-uvm", "kfd", "i915", "xe", "amdgpu", "drm", "other"
std::string_view driver_name(uint32_t driver);

}  // namespace gpuobs
