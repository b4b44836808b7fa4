// GPU metrics (issue 19, part 1) end to end: `gpuobs record` with real BPF,
// the sampler reading the fake libnvidia-ml.so.1 (tests/fakes, loaded
// through LD_LIBRARY_PATH as on the lent H100 host) or a fake amdgpu sysfs
// tree, and every stored value, the reports and the counters checked
// against what the fakes return. Root.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

const std::string kFakeNvmlDir = std::filesystem::path(FAKE_NVML).parent_path().string();

struct Recorded {
  int rc = -1;
  std::string out;
  std::string path;
};

// gpuobs record COMMAND with the fake NVML (unless nvml is false), an empty
// DRM root (unless drm_root names one) and the environment given.
Recorded record(TempDir& dir, const std::string& command, const std::string& env, bool nvml = true,
                const std::string& drm_root = "", const std::string& hz = "20") {
  Recorded r;
  r.path = dir.file("m.gpuobs");
  std::string drm = drm_root.empty() ? dir.file("no-drm") : drm_root;
  std::filesystem::create_directories(drm);
  std::string cmd = "env " + env + (nvml ? " LD_LIBRARY_PATH=" + kFakeNvmlDir : " LD_LIBRARY_PATH=") +
                    " GPUOBS_DRM_ROOT=" + drm + " " + GPUOBS_BIN + " record -f --metrics-hz " + hz +
                    " --detail-interval-ms 100 -o " + r.path + " -- " + command;
  std::tie(r.rc, r.out) = run_output(cmd);
  return r;
}

// The values of one GPU's metric in time order.
std::vector<double> series(Db& db, int gpu, const std::string& metric) {
  std::vector<double> v;
  for (const auto& s : column(db, "SELECT value FROM gpu_metrics WHERE gpu_id = " + std::to_string(gpu) +
                                      " AND metric = '" + metric + "' ORDER BY ts_mono_ns"))
    v.push_back(std::stod(s));
  return v;
}

// The row of a CSV report whose line starts with prefix (its first columns), as column -> value.
std::map<std::string, std::string> csv_row(const std::string& csv, const std::string& prefix) {
  std::istringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  for (size_t i = 0; std::getline(in, line); ++i)
    if (line.rfind(prefix, 0) == 0) return csv_rows(csv)[i];
  return {};
}

}  // namespace

// Two fake GPUs sampled at 20 Hz while a shell that lists itself as an NVML
// compute process sleeps: every value as the fake gives it, each series
// stored only when it changes, the process tied to its processes row, the
// Xid event, and the reports computed from the stored rows.
TEST(GpuMetrics, NvmlValuesAreStoredOnChangeAndReported) {
  TempDir dir;
  std::string pids = dir.file("pids");
  std::ofstream(pids).close();  // empty until the command writes its pid
  auto r = record(dir, "sh -c 'echo $$ > " + pids + "; sleep 1.2'",
                  "FAKE_NVML_PIDS_FILE=" + pids + " FAKE_NVML_XID=79 FAKE_NVML_ENDED_PID=999999");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("GPU metrics: 2 GPUs (nvml: " + kFakeNvmlDir + "/libnvidia-ml.so.1), 20 Hz: "),
            std::string::npos)
      << r.out;
  auto db = open_capture_readonly(r.path);
  ASSERT_TRUE(db.ok()) << db.error().message;

  EXPECT_EQ(
      column(*db,
             "SELECT id || '|' || vendor || '|' || uuid || '|' || name || '|' || pci_bus_id || '|' ||"
             " driver || '|' || memory_total_bytes || '|' || gpm FROM gpus ORDER BY id"),
      (std::vector<std::string>{"1|nvidia|GPU-fake-0000-0000|Fake H100 0|00000000:01:00.0|580.00.fake|85899345920|1",
                                "2|nvidia|GPU-fake-0000-0001|Fake H100 1|00000000:02:00.0|580.00.fake|85899345920|1"}));
  EXPECT_EQ(column(*db, "SELECT source || '|' || status || '|' || gpus || '|' || hz FROM gpu_sources ORDER BY source"),
            (std::vector<std::string>{"amd_sysfs|no AMD GPU|0|20", "nvml|ok|2|20"}));

  const int64_t ticks = scalar(*db, "SELECT value FROM counters WHERE name = 'gpu_metric_ticks'");
  ASSERT_GE(ticks, 15) << "1.2 s at 20 Hz";
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'gpu_metric_query_errors'"), 0);
  for (int gpu : {1, 2}) {
    SCOPED_TRACE("gpu " + std::to_string(gpu));
    // Changes every tick: one row per tick, (t % 4) * 25.
    auto util = series(*db, gpu, "gpu_util_pct");
    ASSERT_EQ(static_cast<int64_t>(util.size()), ticks);
    for (size_t t = 0; t < util.size(); ++t) EXPECT_EQ(util[t], (t % 4) * 25.0) << "tick " << t;
    // Alternates: gpu_idle (1), then sw_power_cap | hw_thermal_slowdown (0x44).
    auto reasons = series(*db, gpu, "clocks_event_reasons");
    ASSERT_EQ(static_cast<int64_t>(reasons.size()), ticks);
    for (size_t t = 0; t < reasons.size(); ++t) EXPECT_EQ(reasons[t], t % 2 ? 68.0 : 1.0) << "tick " << t;
    // Never changes: one row each.
    const double i = gpu - 1;
    EXPECT_EQ(series(*db, gpu, "power_mw"), std::vector<double>{100000 + 1000 * i});
    EXPECT_EQ(series(*db, gpu, "temperature_c"), std::vector<double>{40 + i});
    EXPECT_EQ(series(*db, gpu, "mem_used_bytes"), std::vector<double>{(1 + i) * (1 << 30)});
    EXPECT_EQ(series(*db, gpu, "mem_util_pct"), std::vector<double>{10 + i});
    EXPECT_EQ(series(*db, gpu, "sm_clock_mhz"), std::vector<double>{1980});
    EXPECT_EQ(series(*db, gpu, "mem_clock_mhz"), std::vector<double>{2619});
    EXPECT_EQ(series(*db, gpu, "ecc_corrected_errors"), std::vector<double>{5 + i});
    // GPM: metric id + 0.5 + GPU index (nvml.h: SM_UTIL 2, DRAM_BW_UTIL 10, PCIE_TX_PER_SEC 20).
    EXPECT_EQ(series(*db, gpu, "sm_active_pct"), std::vector<double>{2.5 + i});
    EXPECT_EQ(series(*db, gpu, "dram_bw_util_pct"), std::vector<double>{10.5 + i});
    EXPECT_EQ(series(*db, gpu, "pcie_tx_mibps"), std::vector<double>{20.5 + i});
    EXPECT_EQ(series(*db, gpu, "nvlink_rx_mibps"), std::vector<double>{60.5 + i});
  }
  const std::string pid = [&] {
    std::ifstream in(pids);
    std::string p;
    in >> p;
    return p;
  }();
  ASSERT_FALSE(pid.empty());
  EXPECT_EQ(column(*db,
                   "SELECT gpu_id || '|' || pid || '|' || sm_util_pct || '|' || mem_util_pct || '|' ||"
                   " memory_bytes || '|' || gone || '|' || (process_id = (SELECT id FROM processes WHERE tgid = " +
                       pid + ")) FROM gpu_process_metrics"),
            std::vector<std::string>{"1|" + pid + "|33|11|268435456|0|1"});
  // Utilization samples of a process NVML no longer lists (it ended) bring
  // no row back (review of issue 19: they made a phantom second after exit).
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_process_rows WHERE pid = 999999"), 0);
  // A GPM value is the average over the interval from one GPM sample to the
  // next, stamped at its start: the first at the sampler's first tick.
  EXPECT_EQ(scalar(*db, "SELECT min(ts_mono_ns) FROM gpu_metrics WHERE metric = 'sm_active_pct'"),
            scalar(*db, "SELECT min(ts_mono_ns) FROM gpu_metrics WHERE metric = 'gpu_util_pct'"));
  EXPECT_EQ(column(*db, "SELECT gpu_id || '|' || kind || '|' || code FROM gpu_events"),
            std::vector<std::string>{"2|xid|79"});

  // gpu_sum: time-weighted over the stored rows (each holds until the next).
  auto [src, sum] = run_output(std::string(GPUOBS_BIN) + " report gpu_sum --format csv " + r.path);
  ASSERT_EQ(src, 0) << sum;
  auto power = csv_row(sum, "2,Fake H100 1,power_mw,");
  EXPECT_EQ(power["mean"], "101000") << sum;
  for (const char* k : {"p50", "p95", "min", "max"}) EXPECT_EQ(power[k], "101000") << k << "\n" << sum;
  const double weighted_mean = std::stod(
      text(*db,
           "SELECT sum(value * (until_mono_ns - ts_mono_ns)) * 1.0 / sum(until_mono_ns - ts_mono_ns) FROM gpu_metrics"
           " WHERE gpu_id = 1 AND metric = 'gpu_util_pct'"));
  auto util = csv_row(sum, "1,Fake H100 0,gpu_util_pct,");
  EXPECT_NEAR(std::stod(util["mean"]), weighted_mean, 0.001) << sum;
  EXPECT_EQ(util["min"], "0");
  EXPECT_EQ(util["max"], "75");
  const double idle_s = std::stod(text(*db,
                                       "SELECT sum(until_mono_ns - ts_mono_ns) / 1e9 FROM gpu_metrics"
                                       " WHERE gpu_id = 1 AND metric = 'clocks_event_reasons' AND value = 1"));
  auto idle = csv_row(sum, "1,Fake H100 0,throttle:gpu_idle,");
  EXPECT_NEAR(std::stod(idle["seconds"]), idle_s, 0.0011) << sum;
  auto thermal = csv_row(sum, "1,Fake H100 0,throttle:hw_thermal_slowdown,");
  EXPECT_FALSE(thermal.empty()) << sum;
  EXPECT_TRUE(csv_row(sum, "1,Fake H100 0,throttle:hw_slowdown,").empty()) << "never active: no row\n" << sum;

  auto [prc, procs] = run_output(std::string(GPUOBS_BIN) + " report gpu_procs --format csv " + r.path);
  ASSERT_EQ(prc, 0) << procs;
  auto row = csv_row(procs, pid + ",");
  EXPECT_EQ(row["process"], "sh") << procs;
  EXPECT_EQ(row["gpus"], "1") << procs;
  EXPECT_EQ(row["sm_util_pct_mean"], "33") << procs;
  EXPECT_EQ(row["sm_util_pct_max"], "33") << procs;
  EXPECT_EQ(row["gpu_mem_max_bytes"], "268435456") << procs;
}

// A query that fails is counted on every try; one the GPU does not support
// is asked once and left out, not counted; the capture is complete.
TEST(GpuMetrics, FailingAndUnsupportedQueriesAreCountedNotFatal) {
  TempDir dir;
  auto r = record(dir, "sleep 0.6",
                  "FAKE_NVML_FAIL=nvmlDeviceGetPowerUsage"
                  " FAKE_NVML_UNSUPPORTED=nvmlDeviceGetTemperature,nvmlGpmSampleGet");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto db = open_capture_readonly(r.path);
  ASSERT_TRUE(db.ok());
  const int64_t ticks = scalar(*db, "SELECT value FROM counters WHERE name = 'gpu_metric_ticks'");
  ASSERT_GE(ticks, 5);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'gpu_metric_query_errors'"), 2 * ticks)
      << "two GPUs, one failed power query each per tick";
  EXPECT_EQ(scalar(*db,
                   "SELECT count(*) FROM gpu_metrics WHERE metric IN ('power_mw', 'temperature_c',"
                   " 'sm_active_pct')"),
            0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_metrics WHERE metric = 'gpu_util_pct'"), 2 * ticks);
  EXPECT_EQ(text(*db, "SELECT state FROM capture"), "complete");
  EXPECT_NE(r.out.find(std::to_string(2 * ticks) + " failed queries"), std::string::npos) << r.out;
}

// NVML present but unusable (a stub, no driver): named in the capture and in
// record's summary; no GPU, no samples, the recording itself unharmed.
TEST(GpuMetrics, NvmlThatDoesNotInitializeIsNamed) {
  TempDir dir;
  auto r = record(dir, "true", "FAKE_NVML_INIT_ERROR=9");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto db = open_capture_readonly(r.path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpus"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_sample_rows"), 0);
  const std::string want =
      "NVML (" + kFakeNvmlDir + "/libnvidia-ml.so.1) did not initialize: Driver Not Loaded (NVML error 9)";
  EXPECT_EQ(text(*db, "SELECT status FROM gpu_sources WHERE source = 'nvml'"), want);
  EXPECT_NE(r.out.find("GPU metrics: no GPU (nvml: " + want), std::string::npos) << r.out;
}

// No NVML anywhere the loader or gpuobs looks (this machine has no NVIDIA
// driver): said, not an error.
TEST(GpuMetrics, NoNvmlIsSaid) {
  TempDir dir;
  auto r = record(dir, "true", "", false);
  ASSERT_EQ(r.rc, 0) << r.out;
  auto db = open_capture_readonly(r.path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(text(*db, "SELECT substr(status, 1, 20) FROM gpu_sources WHERE source = 'nvml'"), "no libnvidia-ml.so.1");
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpus"), 0);
}

// --metrics-hz 0: no sampler at all.
TEST(GpuMetrics, ZeroHzSamplesNothing) {
  TempDir dir;
  auto r = record(dir, "true", "", true, "", "0");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.find("GPU metrics"), std::string::npos) << r.out;
  auto db = open_capture_readonly(r.path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_sources"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM counters WHERE name LIKE 'gpu_metric%'"), 0);
}

// An amdgpu card in a fake /sys/class/drm: its files read with their units
// (hwmon: microwatts, millidegrees, Hz), a connector and a non-AMD card
// ignored.
TEST(GpuMetrics, AmdSysfsValuesWithTheirUnits) {
  TempDir dir;
  namespace fs = std::filesystem;
  std::string drm = dir.file("drm");
  auto put = [](const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text << "\n";
  };
  put(drm + "/card0/device/vendor", "0x1002");
  put(drm + "/card0/device/device", "0x74a1");
  put(drm + "/card0/device/product_name", "AMD Instinct MI300X");
  put(drm + "/card0/device/unique_id", "8f2b3c4d5e6f7a81");
  put(drm + "/card0/device/uevent", "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:0c:00.0");
  put(drm + "/card0/device/gpu_busy_percent", "37");
  put(drm + "/card0/device/mem_busy_percent", "12");
  put(drm + "/card0/device/mem_info_vram_used", "4294967296");
  put(drm + "/card0/device/mem_info_vram_total", "206158430208");
  put(drm + "/card0/device/hwmon/hwmon3/power1_average", "150000000");
  put(drm + "/card0/device/hwmon/hwmon3/temp1_input", "55000");
  put(drm + "/card0/device/hwmon/hwmon3/freq1_input", "1700000000");
  put(drm + "/card0/device/hwmon/hwmon3/freq2_input", "1300000000");
  put(drm + "/card0-DP-1/status", "disconnected");
  put(drm + "/card1/device/vendor", "0x10de");
  auto r = record(dir, "sleep 0.3", "", false, drm);
  ASSERT_EQ(r.rc, 0) << r.out;
  auto db = open_capture_readonly(r.path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(column(*db,
                   "SELECT id || '|' || vendor || '|' || uuid || '|' || name || '|' || pci_bus_id || '|' ||"
                   " memory_total_bytes || '|' || gpm FROM gpus"),
            std::vector<std::string>{"1|amd|8f2b3c4d5e6f7a81|AMD Instinct MI300X|0000:0c:00.0|206158430208|0"});
  EXPECT_EQ(column(*db, "SELECT metric || '=' || value FROM gpu_metrics ORDER BY metric"),
            (std::vector<std::string>{"gpu_util_pct=37.0", "mem_clock_mhz=1300.0", "mem_total_bytes=206158430208.0",
                                      "mem_used_bytes=4294967296.0", "mem_util_pct=12.0", "power_mw=150000.0",
                                      "sm_clock_mhz=1700.0", "temperature_c=55.0"}));
  EXPECT_EQ(text(*db, "SELECT status FROM gpu_sources WHERE source = 'amd_sysfs'"), "ok");
}
