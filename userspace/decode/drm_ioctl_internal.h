// Helpers shared by the DRM ioctl decoders (drm_ioctl.cpp: the core requests
// and the dispatch; i915_ioctl.cpp, xe_ioctl.cpp, amdgpu_ioctl.cpp: each
// driver's own). Not part of the decoder's interface.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "decode/driver_ioctl.h"
#include "decode/driver_ioctl_internal.h"

namespace gpuobs::ioctl_detail {

struct DrmName {
  uint32_t number;
  std::string_view name;
};

// The name of number in a table; "" when it is not there.
std::string_view drm_lookup(std::span<const DrmName> table, uint32_t number);
// The names of the bits of flags a table names, and the rest in hex.
nlohmann::json drm_flag_names(std::span<const DrmName> table, uint64_t flags);
// A name, or "N" for a value the table does not know.
std::string drm_name_or_number(std::span<const DrmName> table, uint32_t number);

// One driver's requests (nr relative to DRM_COMMAND_BASE): set d.request
// and decode the fields; false when the number is not known.
bool decode_i915(uint32_t nr, const IoctlCapture& c, DecodedIoctl& d);
bool decode_xe(uint32_t nr, const IoctlCapture& c, DecodedIoctl& d);
bool decode_amdgpu(uint32_t nr, const IoctlCapture& c, DecodedIoctl& d);

}  // namespace gpuobs::ioctl_detail
