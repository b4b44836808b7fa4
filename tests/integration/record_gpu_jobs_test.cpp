// GPU job tracepoints with real BPF on this kernel: the CI VM has no DRM
// GPU-scheduler driver, so the gpu_scheduler events are absent and
// dma_fence_signaled is there. The capture must succeed, store which
// tracepoints were attached and why the others were not, and count them.
#include <gtest/gtest.h>

#include <filesystem>

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
  std::string cmd = std::string(GPUOBS_BIN) + " record -o " + out + " --no-gpu-devices -- /bin/true";
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
