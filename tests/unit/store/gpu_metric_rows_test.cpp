// GPU metric samples through the real writer (store/gpu_metric_rows.h): a
// value is stored when it changes, per GPU and metric and per process; a
// rotated segment repeats the GPUs and starts every series again; a full
// disk loses counted rows and a value lost with its transaction is stored
// again once there is space.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"

using namespace gpuobs;
using namespace gpuobs::gpumetrics;
using gpuobs::testing::column;
using gpuobs::testing::scalar;
using gpuobs::testing::TempDir;

namespace {

constexpr int64_t kT0 = 1'000'000;

std::unique_ptr<CaptureWriter> writer_with_gpus(const std::string& path) {
  auto w = CaptureWriter::create(path, false, nullptr);
  EXPECT_TRUE(w.ok());
  EXPECT_TRUE((*w)->write_meta(CaptureMeta{"t", CaptureMode::daemon, "", "h", "k", "", kT0, 0, 4096}).ok());
  GpuInfo g{0, "nvidia", "GPU-x", "H100", "00000000:01:00.0", "580", 80, true};
  EXPECT_TRUE((*w)->write_gpus({g}, {SourceStatus{"nvml", "/lib/libnvidia-ml.so.1", "ok", 1}}, 10).ok());
  return std::move(w.value());
}

SampleBatch tick(int64_t t, double util, double power, int32_t proc_sm) {
  SampleBatch b;
  b.metrics = {{kT0 + t, 0, GpuMetric::gpu_util_pct, util}, {kT0 + t, 0, GpuMetric::power_mw, power}};
  b.processes = {{kT0 + t, 0, 4242, proc_sm, 5, 1 << 20, false}};
  return b;
}

void wait_written(CaptureWriter& w, uint64_t rows_failed_at_least = 0) {
  for (int i = 0; i < 200 && w.stats().failed_rows < rows_failed_at_least; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace

TEST(GpuMetricRows, StoredOnChangeOnly) {
  TempDir dir;
  auto path = dir.file("a.gpuobs");
  auto w = writer_with_gpus(path);
  w->start();
  for (auto b : {tick(0, 10, 70000, 33), tick(100, 10, 70000, 33), tick(200, 50, 70000, 33), tick(300, 50, 71000, 40)})
    w->push_gpu_samples(b);
  SampleBatch gone;
  gone.processes = {{kT0 + 400, 0, 4242, -1, -1, -1, true}, {kT0 + 400, 0, 777, -1, -1, -1, true}};
  w->push_gpu_samples(gone);
  w->stop();
  ASSERT_TRUE(w->write_end(kT0 + 1000, 0, {}).ok());
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(column(*db,
                   "SELECT metric || '@' || (ts_mono_ns - 1000000) || '-' || (until_mono_ns - 1000000) || '='"
                   " || value FROM gpu_metrics ORDER BY metric, ts_mono_ns"),
            (std::vector<std::string>{"gpu_util_pct@0-200=10.0", "gpu_util_pct@200-1000=50.0", "power_mw@0-300=70000.0",
                                      "power_mw@300-1000=71000.0"}));
  // The process's change, and its end (a pid never stored has nothing to end).
  EXPECT_EQ(column(*db,
                   "SELECT (t_ns) || ':' || coalesce(sm_util_pct, '-') || ':' || gone FROM gpu_process_rows"
                   " ORDER BY t_ns"),
            (std::vector<std::string>{"0:33:0", "300:40:0", "400:-:1"}));
}

TEST(GpuMetricRows, ARotatedSegmentRepeatsGpusAndStartsEverySeriesAgain) {
  TempDir dir;
  auto a = writer_with_gpus(dir.file("a.gpuobs"));
  a->start();
  auto b0 = tick(0, 10, 70000, 33);
  a->push_gpu_samples(b0);
  a->stop();
  ASSERT_TRUE(a->write_end(kT0 + 500, std::nullopt, {}).ok());

  auto next = CaptureWriter::create(dir.file("b.gpuobs"), false, nullptr);
  ASSERT_TRUE(next.ok());
  auto& b = *next;
  ASSERT_TRUE(b->write_meta(CaptureMeta{"t", CaptureMode::daemon, "", "h", "k", "", kT0 + 500, 0, 4096}).ok());
  ASSERT_TRUE(b->continue_from(*a).ok());
  b->start();
  auto b1 = tick(600, 10, 70000, 33);  // the same values as a's last: stored again here
  b->push_gpu_samples(b1);
  b->stop();
  ASSERT_TRUE(b->write_end(kT0 + 1000, std::nullopt, {}).ok());
  auto db = open_capture_readonly(dir.file("b.gpuobs"));
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(column(*db, "SELECT uuid || '|' || name FROM gpus"), std::vector<std::string>{"GPU-x|H100"});
  EXPECT_EQ(column(*db, "SELECT source || '|' || status || '|' || hz FROM gpu_sources"),
            std::vector<std::string>{"nvml|ok|10"});
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_metric_names"), static_cast<int64_t>(metric_catalogue().size()));
  EXPECT_EQ(column(*db, "SELECT metric || '=' || value FROM gpu_metrics ORDER BY metric"),
            (std::vector<std::string>{"gpu_util_pct=10.0", "power_mw=70000.0"}));
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_process_rows"), 1);
}

TEST(GpuMetricRows, AFullDiskLosesCountedRowsAndStoresTheValueAgainLater) {
  TempDir dir;
  auto path = dir.file("full.gpuobs");
  auto w = writer_with_gpus(path);
  auto pages = Db::open(path, SQLITE_OPEN_READONLY)->scalar("PRAGMA page_count");
  ASSERT_TRUE(pages.ok());
  ASSERT_TRUE(w->limit_pages(*pages).ok());
  w->start();
  // Many distinct values: the file cannot grow, so the transaction fails.
  SampleBatch big;
  for (int i = 0; i < 5000; ++i) big.metrics.push_back({kT0 + i, 0, GpuMetric::sm_clock_mhz, 1000.0 + i});
  w->push_gpu_samples(big);
  wait_written(*w, 5000);
  EXPECT_EQ(w->stats().failed_rows, 5000u);
  ASSERT_TRUE(w->limit_pages(0).ok());
  // The last of them again: lost before, so not "unchanged" now.
  SampleBatch again;
  again.metrics = {{kT0 + 6000, 0, GpuMetric::sm_clock_mhz, 1000.0 + 4999}};
  w->push_gpu_samples(again);
  w->stop();
  ASSERT_TRUE(w->write_end(kT0 + 7000, 0, {}).ok());
  auto db = open_capture_readonly(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(column(*db, "SELECT value FROM gpu_metrics"), std::vector<std::string>{"5999.0"});
}
