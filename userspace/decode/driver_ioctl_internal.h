// Helpers shared by the per-driver ioctl decoders (nvidia_ioctl.cpp,
// uvm_ioctl.cpp, kfd_ioctl.cpp); not part of the decoder's interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "decode/driver_ioctl.h"

namespace gpuobs::ioctl_detail {

// Linux _IOC layout: dir 31:30, size 29:16, type 15:8, nr 7:0.
constexpr uint32_t ioc_nr(uint32_t cmd) { return cmd & 0xffu; }
constexpr uint32_t ioc_type(uint32_t cmd) { return (cmd >> 8) & 0xffu; }
constexpr uint32_t ioc_size(uint32_t cmd) { return (cmd >> 16) & 0x3fffu; }

// Little-endian unsigned integer of `width` bytes at `off`; nullopt when the
// copied image is too short (BPF may have copied less than the struct).
std::optional<uint64_t> read_le(std::string_view bytes, size_t off, size_t width);

// Reads the fields of one argument image and records every one it could read
// under its driver-header name in a JSON object; a field past the end of the
// image is neither returned nor recorded.
class FieldReader {
 public:
  FieldReader(std::string_view bytes, nlohmann::json& out) : bytes_(bytes), out_(out) {}

  std::optional<uint8_t> u8(const char* name, size_t off);
  std::optional<uint16_t> u16(const char* name, size_t off);
  std::optional<uint32_t> u32(const char* name, size_t off);
  std::optional<int32_t> s32(const char* name, size_t off);  // fds, NUMA nodes, rc
  std::optional<uint64_t> u64(const char* name, size_t off);
  std::optional<bool> nv_bool(const char* name, size_t off);  // NvBool: one byte
  // NUL-terminated string of at most max bytes (what the image holds of it).
  std::optional<std::string> cstr(const char* name, size_t off, size_t max);
  // NvProcessorUuid (16 bytes) as 32 lower-case hex digits.
  std::optional<std::string> uuid(const char* name, size_t off);

  std::string_view bytes() const { return bytes_; }
  nlohmann::json& out() { return out_; }

 private:
  std::string_view bytes_;
  nlohmann::json& out_;
};

std::string hex(uint64_t v);  // "0x1f"

inline DriverObject driver_object(std::string op, std::string kind, uint64_t handle) {
  DriverObject o;
  o.op = std::move(op);
  o.kind = std::move(kind);
  o.handle = handle;
  return o;
}

// NV_STATUS: NV_OK and the NV_WARN_* codes (bit 16 set) are not failures.
bool nv_status_is_error(uint32_t status);
// Sets status/status_name from an NV_STATUS the head held (nothing when it did not).
void set_nv_status(DecodedIoctl& d, std::optional<uint32_t> status);

// Per-driver decoders: fill request, fields, status, object and failed.
void decode_nvidia(const IoctlCapture& c, DecodedIoctl& d);
void decode_uvm(const IoctlCapture& c, DecodedIoctl& d);
void decode_kfd(const IoctlCapture& c, DecodedIoctl& d);
void decode_drm(const IoctlCapture& c, DecodedIoctl& d);  // i915, xe, amdgpu, drm (drm_ioctl.cpp)

}  // namespace gpuobs::ioctl_detail
