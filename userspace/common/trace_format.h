// A kernel trace event's format file (tracefs events/<system>/<event>/format):
// where each field of the event's entry sits, and reading those fields from
// an entry's bytes. The GPU-scheduler and dma_fence records carry entries
// copied as the kernel wrote them (bpf/gpu_sched.bpf.h), decoded with this.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpuobs {

struct TraceField {
  std::string type;  // as declared: "u64", "__data_loc char[]", "struct dma_fence *"
  std::string name;
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;
  // A string stored after the fixed fields: the u32 field is
  // (length << 16 | offset), the offset from the entry's start (__data_loc)
  // or from the end of the field itself (__rel_loc).
  bool data_loc = false;
  bool rel_loc = false;
};

struct TraceFormat {
  std::string name;  // the event's name ("drm_sched_job_queue")
  uint32_t id = 0;   // the event's id (common_type of its entries)
  std::vector<TraceField> fields;
  const TraceField* field(std::string_view name) const;
  // The end of the last fixed field: the smallest entry this format decodes.
  uint32_t fixed_size() const;
};

// Parses the text of a format file; an error names what is malformed.
Result<TraceFormat> parse_trace_format(std::string_view text);

// Where tracefs keeps its events: /sys/kernel/tracing/events, else
// /sys/kernel/debug/tracing/events; empty when neither exists.
std::string tracefs_events_dir();
// The format of SYSTEM/EVENT under events_dir; an error when the kernel has
// no such event (errno text of the open) or its format does not parse.
Result<TraceFormat> read_trace_format(const std::string& events_dir, const std::string& system,
                                      const std::string& event);

// A field's value in an entry (unsigned fields zero-extended, signed ones
// sign-extended to 64 bits); nullopt when the entry is too short or the
// field is not 1, 2, 4 or 8 bytes.
std::optional<uint64_t> trace_uint(const TraceField& f, std::span<const uint8_t> entry);
// A __data_loc / __rel_loc string, without its NUL; nullopt when it points
// outside the entry (a copy cut short).
std::optional<std::string> trace_string(const TraceField& f, std::span<const uint8_t> entry);

}  // namespace gpuobs
