#include "decode/decoder.h"

#include <cstring>

namespace gpuobs {
namespace {

std::string bounded_string(const __u8* p, size_t cap) {
  size_t n = 0;
  while (n < cap && p[n]) ++n;
  return std::string(reinterpret_cast<const char*>(p), n);
}

}  // namespace

const char* api_name(uint32_t api) {
  switch (api) {
    case GPUOBS_API_CU_LAUNCH_KERNEL: return "cuLaunchKernel";
    case GPUOBS_API_CU_LAUNCH_KERNEL_PTSZ: return "cuLaunchKernel_ptsz";
  }
  return "unknown";
}

Event Decoder::decode(const void* data, size_t size) {
  gpuobs_hdr hdr;
  if (size < sizeof hdr) { ++stats_.short_records; return {}; }
  std::memcpy(&hdr, data, sizeof hdr);
  // The BPF ring rounds records up to 8 bytes; the header carries the exact size.
  if (hdr.size > size) { ++stats_.size_mismatch; return {}; }

  auto need = [&](size_t want) {
    if (hdr.size < want) { ++stats_.short_records; return false; }
    return true;
  };
  switch (hdr.type) {
    case GPUOBS_EV_LAUNCH: {
      if (!need(sizeof(gpuobs_launch))) return {};
      gpuobs_launch e;
      std::memcpy(&e, data, sizeof e);
      ++stats_.decoded;
      return e;
    }
    case GPUOBS_EV_IOCTL: {
      if (!need(sizeof(gpuobs_ioctl))) return {};
      gpuobs_ioctl e;
      std::memcpy(&e, data, sizeof e);
      ++stats_.decoded;
      return e;
    }
    case GPUOBS_EV_PROC_FORK:
    case GPUOBS_EV_PROC_EXEC:
    case GPUOBS_EV_PROC_EXIT: {
      if (!need(sizeof(gpuobs_proc))) return {};
      gpuobs_proc raw;
      std::memcpy(&raw, data, sizeof raw);
      ProcEvent e{hdr.type, hdr, raw.start_boottime_ns, raw.ppid, raw.exit_code,
                  bounded_string(raw.comm, sizeof raw.comm),
                  bounded_string(raw.filename, sizeof raw.filename)};
      ++stats_.decoded;
      return e;
    }
  }
  ++stats_.unknown_types;
  return {};
}

}  // namespace gpuobs
