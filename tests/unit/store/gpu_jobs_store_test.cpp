// GPU jobs through the real writer: a synthetic stream of scheduler and
// dma_fence events (both kernel generations) paired into gpu_jobs rows,
// joined to the submit ioctl, and the gpu_job_sum and drm_engine_sum
// reports on the result, all with known values.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "report/query.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"

using namespace gpuobs;
using gpuobs::testing::column;
using gpuobs::testing::scalar;
using gpuobs::testing::text;
using json = nlohmann::json;

namespace gpu_jobs_test {

constexpr uint64_t kJobT0 = 1'000'000'000;

GpuJobEvent job(uint32_t event, uint32_t tgid, uint32_t tid, uint64_t ts) {
  GpuJobEvent e;
  e.hdr = gpuobs_hdr{event == GPUOBS_GPU_TP_FENCE ? uint32_t{GPUOBS_EV_FENCE_SIGNAL} : uint32_t{GPUOBS_EV_GPU_JOB},
                     sizeof(gpuobs_gpu_trace), kJobT0 + ts, tgid, tid};
  e.event = event;
  return e;
}

// 6.17+: keyed by the fence (context, seqno).
GpuJobEvent sched(uint32_t event, uint32_t tgid, uint32_t tid, uint64_t ts, uint64_t seqno) {
  GpuJobEvent e = job(event, tgid, tid, ts);
  e.fence_context = 1234;
  e.fence_seqno = seqno;
  if (event != GPUOBS_GPU_TP_DONE) {
    e.ring = "gfx_0.0.0";
    e.device = "0000:03:00.0";
    e.client_id = 91;
    e.job_count = 0;
    e.hw_job_count = event == GPUOBS_GPU_TP_RUN ? 2 : 1;
  }
  return e;
}

GpuJobEvent fence(uint64_t ts, uint64_t ctx, uint64_t seqno) {
  GpuJobEvent e = job(GPUOBS_GPU_TP_FENCE, 0, 0, ts);
  e.device = "drm_sched";
  e.ring = "gfx_0.0.0";
  e.fence_context = ctx;
  e.fence_seqno = seqno;
  return e;
}

// Before 6.17: keyed by the fence's address.
GpuJobEvent old(uint32_t event, uint32_t tgid, uint32_t tid, uint64_t ts) {
  GpuJobEvent e = job(event, tgid, tid, ts);
  e.fence_ptr = 0xffff888812345600ull;
  if (event != GPUOBS_GPU_TP_DONE) {
    e.ring = "comp_1.0.0";
    e.job_id = 5;
  }
  return e;
}

gpumetrics::DrmClientSample drm(uint32_t pid, const char* driver, uint64_t client, int64_t t,
                                std::vector<gpumetrics::DrmEngineUsage> engines) {
  gpumetrics::DrmClientSample s;
  s.mono_ns = static_cast<int64_t>(kJobT0) + t;
  s.pid = pid;
  s.fd = 5;
  s.info.driver = driver;
  s.info.pdev = "0000:03:00.0";
  s.info.client_id = client;
  s.info.engines = std::move(engines);
  return s;
}

class GpuJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("j.gpuobs");
    auto w = CaptureWriter::create(path_, false, nullptr);
    ASSERT_TRUE(w.ok());
    writer_ = std::move(*w);
    ASSERT_TRUE(writer_->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", kJobT0, 0, 4096}).ok());
    writer_->start();
    writer_->push(
        ProcEvent{GPUOBS_EV_PROC_FORK, gpuobs_hdr{GPUOBS_EV_PROC_FORK, 0, kJobT0, 100, 100}, 1, 1, 0, "vkcube", ""});
    writer_->push(
        ProcEvent{GPUOBS_EV_PROC_FORK, gpuobs_hdr{GPUOBS_EV_PROC_FORK, 0, kJobT0, 200, 200}, 2, 1, 0, "xe_app", ""});
    // The submit ioctl of thread 101: [1000, 6000] ns. Its record comes
    // after the queue event that fired inside it (emitted at exit).
    IoctlEvent cs{};
    cs.hdr = {GPUOBS_EV_IOCTL, sizeof(gpuobs_ioctl), kJobT0 + 1000, 100, 101};
    cs.latency_ns = 5000;
    cs.cmd = 0xc0186444;  // DRM_IOCTL_AMDGPU_CS
    cs.dev_major = 226;
    cs.dev_minor = 128;
    writer_->push(sched(GPUOBS_GPU_TP_QUEUE, 100, 101, 2000, 1));
    writer_->push(cs);
    writer_->push(sched(GPUOBS_GPU_TP_RUN, 55, 55, 3000, 1));      // a scheduler worker
    writer_->push(sched(GPUOBS_GPU_TP_QUEUE, 100, 101, 9000, 2));  // outside any ioctl
    writer_->push(sched(GPUOBS_GPU_TP_DONE, 0, 0, 10000, 1));
    writer_->push(fence(10010, 1234, 1));
    writer_->push(sched(GPUOBS_GPU_TP_RUN, 55, 55, 12000, 2));
    writer_->push(fence(20000, 1234, 2));  // no done event: the fence ends it
    writer_->push(sched(GPUOBS_GPU_TP_QUEUE, 100, 101, 21000, 3));
    writer_->push(sched(GPUOBS_GPU_TP_RUN, 55, 55, 22000, 3));  // still running at the end
    writer_->push(sched(GPUOBS_GPU_TP_DONE, 0, 0, 23000, 99));  // queued before the capture
    writer_->push(fence(24000, 777, 1));                        // not a job of the capture
    writer_->push(old(GPUOBS_GPU_TP_QUEUE, 100, 102, 30000));
    writer_->push(old(GPUOBS_GPU_TP_RUN, 56, 56, 31000));
    writer_->push(old(GPUOBS_GPU_TP_DONE, 0, 0, 35000));
    // fdinfo: i915-style busy ns for vkcube, xe-style cycles for xe_app.
    gpumetrics::SampleBatch b;
    b.drm.push_back(drm(100, "i915", 7, 1'000'000'000, {{"render", 100'000'000, {}, {}, {}}, {"video", 0, 2, {}, {}}}));
    b.drm.push_back(drm(200, "xe", 42, 1'000'000'000, {{"rcs", {}, {}, 1000, 10000}, {"ccs", {}, 4, 0, 10000}}));
    b.drm.push_back(
        drm(100, "i915", 7, 3'000'000'000, {{"render", 600'000'000, {}, {}, {}}, {"video", 1'000'000'000, 2, {}, {}}}));
    b.drm.push_back(drm(200, "xe", 42, 3'000'000'000, {{"rcs", {}, {}, 3000, 20000}, {"ccs", {}, 4, 4000, 20000}}));
    writer_->push_gpu_samples(b);
    writer_->stop();
    stats_ = writer_->stats();
    ASSERT_TRUE(writer_->write_end(kJobT0 + 4'000'000'000, 0, {}).ok());
  }

  json report(const std::string& name) {
    auto db = open_capture_readonly(path_);
    EXPECT_TRUE(db.ok());
    auto sql = report_sql(name);
    EXPECT_TRUE(sql.ok()) << name;
    auto r = run_query(*db, *sql, {});
    EXPECT_TRUE(r.ok()) << name << ": " << (r.ok() ? "" : r.error().message);
    std::ostringstream out;
    print_result(*r, OutputFormat::json, out);
    return json::parse(out.str());
  }

  gpuobs::testing::TempDir dir_;
  std::string path_;
  std::unique_ptr<CaptureWriter> writer_;
  WriterStats stats_;
};

}  // namespace gpu_jobs_test

using namespace gpu_jobs_test;

TEST_F(GpuJobs, PairsQueueRunAndDoneIntoOneRowPerJob) {
  auto db = open_capture_readonly(path_);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_jobs"), 5);
  // Job 1: every event, submitted by thread 101 of vkcube.
  const std::string j1 = " FROM gpu_jobs WHERE fence_seqno = 1";
  EXPECT_EQ(scalar(*db, "SELECT queued_mono_ns" + j1), static_cast<int64_t>(kJobT0 + 2000));
  EXPECT_EQ(scalar(*db, "SELECT run_mono_ns" + j1), static_cast<int64_t>(kJobT0 + 3000));
  EXPECT_EQ(scalar(*db, "SELECT done_mono_ns" + j1), static_cast<int64_t>(kJobT0 + 10000));
  EXPECT_EQ(scalar(*db, "SELECT signaled_mono_ns" + j1), static_cast<int64_t>(kJobT0 + 10010));
  EXPECT_EQ(scalar(*db, "SELECT tid" + j1), 101);
  EXPECT_EQ(scalar(*db, "SELECT tgid" + j1), 100);
  EXPECT_EQ(text(*db, "SELECT p.comm FROM gpu_jobs j JOIN processes p ON p.id = j.process_id WHERE fence_seqno = 1"),
            "vkcube");
  EXPECT_EQ(text(*db, "SELECT ring" + j1), "gfx_0.0.0");
  EXPECT_EQ(text(*db, "SELECT device" + j1), "0000:03:00.0");
  EXPECT_EQ(scalar(*db, "SELECT client_id" + j1), 91);
  EXPECT_EQ(scalar(*db, "SELECT hw_job_count" + j1), 2);  // the run event's
  EXPECT_EQ(scalar(*db, "SELECT job_count" + j1), 0);
  // Job 2 ended by its fence, job 3 never.
  EXPECT_EQ(text(*db, "SELECT done_mono_ns FROM gpu_jobs WHERE fence_seqno = 2"), "<null>");
  EXPECT_EQ(scalar(*db, "SELECT signaled_mono_ns FROM gpu_jobs WHERE fence_seqno = 2"),
            static_cast<int64_t>(kJobT0 + 20000));
  EXPECT_EQ(text(*db, "SELECT coalesce(done_mono_ns, signaled_mono_ns) FROM gpu_jobs WHERE fence_seqno = 3"), "<null>");
  // A done event of a job queued before the capture: a row without a submitter.
  EXPECT_EQ(text(*db, "SELECT process_id FROM gpu_jobs WHERE fence_seqno = 99"), "<null>");
  EXPECT_EQ(scalar(*db, "SELECT done_mono_ns FROM gpu_jobs WHERE fence_seqno = 99"),
            static_cast<int64_t>(kJobT0 + 23000));
  // Before 6.17: paired by the fence's address.
  const std::string o = " FROM gpu_jobs WHERE fence_ptr IS NOT NULL";
  EXPECT_EQ(scalar(*db, "SELECT count(*)" + o), 1);
  EXPECT_EQ(scalar(*db, "SELECT job_id" + o), 5);
  EXPECT_EQ(scalar(*db, "SELECT done_mono_ns - run_mono_ns" + o), 4000);
  EXPECT_EQ(scalar(*db, "SELECT tid" + o), 102);
  EXPECT_EQ(stats_.gpu_jobs.jobs, 5u);
  EXPECT_EQ(stats_.gpu_jobs.without_queue, 1u);
  EXPECT_EQ(stats_.gpu_jobs.replaced, 0u);
  EXPECT_EQ(stats_.gpu_jobs_open, 1u);  // job 3
}

TEST_F(GpuJobs, FenceSignalsAreStoredAndLinkedToTheirJob) {
  auto db = open_capture_readonly(path_);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM dma_fence_signals"), 3);
  EXPECT_EQ(column(*db, "SELECT s.seqno FROM dma_fence_signals s JOIN gpu_jobs j ON j.id = s.gpu_job_id ORDER BY 1"),
            (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(text(*db, "SELECT gpu_job_id FROM dma_fence_signals WHERE context = 777"), "<null>");
  EXPECT_EQ(text(*db, "SELECT driver FROM dma_fence_signals WHERE context = 777"), "drm_sched");
  EXPECT_EQ(stats_.gpu_jobs.fence_signals, 3u);
  EXPECT_EQ(stats_.gpu_jobs.fences_of_jobs, 2u);
}

TEST_F(GpuJobs, EachJobJoinsTheIoctlThatSubmittedIt) {
  auto db = open_capture_readonly(path_);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_job_ioctls"), 1);
  EXPECT_EQ(scalar(*db, "SELECT j.fence_seqno FROM gpu_job_ioctls v JOIN gpu_jobs j ON j.id = v.gpu_job_id"), 1);
  EXPECT_EQ(scalar(*db, "SELECT i.cmd FROM gpu_job_ioctls v JOIN ioctls i ON i.id = v.ioctl_id"), 0xc0186444ll);
}

TEST_F(GpuJobs, GpuJobSumPerRingAndProcess) {
  json r = report("gpu_job_sum");
  ASSERT_EQ(r.size(), 3u) << r.dump();
  // Largest total first: vkcube on gfx_0.0.0.
  EXPECT_EQ(r[0]["ring"], "gfx_0.0.0");
  EXPECT_EQ(r[0]["device"], "0000:03:00.0");
  EXPECT_EQ(r[0]["process"], "vkcube");
  EXPECT_EQ(r[0]["pid"], 100);
  EXPECT_EQ(r[0]["jobs"], 3);
  EXPECT_EQ(r[0]["finished"], 2);
  EXPECT_EQ(r[0]["unfinished"], 1);
  EXPECT_EQ(r[0]["total_run_ns"], 15000);  // 7000 (done) + 8000 (signal)
  EXPECT_EQ(r[0]["avg_run_ns"], 7500.0);
  EXPECT_EQ(r[0]["max_run_ns"], 8000);
  EXPECT_NEAR(r[0]["avg_queue_ns"].get<double>(), 1666.7, 0.05);  // (1000 + 3000 + 1000) / 3
  EXPECT_EQ(r[0]["max_queue_ns"], 3000);
  EXPECT_EQ(r[0]["submit_ioctls"], 1);
  EXPECT_EQ(r[1]["ring"], "comp_1.0.0");
  EXPECT_EQ(r[1]["device"], "");
  EXPECT_EQ(r[1]["total_run_ns"], 4000);
  EXPECT_EQ(r[1]["avg_queue_ns"], 1000.0);
  EXPECT_EQ(r[2]["ring"], "(unknown)");
  EXPECT_EQ(r[2]["process"], "(unknown)");
  EXPECT_EQ(r[2]["jobs"], 1);
  EXPECT_EQ(r[2]["finished"], 1);
  EXPECT_TRUE(r[2]["total_run_ns"].is_null());
}

TEST_F(GpuJobs, DrmEngineSumFromFdinfoSamples) {
  auto db = open_capture_readonly(path_);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM drm_clients"), 2);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM drm_engine_samples"), 8);
  json r = report("drm_engine_sum");
  ASSERT_EQ(r.size(), 4u) << r.dump();
  auto find = [&](const std::string& engine) -> const json& {
    for (const auto& row : r)
      if (row["engine"] == engine) return row;
    ADD_FAILURE() << "no engine " << engine;
    static json none;
    return none;
  };
  // render: 500 ms busy over 2 s; video: 1 s over 2 s on 2 engines.
  EXPECT_EQ(find("render")["busy_ns"], 500000000);
  EXPECT_EQ(find("render")["busy_pct"], 25.0);
  EXPECT_EQ(find("render")["process"], "vkcube");
  EXPECT_EQ(find("render")["sampled_ns"], 2000000000);
  EXPECT_EQ(find("video")["busy_pct"], 25.0);
  // xe: 2000 of 10000 cycles; ccs 4000 of 10000 cycles on 4 engines.
  EXPECT_EQ(find("rcs")["busy_pct"], 20.0);
  EXPECT_TRUE(find("rcs")["busy_ns"].is_null());
  EXPECT_EQ(find("rcs")["cycles"], 2000);
  EXPECT_EQ(find("ccs")["busy_pct"], 10.0);
  EXPECT_EQ(find("ccs")["driver"], "xe");
  EXPECT_EQ(find("ccs")["pid"], 200);
}
