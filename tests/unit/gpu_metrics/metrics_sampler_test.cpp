// The sampler thread over a scripted source, the AMD sysfs reader over a
// fake tree, and NVML loading refusals (gpu_metrics/). No BPF, no GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gpu_metrics/amd_sysfs_source.h"
#include "gpu_metrics/metrics_sampler.h"
#include "gpu_metrics/nvml_library.h"
#include "test_util.h"

using namespace gpuobs::gpumetrics;
using gpuobs::testing::TempDir;

namespace {

// One GPU whose utilization is the number of the tick.
class CountingSource : public MetricSource {
 public:
  CountingSource() { gpus_.push_back(GpuInfo{0, "nvidia", "GPU-c", "c", "", "", 0, false}); }
  const std::vector<GpuInfo>& gpus() const override { return gpus_; }
  void sample(int64_t now_ns, SampleBatch& out) override {
    out.metrics.push_back(MetricSample{now_ns, 0, GpuMetric::gpu_util_pct, static_cast<double>(n_++)});
    if (n_ % 2 == 0) ++errors_;
  }
  SourceStatus status() const override { return {"counting", "", "ok", 1}; }
  uint64_t query_errors() const override { return errors_; }

 private:
  std::vector<GpuInfo> gpus_;
  int n_ = 0;
  uint64_t errors_ = 0;
};

}  // namespace

TEST(MetricsSampler, TicksAtItsRateAndHandsOverEverySampleInOrder) {
  std::vector<std::unique_ptr<MetricSource>> sources;
  sources.push_back(std::make_unique<CountingSource>());
  auto s = MetricsSampler::with_sources(100, std::move(sources), {});
  s->start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  SampleBatch got;
  s->take(got);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  s->stop();
  s->take(got);
  SamplerStats st = s->stats();
  EXPECT_GE(st.ticks, 20u);  // 400 ms at 100 Hz, on a loaded 2-core machine
  EXPECT_LE(st.ticks, 41u);
  ASSERT_EQ(got.metrics.size(), st.ticks);
  for (size_t i = 0; i < got.metrics.size(); ++i) {
    EXPECT_EQ(got.metrics[i].value, static_cast<double>(i));
    if (i) { EXPECT_GT(got.metrics[i].mono_ns, got.metrics[i - 1].mono_ns); }
  }
  EXPECT_EQ(st.query_errors, st.ticks / 2);
  auto latest = s->latest();
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0].value, static_cast<double>(st.ticks - 1));
  EXPECT_EQ(s->summary(), "1 GPU (counting: ok), 100 Hz");
}

TEST(MetricsSampler, NoGpuNoThread) {
  auto s = MetricsSampler::with_sources(10, {}, {SourceStatus{"nvml", "", "no libnvidia-ml.so.1", 0}});
  s->start();
  s->stop();
  EXPECT_EQ(s->stats().ticks, 0u);
  EXPECT_EQ(s->summary(), "no GPU (nvml: no libnvidia-ml.so.1)");
}

TEST(NvmlLibrary, ALibraryThatIsNotNvmlIsRefusedByName) {
  auto lib = NvmlLibrary::open_path("libz.so.1");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().message.find("is not NVML (nvmlInit_v2"), std::string::npos) << lib.error().message;
  auto none = NvmlLibrary::open_path("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

// A value the driver refuses (EBUSY leaves the file empty) is a counted
// error, not a zero.
TEST(AmdSysfs, AnUnreadableValueIsCountedNotZero) {
  TempDir dir;
  namespace fs = std::filesystem;
  std::string dev = dir.file("card2/device");
  fs::create_directories(dev);
  std::ofstream(dev + "/vendor") << "0x1002\n";
  std::ofstream(dev + "/gpu_busy_percent") << "\n";
  std::ofstream(dev + "/mem_info_vram_used") << "1024\n";
  AmdSysfsSource src(dir.path(), 3);
  ASSERT_EQ(src.gpus().size(), 1u);
  EXPECT_EQ(src.gpus()[0].index, 3u);
  EXPECT_EQ(src.gpus()[0].name, "AMD GPU");  // no product_name, no device id file
  SampleBatch b;
  src.sample(42, b);
  ASSERT_EQ(b.metrics.size(), 1u);
  EXPECT_EQ(b.metrics[0].metric, GpuMetric::mem_used_bytes);
  EXPECT_EQ(b.metrics[0].value, 1024);
  EXPECT_EQ(b.metrics[0].gpu, 3u);
  EXPECT_EQ(src.query_errors(), 1u);
}
