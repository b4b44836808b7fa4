// gpuobsd's Prometheus text for the DRM clients' engine use (fdinfo) and the
// GPU scheduler's jobs per ring (issue 39), from known samples.
#include <gtest/gtest.h>

#include <string>

#include "daemon/drm_engine_health.h"
#include "daemon/metrics_text.h"

using namespace gpuobs;

namespace drm_engine_metrics_test {

gpumetrics::DrmClientSample client(uint32_t pid, const char* driver, uint64_t id,
                                   std::vector<gpumetrics::DrmEngineUsage> engines) {
  gpumetrics::DrmClientSample s;
  s.pid = pid;
  s.info.driver = driver;
  s.info.client_id = id;
  s.info.engines = std::move(engines);
  return s;
}

}  // namespace drm_engine_metrics_test

using namespace drm_engine_metrics_test;

TEST(DrmEngineMetrics, BusySecondsPerProcessAndEngineAndJobsPerRing) {
  std::vector<gpumetrics::DrmClientSample> samples{
      client(100, "i915", 7, {{"render", 1'500'000'000, {}, {}, {}}, {"video", 0, 2, {}, {}}}),
      client(100, "i915", 8, {{"render", 500'000'000, {}, {}, {}}}),  // a second DRM file: summed
      client(200, "xe", 42, {{"rcs", {}, {}, 1000, 10000}}),
  };
  auto rows = drm_engine_health(samples, [](uint32_t pid) { return pid == 100 ? "vk\"cube" : "xe_app"; });
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].engine, "render");
  EXPECT_EQ(rows[0].busy_ns, 2'000'000'000u);
  EXPECT_EQ(rows[1].engine, "video");
  EXPECT_EQ(rows[2].cycles, 1000u);
  EXPECT_FALSE(rows[2].has_busy);

  HealthSnapshot h;
  h.drm_engines = rows;
  h.gpu_rings = {GpuRingHealth{"0000:03:00.0", "gfx_0.0.0", 12}};
  std::string text = render_prometheus(h);
  EXPECT_NE(text.find("# TYPE gpuobs_drm_engine_busy_seconds_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("gpuobs_drm_engine_busy_seconds_total{pid=\"100\",process=\"vk\\\"cube\",driver=\"i915\","
                      "engine=\"render\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpuobs_drm_engine_busy_seconds_total{pid=\"100\",process=\"vk\\\"cube\",driver=\"i915\","
                      "engine=\"video\"} 0\n"),
            std::string::npos);
  // xe counts cycles, not ns: no busy series, a cycles one.
  EXPECT_EQ(text.find("engine=\"rcs\"} 0"), std::string::npos);
  EXPECT_NE(text.find("gpuobs_drm_engine_cycles_total{pid=\"200\",process=\"xe_app\",driver=\"xe\",engine=\"rcs\"} "
                      "1000\n"),
            std::string::npos);
  EXPECT_NE(text.find("gpuobs_gpu_ring_jobs_total{device=\"0000:03:00.0\",ring=\"gfx_0.0.0\"} 12\n"),
            std::string::npos);
}
