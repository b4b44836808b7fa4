#include "decode/driver_ioctl.h"

#include <cstdio>
#include <optional>

#include "decode/driver_ioctl_internal.h"

namespace gpuobs {

namespace ioctl_detail {

std::optional<uint64_t> read_le(std::string_view bytes, size_t off, size_t width) {
  if (off > bytes.size() || bytes.size() - off < width) return std::nullopt;
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= uint64_t(uint8_t(bytes[off + i])) << (8 * i);
  return v;
}

std::optional<uint8_t> FieldReader::u8(const char* name, size_t off) {
  auto v = read_le(bytes_, off, 1);
  if (!v) return std::nullopt;
  out_[name] = *v;
  return uint8_t(*v);
}

std::optional<uint16_t> FieldReader::u16(const char* name, size_t off) {
  auto v = read_le(bytes_, off, 2);
  if (!v) return std::nullopt;
  out_[name] = *v;
  return uint16_t(*v);
}

std::optional<uint32_t> FieldReader::u32(const char* name, size_t off) {
  auto v = read_le(bytes_, off, 4);
  if (!v) return std::nullopt;
  out_[name] = *v;
  return uint32_t(*v);
}

std::optional<int32_t> FieldReader::s32(const char* name, size_t off) {
  auto v = read_le(bytes_, off, 4);
  if (!v) return std::nullopt;
  int32_t s = int32_t(uint32_t(*v));
  out_[name] = s;
  return s;
}

std::optional<uint64_t> FieldReader::u64(const char* name, size_t off) {
  auto v = read_le(bytes_, off, 8);
  if (!v) return std::nullopt;
  out_[name] = *v;
  return v;
}

std::optional<bool> FieldReader::nv_bool(const char* name, size_t off) {
  auto v = read_le(bytes_, off, 1);
  if (!v) return std::nullopt;
  out_[name] = *v != 0;
  return *v != 0;
}

std::optional<std::string> FieldReader::cstr(const char* name, size_t off, size_t max) {
  if (off >= bytes_.size()) return std::nullopt;
  std::string_view s = bytes_.substr(off, max);
  s = s.substr(0, s.find('\0'));
  std::string str(s);
  // The process wrote it: keep the JSON valid whatever the bytes are.
  for (char& ch : str)
    if (uint8_t(ch) < 0x20 || uint8_t(ch) >= 0x7f) ch = '?';
  out_[name] = str;
  return str;
}

std::optional<std::string> FieldReader::uuid(const char* name, size_t off) {
  if (off > bytes_.size() || bytes_.size() - off < 16) return std::nullopt;
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < 16; ++i) {
    uint8_t b = uint8_t(bytes_[off + i]);
    s += kDigits[b >> 4];
    s += kDigits[b & 0xf];
  }
  out_[name] = s;
  return s;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool nv_status_is_error(uint32_t status) { return status != 0 && (status & 0x10000u) == 0; }

void set_nv_status(DecodedIoctl& d, std::optional<uint32_t> status) {
  if (!status) return;
  d.status = *status;
  d.status_name = nv_status_name(*status);
}

}  // namespace ioctl_detail

DecodedIoctl decode_ioctl(const IoctlCapture& c) {
  DecodedIoctl d;
  switch (c.driver) {
    case GPUOBS_DRV_NVIDIA: ioctl_detail::decode_nvidia(c, d); break;
    case GPUOBS_DRV_NVIDIA_UVM: ioctl_detail::decode_uvm(c, d); break;
    case GPUOBS_DRV_KFD: ioctl_detail::decode_kfd(c, d); break;
    case GPUOBS_DRV_I915:
    case GPUOBS_DRV_XE:
    case GPUOBS_DRV_AMDGPU:
    case GPUOBS_DRV_DRM: ioctl_detail::decode_drm(c, d); break;
    default: d.failed = c.ret < 0; break;  // a device without a decoder: the return value is all we know
  }
  if (c.ret < 0) {
    // The kernel refused the call before the driver wrote its reply: the
    // status bytes are still the caller's input, not an answer.
    d.status.reset();
    d.status_name.clear();
    d.failed = true;
  }
  return d;
}

}  // namespace gpuobs
