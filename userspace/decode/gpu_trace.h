// GPU-scheduler and dma_fence trace entries (bpf/gpu_sched.bpf.h) -> typed
// job events, with the format files of the kernel that wrote them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/result.h"
#include "common/trace_format.h"
#include "events.h"

namespace gpuobs {

// The formats of the events a capture attached: per scheduler name
// generation (gpuobs_gpu_trace.name_gen: 0 the 6.17+ names, 1 the older
// ones) and event (GPUOBS_GPU_TP_QUEUE, _RUN, _DONE), and dma_fence_signaled.
struct GpuTraceFormats {
  std::optional<TraceFormat> sched[2][GPUOBS_GPU_TP_DONE + 1];
  std::optional<TraceFormat> fence;
  const TraceFormat* find(uint32_t event, uint32_t name_gen) const;
};

// The tracefs names of each event (system "gpu_scheduler" or "dma_fence").
const char* gpu_trace_event_name(uint32_t event, uint32_t name_gen);
const char* gpu_trace_system(uint32_t event);

// One event of a GPU job. Which fields a kernel has depends on its
// generation: before 6.17 a job is its id and its fence's address; since,
// the fence's (context, seqno), the device and the DRM client id.
struct GpuJobEvent {
  gpuobs_hdr hdr;      // ts: when it fired; tgid/tid: the task it fired in
  uint32_t event = 0;  // GPUOBS_GPU_TP_*
  std::string ring;    // scheduler (ring) name; dma_fence_signaled: the fence's timeline
  std::string device;  // dev_name() of the device; dma_fence_signaled: the fence's driver
  std::optional<uint64_t> fence_context, fence_seqno;
  std::optional<uint64_t> fence_ptr;    // before 6.17: the finished fence's kernel address
  std::optional<uint64_t> job_id;       // before 6.17 (and in 6.17's first form)
  std::optional<uint64_t> client_id;    // drm-client-id of the submitting file (6.17+)
  std::optional<int64_t> job_count;     // jobs waiting in the entity's queue
  std::optional<int64_t> hw_job_count;  // the scheduler's credits in flight on the ring
  bool strings_cut = false;             // a string pointed past the copied bytes
};

// Decodes one record's entry with the format of the event that fired it:
// checks that the fixed fields were copied; a string outside the copy is
// left empty and flagged. The entry's common fields are not used (zero).
Result<GpuJobEvent> decode_gpu_trace(const GpuTraceFormats& formats, const gpuobs_gpu_trace& rec);

}  // namespace gpuobs
