// GPU jobs of the kernel's scheduler (schema 26) in the timeline exports: a
// track per device, the jobs of each ring on lanes of its name, each job a
// slice from run to done, decoded back from the Perfetto file exactly.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "export/chrome_writer.h"
#include "export/perfetto_writer.h"
#include "export/timeline_source.h"
#include "export/trace_layout.h"
#include "perfetto_decode.h"
#include "replay/replay.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"

using namespace gpuobs;
using gpuobs::testing::decode_perfetto;
using gpuobs::testing::Decoded;

namespace gpu_jobs_export_test {
constexpr int64_t kJobsT = 1'000'000'000;
constexpr int64_t kJobsEnd = kJobsT + 100'000;

GpuJobEvent sched(uint32_t event, uint32_t tgid, uint64_t ts, uint64_t seqno) {
  GpuJobEvent e;
  e.hdr = gpuobs_hdr{GPUOBS_EV_GPU_JOB, sizeof(gpuobs_gpu_trace), static_cast<uint64_t>(kJobsT) + ts, tgid, tgid};
  e.event = event;
  e.fence_context = 40;
  e.fence_seqno = seqno;
  if (event != GPUOBS_GPU_TP_DONE) {
    e.ring = "gfx_0.0.0";
    e.device = "0000:03:00.0";
  }
  return e;
}
}  // namespace gpu_jobs_export_test

using namespace gpu_jobs_export_test;

TEST(ExportGpuJobs, JobsOnLanesOfTheirRingUnderTheDevice) {
  gpuobs::testing::TempDir dir;
  std::string path = dir.file("jobs.gpuobs");
  {
    auto w = CaptureWriter::create(path, false, nullptr);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", kJobsT, 0, 4096}).ok());
    (*w)->start();
    (*w)->push(
        ProcEvent{GPUOBS_EV_PROC_FORK, gpuobs_hdr{GPUOBS_EV_PROC_FORK, 0, kJobsT, 100, 100}, 1, 1, 0, "vkcube", ""});
    // Job 1 runs [2000, 10000]; job 2 is handed over at 5000, before job 1
    // is done (a second lane), done at 15000; job 3 at 20000 takes the
    // first lane again and never finishes.
    (*w)->push(sched(GPUOBS_GPU_TP_QUEUE, 100, 1000, 1));
    (*w)->push(sched(GPUOBS_GPU_TP_RUN, 7, 2000, 1));
    (*w)->push(sched(GPUOBS_GPU_TP_QUEUE, 100, 4000, 2));
    (*w)->push(sched(GPUOBS_GPU_TP_RUN, 7, 5000, 2));
    (*w)->push(sched(GPUOBS_GPU_TP_DONE, 0, 10000, 1));
    (*w)->push(sched(GPUOBS_GPU_TP_DONE, 0, 15000, 2));
    (*w)->push(sched(GPUOBS_GPU_TP_QUEUE, 100, 19000, 3));
    (*w)->push(sched(GPUOBS_GPU_TP_RUN, 7, 20000, 3));
    (*w)->push(sched(GPUOBS_GPU_TP_QUEUE, 100, 25000, 4));  // queued, never run: not drawn
    (*w)->stop();
    ASSERT_TRUE((*w)->write_end(kJobsEnd, 0, {}).ok());
  }
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  auto t = exporter::load_timeline(*db);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->gpu_jobs.size(), 3u);
  auto layout = exporter::build_layout(std::move(*t), replay::Result{});
  std::ostringstream out;
  ASSERT_TRUE(exporter::write_perfetto(layout, out).ok());
  Decoded d = decode_perfetto(out.str());

  uint64_t device = 0;
  for (auto& [uuid, tr] : d.tracks)
    if (tr.has_process() && tr.process().process_name() == "GPU jobs 0000:03:00.0") device = uuid;
  ASSERT_NE(device, 0u);
  EXPECT_EQ(d.tracks[device].process().pid(), static_cast<int32_t>(exporter::kGpuJobPidBase));
  std::vector<uint64_t> lanes;
  for (auto& [uuid, tr] : d.tracks)
    if (tr.parent_uuid() == device) {
      EXPECT_EQ(tr.name(), "gfx_0.0.0");
      lanes.push_back(uuid);
    }
  ASSERT_EQ(lanes.size(), 2u);

  std::map<std::string, const gpuobs::testing::DecodedSlice*> by_seqno;
  for (auto& s : d.slices)
    if (s.track == lanes[0] || s.track == lanes[1]) by_seqno[s.args.at("fence_seqno")] = &s;
  ASSERT_EQ(by_seqno.size(), 3u);
  const auto &j1 = *by_seqno.at("1"), &j2 = *by_seqno.at("2"), &j3 = *by_seqno.at("3");
  EXPECT_EQ(j1.name, "vkcube");
  EXPECT_EQ(j1.start, kJobsT + 2000);
  EXPECT_EQ(j1.end, kJobsT + 10000);
  EXPECT_EQ(j1.args.at("queue_wait_ns"), "1000");
  EXPECT_EQ(j1.args.at("pid"), "100");
  EXPECT_EQ(j2.start, kJobsT + 5000);
  EXPECT_EQ(j2.end, kJobsT + 15000);
  EXPECT_NE(j2.track, j1.track);
  EXPECT_EQ(j3.track, j1.track);
  EXPECT_EQ(j3.start, kJobsT + 20000);
  EXPECT_EQ(j3.end, kJobsEnd);  // unfinished: drawn to the capture's end, and says so
  EXPECT_EQ(j3.args.at("unfinished"), "1");
  EXPECT_EQ(j1.args.count("unfinished"), 0u);

  // Chrome JSON: the device as a process, each lane a thread named by the
  // ring, the three jobs as complete events on them.
  std::ostringstream js;
  ASSERT_TRUE(exporter::write_chrome_json(layout, js).ok());
  auto doc = nlohmann::json::parse(js.str());
  const int64_t pid = exporter::kGpuJobPidBase;
  std::set<int64_t> ring_tids;
  std::vector<int64_t> job_starts_us;
  for (auto& e : doc["traceEvents"]) {
    if (!e.contains("pid") || e["pid"].get<int64_t>() != pid) continue;
    if (e["ph"] == "M" && e["name"] == "process_name") { EXPECT_EQ(e["args"]["name"], "GPU jobs 0000:03:00.0"); }
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      EXPECT_EQ(e["args"]["name"], "gfx_0.0.0");
      ring_tids.insert(e["tid"].get<int64_t>());
    }
    if (e["ph"] == "X") {
      EXPECT_EQ(e["name"], "vkcube");
      EXPECT_TRUE(ring_tids.count(e["tid"].get<int64_t>())) << e.dump();
      job_starts_us.push_back(static_cast<int64_t>(e["ts"].get<double>()));
    }
  }
  EXPECT_EQ(ring_tids.size(), 2u);
  EXPECT_EQ(job_starts_us.size(), 3u);
}
