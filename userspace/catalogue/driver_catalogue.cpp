// Driver names, NVIDIA versions and rule keys: the catalogue part of the
// ioctl decoders (decode/driver_ioctl.cpp decodes).
#include "catalogue/driver_catalogue.h"

#include <cctype>
#include <optional>
#include <tuple>

namespace gpuobs {

bool NvidiaVersion::at_least(int a, int b, int c) const {
  if (!known()) return true;
  return std::tie(major, minor, patch) >= std::tie(a, b, c);
}

namespace {

// A whole token "N.N" or "N.N.N" (NVIDIA versions have two or three parts).
std::optional<NvidiaVersion> version_token(std::string_view t) {
  int parts[3] = {0, 0, 0};
  int n = 0;
  size_t i = 0;
  for (;;) {
    size_t start = i;
    int v = 0;
    while (i < t.size() && std::isdigit(uint8_t(t[i])) && i - start < 6) v = v * 10 + (t[i++] - '0');
    if (i == start || n == 3) return std::nullopt;
    parts[n++] = v;
    if (i == t.size()) break;
    if (t[i] != '.') return std::nullopt;
    ++i;
  }
  if (n < 2 || parts[0] == 0) return std::nullopt;
  return NvidiaVersion{parts[0], parts[1], parts[2]};
}

}  // namespace

NvidiaVersion parse_nvidia_version(std::string_view text) {
  // The first token made of digits and dots, standing on its own (digits
  // inside "x86_64" or a build host name do not count): in
  // /proc/driver/nvidia/version that is the kernel module's version.
  auto in_token = [](char ch) { return std::isalnum(uint8_t(ch)) || ch == '.' || ch == '_' || ch == '-' || ch == '@'; };
  size_t i = 0;
  while (i < text.size()) {
    if (!in_token(text[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && in_token(text[end])) ++end;
    if (auto v = version_token(text.substr(i, end - i))) return *v;
    i = end;
  }
  return {};
}

uint32_t ioctl_cmd_key(uint32_t driver, uint32_t cmd) {
  // NVIDIA, KFD and DRM accept one request with several sizes: the key drops
  // the direction and size bits (must match the BPF ioctl exit, events.h).
  if (driver == GPUOBS_DRV_NVIDIA_UVM || driver == GPUOBS_DRV_OTHER) return cmd;
  return cmd & 0xffffu;
}

uint32_t driver_from_name(std::string_view name) {
  if (name == "nvidia" || name == "nvidiactl" || name == "nvidia-modeset") return GPUOBS_DRV_NVIDIA;
  if (name == "nvidia-uvm" || name == "nvidia-uvm-tools") return GPUOBS_DRV_NVIDIA_UVM;
  if (name == "kfd") return GPUOBS_DRV_KFD;
  if (name == "i915") return GPUOBS_DRV_I915;
  if (name == "xe") return GPUOBS_DRV_XE;
  if (name == "amdgpu") return GPUOBS_DRV_AMDGPU;
  if (name == "drm") return GPUOBS_DRV_DRM;
  return GPUOBS_DRV_OTHER;
}

std::string_view driver_name(uint32_t driver) {
  switch (driver) {
    case GPUOBS_DRV_NVIDIA: return "nvidia";
    case GPUOBS_DRV_NVIDIA_UVM: return "nvidia-uvm";
    case GPUOBS_DRV_KFD: return "kfd";
    case GPUOBS_DRV_I915: return "i915";
    case GPUOBS_DRV_XE: return "xe";
    case GPUOBS_DRV_AMDGPU: return "amdgpu";
    case GPUOBS_DRV_DRM: return "drm";
    default: return "other";
  }
}

}  // namespace gpuobs
