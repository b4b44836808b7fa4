// Ring-buffer records -> typed events. Never trusts the ring: checks the size,
// switches on the type, checks the size for that type, copies into a local.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "decode/gpu_trace.h"
#include "events.h"
#include "stacks/stack_types.h"

namespace gpuobs {

struct ProcEvent {
  uint32_t type;  // GPUOBS_EV_PROC_FORK / _EXEC / _EXIT, or GPUOBS_EV_LIB_MAP (filename: the library's base name)
  gpuobs_hdr hdr;
  uint64_t start_boottime_ns;
  uint32_t ppid;
  int32_t exit_code;
  std::string comm;
  std::string filename;
  // GPUOBS_EV_LIB_MAP only (ABI 8): the mapped file as the kernel knows it
  // and what BPF did (GPUOBS_LIB_*).
  uint32_t hold = 0;
  uint32_t lib_kdev = 0;
  uint64_t lib_ino = 0;
};

// One ioctl on a watched device; head and aux are the argument bytes BPF
// copied (bpf/events.h struct gpuobs_ioctl), only the valid ones.
struct IoctlEvent {
  gpuobs_hdr hdr;
  uint64_t latency_ns = 0;
  uint64_t arg = 0;
  int64_t ret = 0;
  uint32_t cmd = 0;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  int32_t fd = 0;
  uint32_t driver = GPUOBS_DRV_OTHER;
  uint32_t flags = 0;  // GPUOBS_IOCTL_F_*
  std::string head;
  std::string aux;
};

// Any probed call other than cuLaunchKernel(_ptsz); the blob is the string or
// struct the cookie asked for (empty if none).
struct ApiCallEvent {
  gpuobs_hdr hdr;
  uint64_t args[8];
  int64_t ret;
  uint64_t duration_ns;
  uint64_t out_value;
  uint32_t api;
  uint32_t flags;
  uint32_t blob_kind;
  std::string blob;
};

// Records from the ring, and the stack definitions the resolver adds before
// the first record that uses them.
using Event = std::variant<std::monostate, gpuobs_launch, IoctlEvent, ProcEvent, ApiCallEvent, ModuleDef, FrameDef,
                           StackDef, GpuJobEvent>;

struct DecodeStats {
  uint64_t decoded = 0;
  uint64_t short_records = 0;  // smaller than the header or than their type's struct
  uint64_t unknown_types = 0;  // a type number this build does not know
  uint64_t size_mismatch = 0;  // header size field disagrees with the record
  uint64_t bad_stacks = 0;     // stack trailer inconsistent with the record (record kept, stack not)
  // GPU job / fence records (decode/gpu_trace.h) that did not decode: no
  // format for their event, an entry of another event id, a short copy.
  uint64_t gpu_trace_rejected = 0;
  uint64_t gpu_trace_strings_cut = 0;  // decoded, a ring/device/timeline name past the copied bytes (empty)
};

class Decoder {
 public:
  // monostate when the record is rejected (and counted). The record's stack
  // goes to *stack when given.
  Event decode(const void* data, size_t size, RawStack* stack = nullptr);
  const DecodeStats& stats() const { return stats_; }
  // The format files GPU job records are decoded with (the session reads
  // them from tracefs; tests pass recorded ones).
  void set_gpu_trace_formats(GpuTraceFormats f) { gpu_formats_ = std::move(f); }
  // Why the last GPU trace record was rejected (for a debug message).
  const std::string& last_gpu_trace_error() const { return gpu_error_; }

 private:
  DecodeStats stats_;
  GpuTraceFormats gpu_formats_;
  std::string gpu_error_;
};

// A string blob without its NUL terminator.
std::string blob_string(const ApiCallEvent& e);

}  // namespace gpuobs
