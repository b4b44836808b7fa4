// GPU job tracepoints with real BPF on this kernel: the CI VM has no DRM
// GPU-scheduler driver, so the gpu_scheduler events are absent and
// dma_fence_signaled is there. The capture must succeed, store which
// tracepoints were attached and why the others were not, and count them.
#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <span>

#include "common/trace_format.h"
#include "loader/engine.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

bool has_tracepoint(const std::string& system, const std::string& event) {
  std::error_code ec;
  for (const char* root : {"/sys/kernel/tracing/events/", "/sys/kernel/debug/tracing/events/"})
    if (std::filesystem::exists(std::string(root) + system + "/" + event + "/format", ec)) return true;
  return false;
}

}  // namespace

TEST(RecordGpuJobs, StoresWhichGpuTracepointsThisKernelHas) {
  // What this test is about: a kernel without the scheduler events and
  // with dma_fence's. On another kernel the expectations would differ.
  ASSERT_FALSE(has_tracepoint("gpu_scheduler", "drm_sched_job_queue")) << "this host has a DRM scheduler driver";
  ASSERT_TRUE(has_tracepoint("dma_fence", "dma_fence_signaled")) << "this kernel has no dma_fence tracepoints";
  TempDir dir;
  std::string out = dir.file("jobs.gpuobs");
  // 1.2 s at 10 Hz: the fdinfo scanner looks at the recorded tree's fds
  // (none is a DRM node here) without a GPU for the metric sources.
  std::string cmd = std::string(GPUOBS_BIN) + " record -o " + out + " --no-gpu-devices --metrics-hz 10 -- sleep 1.2";
  ASSERT_EQ(run(cmd), 0) << cmd;
  auto db = open_capture_readonly(out);
  ASSERT_TRUE(db.ok()) << db.error().message;

  const std::string tp = " FROM probes WHERE library LIKE 'tracefs:%'";
  EXPECT_EQ(scalar(*db, "SELECT count(*)" + tp), 7);
  EXPECT_EQ(column(*db, "SELECT symbol || ' ' || program || ' ' || status" + tp + " ORDER BY symbol"),
            (std::vector<std::string>{
                "dma_fence/dma_fence_signaled gpu_fence_signaled attached",
                "gpu_scheduler/drm_run_job gpu_job_run_old missing",
                "gpu_scheduler/drm_sched_job gpu_job_queue_old missing",
                "gpu_scheduler/drm_sched_job_done gpu_job_done missing",
                "gpu_scheduler/drm_sched_job_queue gpu_job_queue missing",
                "gpu_scheduler/drm_sched_job_run gpu_job_run missing",
                "gpu_scheduler/drm_sched_process_job gpu_job_done_old missing",
            }));
  std::string why = text(*db, "SELECT error" + tp + " AND symbol = 'gpu_scheduler/drm_sched_job_queue'");
  EXPECT_NE(why.find("no gpu_scheduler/drm_sched_job_queue tracepoint"), std::string::npos) << why;
  EXPECT_NE(why.find("no DRM GPU-scheduler driver is loaded"), std::string::npos) << why;
  EXPECT_EQ(text(*db, "SELECT coalesce(error, '')" + tp + " AND status = 'attached'"), "");
  EXPECT_GT(scalar(*db, "SELECT attached_mono_ns" + tp + " AND status = 'attached'"), 0);

  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'gpu_tracepoints_not_attached'"), 6);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'decode_gpu_trace_rejected'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'dropped_gpu_trace_ringbuf_full'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM counters WHERE name = 'submitted_gpu_trace'"), 1);
  EXPECT_GE(scalar(*db, "SELECT value FROM counters WHERE name = 'drm_fdinfo_scans'"), 1);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'drm_fdinfo_samples'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM drm_clients"), 0);
  // Record mode keeps only the fences of jobs its processes queued: none here.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_jobs"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM dma_fence_signals"), 0);

  // Shown: the attach report and the job report run on the capture.
  auto [rc, probes] = run_output(std::string(GPUOBS_BIN) + " report probes " + out + " --wide 2>&1");
  EXPECT_EQ(rc, 0) << probes;
  EXPECT_NE(probes.find("dma_fence/dma_fence_signaled"), std::string::npos) << probes;
  EXPECT_NE(probes.find("no DRM GPU-scheduler driver"), std::string::npos) << probes;
  auto [rc2, jobs] = run_output(std::string(GPUOBS_BIN) + " report gpu_job_sum " + out + " 2>&1");
  EXPECT_EQ(rc2, 0) << jobs;
}

// The BPF side of the GPU job records for real: dma_fence_signaled never
// fires on this VM, so its loaded program is attached to sys_enter_getppid
// as well, and the records of this thread's getppid() calls must carry that
// event's entry as the kernel wrote it: the syscall number at the offset its
// format file gives, and the common fields zeroed (the kernel keeps a
// pt_regs pointer there for BPF: no kernel address reaches the ring).
TEST(RecordGpuJobs, TheEntryCopyIsTheKernelsEntry) {
  EngineOptions o;
  o.attach_ioctl = false;
  o.attach_process = false;
  auto engine = Engine::create(o);
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  auto fmt = read_trace_format(tracefs_events_dir(), "syscalls", "sys_enter_getppid");
  ASSERT_TRUE(fmt.ok()) << fmt.error().message;
  EXPECT_FALSE((*engine)->attach_gpu_program_to("gpu_job_queue", "syscalls", "sys_enter_getppid").ok())
      << "a program whose tracepoint is missing is not loaded";
  ASSERT_TRUE((*engine)->attach_gpu_program_to("gpu_fence_signaled", "syscalls", "sys_enter_getppid").ok());
  const uint32_t tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  std::vector<gpuobs_gpu_trace> mine;
  size_t short_records = 0;
  ASSERT_TRUE((*engine)
                  ->start([&](const void* data, size_t size) {
                    if (size < sizeof(gpuobs_gpu_trace)) {
                      ++short_records;
                      return;
                    }
                    gpuobs_gpu_trace r;
                    std::memcpy(&r, data, sizeof r);
                    if (r.hdr.type == GPUOBS_EV_FENCE_SIGNAL && r.hdr.tid == tid) mine.push_back(r);
                  })
                  .ok());
  uint64_t before = (*engine)->counters()[GPUOBS_CNT_SUBMIT_GPU_TRACE];
  for (int i = 0; i < 5; ++i) ::syscall(SYS_getppid);
  for (int i = 0; i < 10 && mine.size() < 5; ++i) (*engine)->poll(50);
  ASSERT_EQ(mine.size(), 5u);
  EXPECT_EQ(short_records, 0u);
  EXPECT_GE((*engine)->counters()[GPUOBS_CNT_SUBMIT_GPU_TRACE] - before, 5u);
  const TraceField* nr = fmt->field("__syscall_nr");
  ASSERT_NE(nr, nullptr);
  ASSERT_EQ(nr->offset, 8u);
  for (const auto& r : mine) {
    EXPECT_EQ(r.event, uint32_t{GPUOBS_GPU_TP_FENCE});
    EXPECT_EQ(r.raw_len, GPUOBS_GPU_TRACE_RAW_MAX);
    EXPECT_EQ(r.hdr.size, sizeof(gpuobs_gpu_trace));
    EXPECT_EQ(r.hdr.tgid, static_cast<uint32_t>(::getpid()));
    std::span<const uint8_t> entry(r.raw, r.raw_len);
    uint64_t common;
    std::memcpy(&common, r.raw, 8);
    EXPECT_EQ(common, 0u);
    EXPECT_EQ(static_cast<int64_t>(*trace_uint(*nr, entry)), SYS_getppid);
  }
}
