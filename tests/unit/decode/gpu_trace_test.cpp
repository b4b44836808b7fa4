// GPU job records decoded with recorded format files (tests/fixtures/tracefs):
// the 6.17+ scheduler events, the older ones, and dma_fence_signaled as this
// VM's kernel has it. Each entry is a byte image written field by field at
// the offsets the kernel's TP_STRUCT__entry gives, not through the parser.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "common/trace_format.h"
#include "decode/decoder.h"
#include "decode/gpu_trace.h"

using namespace gpuobs;

namespace gpu_trace_test {

const std::string kFixtures = std::string(GPUOBS_SOURCE_DIR) + "/tests/fixtures/tracefs";

TraceFormat fixture(const std::string& kernel, const std::string& system, const std::string& event) {
  auto f = read_trace_format(kFixtures + "/" + kernel, system, event);
  EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
  return f.ok() ? *f : TraceFormat{};
}

// A trace entry under construction: fields at fixed offsets, strings
// appended after the fixed part with their __data_loc word.
struct Entry {
  gpuobs_gpu_trace rec{};
  size_t strings_at;
  // The common fields (bytes 0..7) stay zero, as BPF leaves them.
  Entry(uint32_t type, uint32_t event, uint16_t gen, size_t fixed) : strings_at(fixed) {
    rec.hdr = {type, sizeof rec, 5'000, 100, 101};
    rec.event = event;
    rec.name_gen = gen;
    rec.raw_len = sizeof rec.raw;
  }
  template <class T>
  void put(size_t off, T v) {
    std::memcpy(rec.raw + off, &v, sizeof v);
  }
  void str(size_t loc_off, const std::string& s) {
    uint32_t len = static_cast<uint32_t>(s.size() + 1);
    put<uint32_t>(loc_off, (len << 16) | static_cast<uint32_t>(strings_at));
    std::memcpy(rec.raw + strings_at, s.c_str(), len);
    strings_at += len;
  }
};

GpuTraceFormats formats_618() {
  GpuTraceFormats f;
  f.sched[0][GPUOBS_GPU_TP_QUEUE] = fixture("6.18", "gpu_scheduler", "drm_sched_job_queue");
  f.sched[0][GPUOBS_GPU_TP_RUN] = fixture("6.18", "gpu_scheduler", "drm_sched_job_run");
  f.sched[0][GPUOBS_GPU_TP_DONE] = fixture("6.18", "gpu_scheduler", "drm_sched_job_done");
  f.fence = fixture("6.18", "dma_fence", "dma_fence_signaled");
  return f;
}

GpuTraceFormats formats_68() {
  GpuTraceFormats f;
  f.sched[1][GPUOBS_GPU_TP_QUEUE] = fixture("6.8", "gpu_scheduler", "drm_sched_job");
  f.sched[1][GPUOBS_GPU_TP_RUN] = fixture("6.8", "gpu_scheduler", "drm_run_job");
  f.sched[1][GPUOBS_GPU_TP_DONE] = fixture("6.8", "gpu_scheduler", "drm_sched_process_job");
  return f;
}

// drm_sched_job_queue (6.18): name@8 job_count@12 hw_job_count@16 dev@20
// fence_context@24 fence_seqno@32 client_id@40; 48 bytes fixed.
Entry queue_618(uint64_t ctx, uint64_t seqno) {
  Entry e(GPUOBS_EV_GPU_JOB, GPUOBS_GPU_TP_QUEUE, 0, 48);
  e.str(8, "gfx_0.0.0");
  e.put<uint32_t>(12, 3);
  e.put<int32_t>(16, 5);
  e.str(20, "0000:03:00.0");
  e.put<uint64_t>(24, ctx);
  e.put<uint64_t>(32, seqno);
  e.put<uint64_t>(40, 91);
  return e;
}

}  // namespace gpu_trace_test

using namespace gpu_trace_test;

TEST(TraceFormat, ParsesTheRecordedFiles) {
  TraceFormat q = fixture("6.18", "gpu_scheduler", "drm_sched_job_queue");
  EXPECT_EQ(q.name, "drm_sched_job_queue");
  EXPECT_EQ(q.id, 1702u);
  ASSERT_EQ(q.fields.size(), 11u);  // 4 common + 7
  const TraceField* name = q.field("name");
  ASSERT_NE(name, nullptr);
  EXPECT_TRUE(name->data_loc);
  EXPECT_EQ(name->offset, 8u);
  EXPECT_EQ(name->type, "__data_loc char[]");
  const TraceField* hw = q.field("hw_job_count");
  ASSERT_NE(hw, nullptr);
  EXPECT_TRUE(hw->is_signed);
  EXPECT_EQ(hw->offset, 16u);
  EXPECT_EQ(q.field("client_id")->offset, 40u);
  EXPECT_EQ(q.fixed_size(), 48u);

  TraceFormat old = fixture("6.8", "gpu_scheduler", "drm_sched_job");
  EXPECT_EQ(old.field("fence")->type, "struct dma_fence *");
  EXPECT_EQ(old.field("fence")->offset, 16u);
  EXPECT_EQ(old.field("id")->offset, 32u);
  EXPECT_EQ(old.field("fence_context"), nullptr);

  TraceFormat fence = fixture("6.18", "dma_fence", "dma_fence_signaled");
  EXPECT_EQ(fence.name, "dma_fence_signaled");
  EXPECT_EQ(fence.field("context")->size, 4u);
  EXPECT_EQ(fence.field("seqno")->offset, 20u);
  EXPECT_TRUE(fence.field("timeline")->data_loc);
}

TEST(TraceFormat, RejectsWhatIsNotAFormat) {
  EXPECT_FALSE(parse_trace_format("hello\nworld\n").ok());
  EXPECT_FALSE(parse_trace_format("name: x\nID: 1\nformat:\n\tfield:int a;\tsize:4;\n").ok());  // no offset
  EXPECT_FALSE(parse_trace_format("name: x\nID: 1\nformat:\n\tfield:__data_loc char[] s;\toffset:8;\tsize:8;\n").ok());
  auto missing = read_trace_format(kFixtures + "/6.18", "gpu_scheduler", "drm_sched_no_such_event");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no gpu_scheduler/drm_sched_no_such_event tracepoint"), std::string::npos);
}

TEST(TraceFormat, SignedFieldsAreSignExtended) {
  TraceField f{"int", "x", 0, 4, true, false, false};
  uint8_t bytes[4];
  int32_t v = -7;
  std::memcpy(bytes, &v, 4);
  EXPECT_EQ(static_cast<int64_t>(*trace_uint(f, bytes)), -7);
  f.is_signed = false;
  EXPECT_EQ(*trace_uint(f, bytes), 0xfffffff9u);
  EXPECT_FALSE(trace_uint(f, std::span<const uint8_t>(bytes, 3)).has_value());
}

TEST(GpuTrace, DecodesTheQueueEventOf618) {
  auto e = decode_gpu_trace(formats_618(), queue_618(1234, 56).rec);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->event, uint32_t{GPUOBS_GPU_TP_QUEUE});
  EXPECT_EQ(e->ring, "gfx_0.0.0");
  EXPECT_EQ(e->device, "0000:03:00.0");
  EXPECT_EQ(e->fence_context, 1234u);
  EXPECT_EQ(e->fence_seqno, 56u);
  EXPECT_EQ(e->client_id, 91u);
  EXPECT_EQ(e->job_count, 3);
  EXPECT_EQ(e->hw_job_count, 5);
  EXPECT_FALSE(e->job_id.has_value());
  EXPECT_FALSE(e->fence_ptr.has_value());
  EXPECT_FALSE(e->strings_cut);
  EXPECT_EQ(e->hdr.tid, 101u);
}

TEST(GpuTrace, DecodesTheDoneEventOf618) {
  Entry d(GPUOBS_EV_GPU_JOB, GPUOBS_GPU_TP_DONE, 0, 24);
  d.put<uint64_t>(8, 1234);
  d.put<uint64_t>(16, 56);
  auto e = decode_gpu_trace(formats_618(), d.rec);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->fence_context, 1234u);
  EXPECT_EQ(e->fence_seqno, 56u);
  EXPECT_EQ(e->ring, "");
  EXPECT_FALSE(e->hw_job_count.has_value());
}

TEST(GpuTrace, DecodesTheOlderEventNames) {
  // drm_sched_job (6.8): entity@8 fence@16 name@24 id@32 job_count@40 hw_job_count@44.
  Entry q(GPUOBS_EV_GPU_JOB, GPUOBS_GPU_TP_QUEUE, 1, 48);
  q.put<uint64_t>(8, 0xffff888800aa0000ull);
  q.put<uint64_t>(16, 0xffff888812345600ull);
  q.str(24, "comp_1.0.0");
  q.put<uint64_t>(32, 777);
  q.put<uint32_t>(40, 1);
  q.put<int32_t>(44, 4);
  auto e = decode_gpu_trace(formats_68(), q.rec);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->ring, "comp_1.0.0");
  EXPECT_EQ(e->fence_ptr, 0xffff888812345600ull);
  EXPECT_EQ(e->job_id, 777u);
  EXPECT_EQ(e->job_count, 1);
  EXPECT_EQ(e->hw_job_count, 4);
  EXPECT_FALSE(e->fence_context.has_value());
  EXPECT_EQ(e->device, "");

  Entry d(GPUOBS_EV_GPU_JOB, GPUOBS_GPU_TP_DONE, 1, 16);
  d.put<uint64_t>(8, 0xffff888812345600ull);
  auto done = decode_gpu_trace(formats_68(), d.rec);
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_EQ(done->fence_ptr, 0xffff888812345600ull);
  // A 6.8 record is not decoded with the 6.18 formats, nor the reverse.
  EXPECT_FALSE(decode_gpu_trace(formats_618(), d.rec).ok());
  EXPECT_FALSE(decode_gpu_trace(formats_68(), queue_618(1, 1).rec).ok());
}

TEST(GpuTrace, DecodesDmaFenceSignaledWithThisVmsFormat) {
  // driver@8 timeline@12 context@16 (u32) seqno@20 (u32).
  Entry s(GPUOBS_EV_FENCE_SIGNAL, GPUOBS_GPU_TP_FENCE, 0, 24);
  s.str(8, "drm_sched");
  s.str(12, "gfx_0.0.0");
  s.put<uint32_t>(16, 1234);
  s.put<uint32_t>(20, 56);
  auto e = decode_gpu_trace(formats_618(), s.rec);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->device, "drm_sched");
  EXPECT_EQ(e->ring, "gfx_0.0.0");
  EXPECT_EQ(e->fence_context, 1234u);
  EXPECT_EQ(e->fence_seqno, 56u);
}

TEST(GpuTrace, RejectsEntriesThatDoNotMatchTheirFormat) {
  GpuTraceFormats f = formats_618();
  Entry faulted = queue_618(1, 2);
  faulted.rec.raw_len = 0;  // the BPF copy faulted
  auto e = decode_gpu_trace(f, faulted.rec);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("entry copy of 0 bytes, the format needs 48"), std::string::npos)
      << e.error().message;

  GpuTraceFormats none;
  auto no_format = decode_gpu_trace(none, queue_618(1, 2).rec);
  ASSERT_FALSE(no_format.ok());
  EXPECT_NE(no_format.error().message.find("no format for drm_sched_job_queue"), std::string::npos);
  // An event number no program has.
  Entry unknown = queue_618(1, 2);
  unknown.rec.event = 9;
  EXPECT_FALSE(decode_gpu_trace(f, unknown.rec).ok());
}

TEST(GpuTrace, AStringPastTheCopyIsCutNotRead) {
  Entry q = queue_618(1, 2);
  // dev claims 40 bytes at offset 170: past the 192 copied.
  q.put<uint32_t>(20, (40u << 16) | 170u);
  auto e = decode_gpu_trace(formats_618(), q.rec);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->strings_cut);
  EXPECT_EQ(e->device, "");
  EXPECT_EQ(e->ring, "gfx_0.0.0");
}

TEST(GpuTrace, TheDecoderCountsWhatItRejects) {
  Decoder d;
  d.set_gpu_trace_formats(formats_618());
  Entry q = queue_618(1234, 56);
  Event ev = d.decode(&q.rec, sizeof q.rec);
  auto* job = std::get_if<GpuJobEvent>(&ev);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->fence_seqno, 56u);
  // A fence-signal record type carrying a queue event.
  Entry mixed = queue_618(1, 1);
  mixed.rec.hdr.type = GPUOBS_EV_FENCE_SIGNAL;
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&mixed.rec, sizeof mixed.rec)));
  // Short: the record is smaller than struct gpuobs_gpu_trace.
  Entry shortrec = queue_618(1, 1);
  shortrec.rec.hdr.size = 100;
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&shortrec.rec, 100)));
  Entry old_name = queue_618(1, 1);
  old_name.rec.name_gen = 1;  // a program of the older names: no format of those here
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.decode(&old_name.rec, sizeof old_name.rec)));
  EXPECT_EQ(d.stats().decoded, 1u);
  EXPECT_EQ(d.stats().gpu_trace_rejected, 2u);
  EXPECT_EQ(d.stats().short_records, 1u);
}
