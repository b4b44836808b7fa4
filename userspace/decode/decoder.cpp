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

std::string blob_string(const ApiCallEvent& e) {
  size_t n = e.blob.find('\0');
  return e.blob.substr(0, n);
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
    case GPUOBS_EV_API_CALL: {
      if (!need(GPUOBS_API_CALL_BASE_SIZE)) return {};
      gpuobs_api_call raw;
      std::memcpy(&raw, data, GPUOBS_API_CALL_BASE_SIZE);
      if (raw.blob_len > hdr.size - GPUOBS_API_CALL_BASE_SIZE || raw.blob_len > GPUOBS_BLOB_MAX) {
        ++stats_.size_mismatch;
        return {};
      }
      ApiCallEvent e{hdr, {}, raw.ret, raw.duration_ns, raw.out_value, raw.api, raw.flags, raw.blob_kind, {}};
      std::memcpy(e.args, raw.args, sizeof e.args);
      e.blob.assign(static_cast<const char*>(data) + GPUOBS_API_CALL_BASE_SIZE, raw.blob_len);
      ++stats_.decoded;
      return e;
    }
  }
  ++stats_.unknown_types;
  return {};
}

}  // namespace gpuobs
