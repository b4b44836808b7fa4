#include "decode/gpu_trace.h"

#include <algorithm>

namespace gpuobs {
namespace {

std::optional<uint64_t> uint_field(const TraceFormat& f, std::string_view name, std::span<const uint8_t> entry) {
  const TraceField* tf = f.field(name);
  if (!tf || tf->data_loc || tf->rel_loc) return std::nullopt;
  return trace_uint(*tf, entry);
}

std::optional<int64_t> int_field(const TraceFormat& f, std::string_view name, std::span<const uint8_t> entry) {
  auto v = uint_field(f, name, entry);
  if (!v) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::string string_field(const TraceFormat& f, std::string_view name, std::span<const uint8_t> entry, bool& cut) {
  const TraceField* tf = f.field(name);
  if (!tf) return {};
  auto s = trace_string(*tf, entry);
  if (!s) {
    cut = true;
    return {};
  }
  return *s;
}

}  // namespace

const TraceFormat* GpuTraceFormats::find(uint32_t event, uint32_t name_gen) const {
  if (event == GPUOBS_GPU_TP_FENCE) return fence ? &*fence : nullptr;
  if (event < GPUOBS_GPU_TP_QUEUE || event > GPUOBS_GPU_TP_DONE || name_gen > 1) return nullptr;
  const auto& f = sched[name_gen][event];
  return f ? &*f : nullptr;
}

const char* gpu_trace_event_name(uint32_t event, uint32_t name_gen) {
  switch (event) {
    case GPUOBS_GPU_TP_QUEUE: return name_gen ? "drm_sched_job" : "drm_sched_job_queue";
    case GPUOBS_GPU_TP_RUN: return name_gen ? "drm_run_job" : "drm_sched_job_run";
    case GPUOBS_GPU_TP_DONE: return name_gen ? "drm_sched_process_job" : "drm_sched_job_done";
    case GPUOBS_GPU_TP_FENCE: return "dma_fence_signaled";
  }
  return "unknown";
}

const char* gpu_trace_system(uint32_t event) { return event == GPUOBS_GPU_TP_FENCE ? "dma_fence" : "gpu_scheduler"; }

Result<GpuJobEvent> decode_gpu_trace(const GpuTraceFormats& formats, const gpuobs_gpu_trace& rec) {
  const TraceFormat* fmt = formats.find(rec.event, rec.name_gen);
  if (!fmt)
    return make_error(std::string("no format for ") + gpu_trace_event_name(rec.event, rec.name_gen) + " (event " +
                      std::to_string(rec.event) + ")");
  std::span<const uint8_t> entry(rec.raw, std::min<size_t>(rec.raw_len, sizeof rec.raw));
  if (entry.size() < fmt->fixed_size())
    return make_error(fmt->name + ": entry copy of " + std::to_string(entry.size()) + " bytes, the format needs " +
                      std::to_string(fmt->fixed_size()));
  // The common fields (common_type, common_pid) are not in the copy: a
  // tracepoint's BPF program sees the kernel's pt_regs pointer there, so
  // BPF zeroes them (bpf/gpu_sched.bpf.h). Which event it is comes from
  // the program that fired (rec.event, rec.name_gen).
  GpuJobEvent e;
  e.hdr = rec.hdr;
  e.event = rec.event;
  if (rec.event == GPUOBS_GPU_TP_FENCE) {
    e.device = string_field(*fmt, "driver", entry, e.strings_cut);
    e.ring = string_field(*fmt, "timeline", entry, e.strings_cut);
    e.fence_context = uint_field(*fmt, "context", entry);
    e.fence_seqno = uint_field(*fmt, "seqno", entry);
    return e;
  }
  if (fmt->field("name")) e.ring = string_field(*fmt, "name", entry, e.strings_cut);
  if (fmt->field("dev")) e.device = string_field(*fmt, "dev", entry, e.strings_cut);
  e.fence_context = uint_field(*fmt, "fence_context", entry);
  e.fence_seqno = uint_field(*fmt, "fence_seqno", entry);
  e.fence_ptr = uint_field(*fmt, "fence", entry);
  e.job_id = uint_field(*fmt, "id", entry);
  e.client_id = uint_field(*fmt, "client_id", entry);
  e.job_count = int_field(*fmt, "job_count", entry);
  e.hw_job_count = int_field(*fmt, "hw_job_count", entry);
  return e;
}

}  // namespace gpuobs
