// Which character devices the ioctl layer watches: GPU drivers' majors read
// from /proc/devices, plus user/test specs ("MAJOR", "MAJOR:MINOR", "/dev/x").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpuobs {

struct DeviceMatch {
  uint32_t major = 0;
  std::optional<uint32_t> minor;  // empty: every minor of the major
  std::string name;               // driver name or the spec given
  uint32_t driver = 0;            // GPUOBS_DRV_*: how its ioctls are decoded
};

// GPU driver majors in the "Character devices:" section of /proc/devices
// (nvidia 195 and nvidiactl, nvidia-uvm's dynamic major, kfd's dynamic major).
std::vector<DeviceMatch> gpu_devices_from_proc_devices(std::string_view text);
// DRM nodes: the minors of the "drm" major in /proc/devices (226) that
// sys_root/dev/char/MAJOR:MINOR lists with a device bound to a driver; the
// driver is the basename of that entry's device/driver link (i915, xe and
// amdgpu decoded as theirs, any other as drm: its core requests only), the
// name /dev/dri/ and the node's own name (card0, renderD128). sys_root is
// "/sys" on a host, a fixture tree in tests.
std::vector<DeviceMatch> drm_devices_from_sysfs(std::string_view proc_devices, const std::string& sys_root);
// Reads /proc/devices and /sys; an unreadable file yields no devices.
std::vector<DeviceMatch> gpu_devices_on_host();
// "MAJOR", "MAJOR:MINOR" or "/dev/x", optionally prefixed by the driver the
// device stands for: "kfd=/dev/null" decodes its ioctls as KFD's.
Result<DeviceMatch> parse_device_spec(std::string_view spec);

}  // namespace gpuobs
