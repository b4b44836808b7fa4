// The GPU job decoders (issue 39): tracefs format files
// (userspace/common/trace_format.cpp), trace entries decoded with them
// (userspace/decode/gpu_trace.cpp: the bytes BPF copied from the kernel's
// entry, strings found by __data_loc words) and DRM fdinfo text
// (userspace/gpu_metrics/drm_fdinfo.cpp, read from other users' processes).
// Input layout (tests/fuzz/README.md):
//   [0]      bit 7 set: the rest is fdinfo text; else bits 0..2 pick a
//            recorded format (modulo 5) and the rest is the entry
//   [1..2]   raw_len, little-endian (modulo GPUOBS_GPU_TRACE_RAW_MAX + 1)
//   then the entry bytes (at most GPUOBS_GPU_TRACE_RAW_MAX), or the text
// The rest is also parsed as a format file. Checks: a decoded string fits
// the copy; an fdinfo parse has a driver, and named engines and regions.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/trace_format.h"
#include "decode/gpu_trace.h"
#include "gpu_metrics/drm_fdinfo.h"

namespace {

constexpr const char* kCommon =
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

struct Recorded {
  uint32_t event, gen;
  const char* head;
  const char* fields;
};
const Recorded kFormats[] = {
    {GPUOBS_GPU_TP_QUEUE, 0, "name: drm_sched_job_queue\nID: 1702\nformat:\n",
     "\tfield:__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n"
     "\tfield:u32 job_count;\toffset:12;\tsize:4;\tsigned:0;\n"
     "\tfield:int hw_job_count;\toffset:16;\tsize:4;\tsigned:1;\n"
     "\tfield:__data_loc char[] dev;\toffset:20;\tsize:4;\tsigned:0;\n"
     "\tfield:u64 fence_context;\toffset:24;\tsize:8;\tsigned:0;\n"
     "\tfield:u64 fence_seqno;\toffset:32;\tsize:8;\tsigned:0;\n"
     "\tfield:u64 client_id;\toffset:40;\tsize:8;\tsigned:0;\n"},
    {GPUOBS_GPU_TP_DONE, 0, "name: drm_sched_job_done\nID: 1704\nformat:\n",
     "\tfield:u64 fence_context;\toffset:8;\tsize:8;\tsigned:0;\n"
     "\tfield:u64 fence_seqno;\toffset:16;\tsize:8;\tsigned:0;\n"},
    {GPUOBS_GPU_TP_QUEUE, 1, "name: drm_sched_job\nID: 1431\nformat:\n",
     "\tfield:struct drm_sched_entity * entity;\toffset:8;\tsize:8;\tsigned:0;\n"
     "\tfield:struct dma_fence * fence;\toffset:16;\tsize:8;\tsigned:0;\n"
     "\tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;\n"
     "\tfield:uint64_t id;\toffset:32;\tsize:8;\tsigned:0;\n"
     "\tfield:u32 job_count;\toffset:40;\tsize:4;\tsigned:0;\n"
     "\tfield:int hw_job_count;\toffset:44;\tsize:4;\tsigned:1;\n"},
    {GPUOBS_GPU_TP_DONE, 1, "name: drm_sched_process_job\nID: 1433\nformat:\n",
     "\tfield:struct dma_fence * fence;\toffset:8;\tsize:8;\tsigned:0;\n"},
    {GPUOBS_GPU_TP_FENCE, 0, "name: dma_fence_signaled\nID: 2190\nformat:\n",
     "\tfield:__data_loc char[] driver;\toffset:8;\tsize:4;\tsigned:0;\n"
     "\tfield:__data_loc char[] timeline;\toffset:12;\tsize:4;\tsigned:0;\n"
     "\tfield:unsigned int context;\toffset:16;\tsize:4;\tsigned:0;\n"
     "\tfield:unsigned int seqno;\toffset:20;\tsize:4;\tsigned:0;\n"},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return -1;
  std::string_view rest(reinterpret_cast<const char*>(data + 3), size - 3);
  (void)gpuobs::parse_trace_format(rest);
  if (data[0] & 0x80) {
    auto f = gpuobs::gpumetrics::parse_drm_fdinfo(rest);
    if (f.ok()) {
      if (f->driver.empty()) std::abort();
      for (const auto& e : f->engines)
        if (e.engine.empty()) std::abort();
      for (const auto& m : f->memory)
        if (m.region.empty()) std::abort();
    }
    return 0;
  }
  const Recorded& r = kFormats[(data[0] & 7) % 5];
  auto fmt = gpuobs::parse_trace_format(std::string(r.head) + kCommon + r.fields);
  if (!fmt.ok()) std::abort();  // the recorded formats always parse
  gpuobs::GpuTraceFormats formats;
  if (r.event == GPUOBS_GPU_TP_FENCE) formats.fence = *fmt;
  else formats.sched[r.gen][r.event] = *fmt;
  gpuobs_gpu_trace rec{};
  rec.hdr = {r.event == GPUOBS_GPU_TP_FENCE ? uint32_t{GPUOBS_EV_FENCE_SIGNAL} : uint32_t{GPUOBS_EV_GPU_JOB},
             sizeof rec, 1, 2, 3};
  rec.event = r.event;
  rec.name_gen = static_cast<uint16_t>(r.gen);
  rec.raw_len = static_cast<uint16_t>((data[1] | (data[2] << 8)) % (GPUOBS_GPU_TRACE_RAW_MAX + 1));
  std::memcpy(rec.raw, rest.data(), std::min<size_t>(rest.size(), sizeof rec.raw));
  auto e = gpuobs::decode_gpu_trace(formats, rec);
  if (e.ok() && (e->ring.size() > rec.raw_len || e->device.size() > rec.raw_len)) std::abort();
  return 0;
}
