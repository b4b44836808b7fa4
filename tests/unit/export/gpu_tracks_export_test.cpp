// The GPU metrics sampler's tracks in the timeline exports (schema 19): a
// track per GPU and a counter track per metric, decoded back exactly.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
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
using json = nlohmann::json;

namespace {
constexpr int64_t kT = 1'000'000'000;  // capture start (monotonic ns)
constexpr int64_t kEnd = kT + 10'000;  // capture end
}  // namespace

// GPU metrics (schema 19): a track per GPU (a process of its own) and a
// counter track per metric under it, with the stored samples' exact values
// and times, in Perfetto (double counters) and in Chrome JSON ("C" events).
TEST(ExportGpuMetrics, OneCounterTrackPerGpuMetric) {
  gpuobs::testing::TempDir dir;
  std::string path = dir.file("g.gpuobs");
  {
    auto w = CaptureWriter::create(path, false, nullptr);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", kT, 0, 4096}).ok());
    using namespace gpuobs::gpumetrics;
    GpuInfo g0{0, "nvidia", "GPU-a", "NVIDIA H100", "00000000:01:00.0", "580", 80, true};
    GpuInfo g1{1, "nvidia", "GPU-b", "NVIDIA H100", "00000000:02:00.0", "580", 80, true};
    ASSERT_TRUE((*w)->write_gpus({g0, g1}, {SourceStatus{"nvml", "/lib/libnvidia-ml.so.1", "ok", 2}}, 10).ok());
    (*w)->start();
    SampleBatch b;
    b.metrics = {{kT + 100, 0, GpuMetric::sm_active_pct, 12.5},
                 {kT + 100, 1, GpuMetric::power_mw, 70000},
                 {kT + 200, 0, GpuMetric::sm_active_pct, 12.5},  // unchanged: not stored, not drawn
                 {kT + 300, 0, GpuMetric::sm_active_pct, 87.25},
                 {kT + 300, 1, GpuMetric::power_mw, 350000}};
    (*w)->push_gpu_samples(b);
    (*w)->stop();
    ASSERT_TRUE((*w)->write_end(kEnd, 0, {}).ok());
  }
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  auto t = exporter::load_timeline(*db);
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto layout = exporter::build_layout(std::move(*t), replay::Result{});

  std::ostringstream pf;
  ASSERT_TRUE(exporter::write_perfetto(layout, pf).ok());
  Decoded d = decode_perfetto(pf.str());
  std::map<std::string, uint64_t> gpu;  // name -> uuid
  for (auto& [uuid, tr] : d.tracks)
    if (tr.has_process() && tr.process().pid() >= static_cast<int>(exporter::kGpuPidBase))
      gpu[tr.process().process_name()] = uuid;
  ASSERT_EQ(gpu.size(), 2u);
  ASSERT_TRUE(gpu.count("GPU 1: NVIDIA H100") && gpu.count("GPU 2: NVIDIA H100"));
  std::map<std::pair<uint64_t, std::string>, uint64_t> metric;  // (gpu track, name) -> counter track
  for (auto& [uuid, tr] : d.tracks)
    if (tr.has_counter()) metric[{tr.parent_uuid(), tr.name()}] = uuid;
  ASSERT_EQ(metric.size(), 2u);
  uint64_t sm = metric[{gpu["GPU 1: NVIDIA H100"], "sm_active_pct (%)"}];
  uint64_t power = metric[{gpu["GPU 2: NVIDIA H100"], "power_mw (mW)"}];
  EXPECT_EQ(d.real_counters[sm], (std::vector<std::pair<int64_t, double>>{{kT + 100, 12.5}, {kT + 300, 87.25}}));
  EXPECT_EQ(d.real_counters[power],
            (std::vector<std::pair<int64_t, double>>{{kT + 100, 70000.0}, {kT + 300, 350000.0}}));

  std::ostringstream js;
  ASSERT_TRUE(exporter::write_chrome_json(layout, js).ok());
  auto doc = json::parse(js.str());
  std::map<std::string, std::vector<std::pair<std::string, double>>> chrome;  // "pid name" -> (ts us, value)
  std::map<int64_t, std::string> proc_name;
  for (auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") proc_name[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "C")
      chrome[std::to_string(e["pid"].get<int64_t>()) + " " + e["name"].get<std::string>()].emplace_back(
          e["ts"].dump(), e["args"]["value"].get<double>());
  }
  EXPECT_EQ(proc_name[exporter::kGpuPidBase + 1], "GPU 1: NVIDIA H100");
  EXPECT_EQ(chrome[std::to_string(exporter::kGpuPidBase + 1) + " sm_active_pct (%)"],
            (std::vector<std::pair<std::string, double>>{{"1000000.1", 12.5}, {"1000000.3", 87.25}}));
  EXPECT_EQ(chrome[std::to_string(exporter::kGpuPidBase + 2) + " power_mw (mW)"],
            (std::vector<std::pair<std::string, double>>{{"1000000.1", 70000.0}, {"1000000.3", 350000.0}}));
}
