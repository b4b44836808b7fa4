// The driver ioctl decoders (userspace/decode/driver_ioctl.cpp and the
// NVIDIA RM, UVM, AMD KFD and DRM (i915, xe, amdgpu) files beside it) on
// any argument image a traced process could leave. Input layout
// (tests/fuzz/README.md):
//   [0]      driver (GPUOBS_DRV_*, modulo 8)
//   [1..4]   cmd, little-endian
//   [5..6]   head length (modulo GPUOBS_IOCTL_HEAD_MAX + 1)
//   [7]      NVIDIA version: one of kVersions (index modulo its size)
//   [8..15]  syscall return, little-endian
//   then the head bytes, then the aux bytes (at most GPUOBS_IOCTL_AUX_MAX)
// Besides ASan/UBSan, checks what the writer relies on: the fields serialize
// as strict JSON (driver_rows.cpp dumps them without a replacement handler).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string_view>

#include "decode/driver_ioctl.h"
#include "events.h"

namespace {

const gpuobs::NvidiaVersion kVersions[] = {{},           {470, 256, 2}, {525, 147, 5}, {535, 54, 3},
                                           {545, 29, 6}, {550, 90, 7},  {570, 86, 10}, {580, 159, 4}};

uint64_t le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kPrefix = 16;
  if (size < kPrefix) return -1;  // not worth keeping in the corpus
  gpuobs::IoctlCapture c;
  c.driver = data[0] % 8;
  c.cmd = static_cast<uint32_t>(le(data + 1, 4));
  size_t head_len = le(data + 5, 2) % (GPUOBS_IOCTL_HEAD_MAX + 1);
  c.nvidia = kVersions[data[7] % std::size(kVersions)];
  c.ret = static_cast<int64_t>(le(data + 8, 8));
  std::string_view rest(reinterpret_cast<const char*>(data) + kPrefix, size - kPrefix);
  head_len = std::min(head_len, rest.size());
  c.head = rest.substr(0, head_len);
  c.aux = rest.substr(head_len, GPUOBS_IOCTL_AUX_MAX);
  c.dev_minor = data[0] >> 3;

  gpuobs::DecodedIoctl d = gpuobs::decode_ioctl(c);
  std::string fields = d.fields.dump();  // throws (and aborts the fuzzer) on invalid UTF-8
  if (d.status && d.status_name.empty()) std::abort();
  if (c.ret < 0 && !d.failed) std::abort();
  if (d.object && d.object->op != "alloc" && d.object->op != "free") std::abort();
  return 0;
}
