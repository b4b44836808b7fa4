// record --gpu-time's last step (capture/gpu_time_import.h) on a capture the
// real writer made from known calls and a CUPTI activity file built slot by
// slot: the rows stored, the counters, kern_sum / copy_sum / memset_sum's
// GPU columns and `gpuobs replay --check`, all exact. The injection on a GPU
// is checked on the H100 (docs/gpu_time.md).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "capture/gpu_time_import.h"
#include "catalogue/api_spec.h"
#include "store/schema.h"
#include "store/writer_fixtures.h"
#include "unit/gpu_time/gt_builder.h"

using namespace gpuobs;
using namespace gpuobs::testing;
using namespace gpuobs::gpu_time;
using gpuobs::gpu_time::testing::FileBuilder;
using gpuobs::gpu_time::testing::gt_record;

namespace {

constexpr uint32_t kPid = 100;

ApiCallEvent call(uint64_t ts, std::string_view api, std::vector<uint64_t> args, uint64_t dur, uint64_t out = 0,
                  std::string blob = {}) {
  const ApiSpec* spec = api_by_symbol(api);
  EXPECT_NE(spec, nullptr) << api;
  ApiCallEvent e{gpuobs_hdr{GPUOBS_EV_API_CALL, 0, ts, kPid, kPid},
                 {},
                 0,
                 dur,
                 out,
                 spec ? spec->id : 0u,
                 GPUOBS_CALL_F_RETURNED | (out ? GPUOBS_CALL_F_OUT_READ : 0u),
                 blob.empty() ? 0u : static_cast<uint32_t>(GPUOBS_BLOB_STRING),
                 std::move(blob)};
  for (size_t i = 0; i < args.size() && i < 8; ++i) e.args[i] = args[i];
  return e;
}

gpuobs_launch launch(uint64_t ts) {
  gpuobs_launch l{};
  l.hdr = gpuobs_hdr{GPUOBS_EV_LAUNCH, 0, ts, kPid, kPid};
  l.function = 0xF1;
  l.grid_x = l.grid_y = l.grid_z = 1;
  l.block_x = l.block_y = l.block_z = 32;
  l.stream = 0x10;
  l.api = GPUOBS_API_CU_LAUNCH_KERNEL;
  return l;
}

// The calls: gemm launched 3 times, an async 1 MiB HtoD copy and a memset on
// stream 0x10, a CUDA graph launch, then a stream sync that proves them all
// done at +9500.
void write_capture(const std::string& path) {
  auto w = new_writer(path);
  w->start();
  w->push(fork_of(kPid, kT0 + 1));
  w->push(call(kT0 + 100, "cuModuleGetFunction", {0, 0xD0, 0}, 40, 0xF1, std::string("_Z4gemmv\0", 9)));
  for (uint64_t t : {1000, 2000, 3000}) w->push(launch(kT0 + t));
  w->push(call(kT0 + 4000, "cuMemcpyHtoDAsync_v2", {0xA0, 0x7000, 1 << 20, 0x10}, 50));
  w->push(call(kT0 + 5000, "cuMemsetD32Async", {0xA0, 7, 1024, 0x10}, 30));
  w->push(call(kT0 + 6000, "cuGraphLaunch", {0xE0, 0x10}, 0));  // a graph of two kernels
  w->push(call(kT0 + 9000, "cuStreamSynchronize", {0x10}, 500));
  w->stop();
  ASSERT_TRUE(w->write_end(kT0 + 10000, 0, {}).ok());
}

// CUPTI's records of that run: each GPU operation's driver API record enters
// 300 ns after the probe saw the call; a kernel nothing captured (a launch
// from a library gpuobs does not probe) has a driver record of its own.
// gemm ran [+1500, +1900), [+2500, +2800), [+3500, +4100); the copy
// [+4200, +4712) (1 MiB in 512 ns); the memset [+5100, +5150).
std::vector<uint8_t> activity_file(uint64_t first_kernel_start = kT0 + 1500) {
  FileBuilder b;
  b.header(kPid);
  const std::string gemm = "gemm()";
  b.name(kPid, gemm);
  auto driver = [&](uint32_t corr, uint64_t at) {
    GtRecord r = gt_record(kGtDriverApi, kPid, corr, at, at + 40);
    r.tid = kPid;
    b.record(r);
  };
  auto kernel = [&](uint32_t corr, uint64_t start, uint64_t end) {
    GtRecord r = gt_record(kGtKernel, kPid, corr, start, end);
    r.name_hash = gt_name_hash(gemm.data(), gemm.size());
    r.stream_id = 13;
    b.record(r);
  };
  driver(1, kT0 + 1300), kernel(1, first_kernel_start, kT0 + 1900);
  driver(2, kT0 + 2300), kernel(2, kT0 + 2500, kT0 + 2800);
  driver(3, kT0 + 3300), kernel(3, kT0 + 3500, kT0 + 4100);
  driver(4, kT0 + 4300);
  GtRecord copy = gt_record(kGtMemcpy, kPid, 4, kT0 + 4200, kT0 + 4712);
  copy.bytes = 1 << 20, copy.copy_kind = 1, copy.stream_id = 13;
  b.record(copy);
  driver(5, kT0 + 5300);
  GtRecord set = gt_record(kGtMemset, kPid, 5, kT0 + 5100, kT0 + 5150);
  set.bytes = 4096, set.stream_id = 13;
  b.record(set);
  {
    // The graph: cuGraphLaunch's driver record (callback id 514), two kernels.
    GtRecord g = gt_record(kGtDriverApi, kPid, 7, kT0 + 6300, kT0 + 6340);
    g.tid = kPid, g.cbid = 514;
    b.record(g);
    kernel(7, kT0 + 6500, kT0 + 6600), kernel(7, kT0 + 6600, kT0 + 6700);
  }
  driver(6, kT0 + 7000), kernel(6, kT0 + 7100, kT0 + 7200);  // no captured call near +7000
  b.stats(kPid, 0, 13, true);
  return b.bytes;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// The one row of a report (--format csv) on the capture; empty when it fails
// or has another number of rows (the test then says so).
std::map<std::string, std::string> one_row(const std::string& report, const std::string& cap) {
  auto [rc, out] = gpuobs_cli("report " + report + " --format csv " + cap);
  EXPECT_EQ(rc, 0) << out;
  auto rows = csv_rows(out);
  EXPECT_EQ(rows.size(), 1u) << out;
  return rows.size() == 1 ? rows[0] : std::map<std::string, std::string>{};
}

}  // namespace

TEST(GpuTimeImport, JoinsStoresCountsAndReports) {
  TempDir dir;
  auto cap = dir.file("g.gpuobs"), file = dir.file("g.gputime");
  write_capture(cap);
  write_file(file, activity_file());
  auto r = import_gpu_times(cap, file);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->gpu_activities, 8u);
  EXPECT_EQ(r->calls, 6u);
  EXPECT_EQ(r->rows, 6u);
  EXPECT_EQ(r->join.joined_by_correlation, 7u);  // the graph's two kernels on its one row
  EXPECT_EQ(r->join.graph_activities, 2u);
  EXPECT_EQ(r->join.activities_without_row, 1u);
  EXPECT_EQ(r->join.rows_without_activity, 0u);

  auto db = open_capture_readonly(cap);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(column(*db,
                   "SELECT call_table || '|' || coalesce(kernel, '-') || '|' || (start_mono_ns - 5000000000) ||"
                   " '|' || duration_ns || '|' || stream_id || '|' || correlation_id || '|' || joined_by"
                   " FROM gpu_times ORDER BY start_mono_ns"),
            (std::vector<std::string>{
                "kernel_launches|gemm()|1500|400|13|1|correlation", "kernel_launches|gemm()|2500|300|13|2|correlation",
                "kernel_launches|gemm()|3500|600|13|3|correlation", "copies|-|4200|512|13|4|correlation",
                "copies|-|5100|50|13|5|correlation", "stream_ops|-|6500|200|13|7|correlation"}));
  EXPECT_EQ(text(*db,
                 "SELECT s.op || ':' || (s.ts_mono_ns - 5000000000) || ':' || g.activities FROM gpu_times g"
                 " JOIN stream_ops s ON s.id = g.row_id WHERE g.call_table = 'stream_ops'"),
            "graph_launch:6000:2");
  // Each GPU time on the call it belongs to.
  EXPECT_EQ(column(*db,
                   "SELECT k.ts_mono_ns - 5000000000 FROM gpu_times g JOIN kernel_launches k ON k.id = g.row_id"
                   " WHERE g.call_table = 'kernel_launches' ORDER BY k.ts_mono_ns"),
            (std::vector<std::string>{"1000", "2000", "3000"}));
  EXPECT_EQ(column(*db,
                   "SELECT x.kind || ':' || (x.ts_mono_ns - 5000000000) FROM gpu_times g JOIN copies x"
                   " ON x.id = g.row_id WHERE g.call_table = 'copies' ORDER BY x.ts_mono_ns"),
            (std::vector<std::string>{"copy:4000", "memset:5000"}));
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'gpu_time_rows'"), 6);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'gpu_time_graph_activities'"), 2);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'gpu_time_activities_without_row'"), 1);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'gpu_time_file_damaged'"), 0);

  auto k = one_row("kern_sum", cap);
  EXPECT_EQ(k["kernel"], "gemm()");
  EXPECT_EQ(k["gpu_launches"], "3");
  EXPECT_EQ(k["gpu_total_ns"], "1300");
  EXPECT_EQ(k["gpu_avg_ns"], "433.3");
  EXPECT_EQ(k["gpu_med_ns"], "400");
  EXPECT_EQ(k["gpu_min_ns"], "300");
  EXPECT_EQ(k["gpu_max_ns"], "600");
  EXPECT_EQ(k["gpu_stddev_ns"], "124.7");  // population stddev of 400, 300, 600
  auto c = one_row("copy_sum", cap);
  EXPECT_EQ(c["gpu_copies"], "1");
  EXPECT_EQ(c["gpu_ns"], "512");
  EXPECT_EQ(c["gpu_gbps"], "2048");  // 1 MiB in 512 ns
  auto m = one_row("memset_sum", cap);
  EXPECT_EQ(m["gpu_memsets"], "1");
  EXPECT_EQ(m["gpu_ns"], "50");

  // The Chrome export: the stream's operations as measured, on a track of
  // their own beside the replay's estimated windows.
  auto trace = dir.file("t.json");
  auto [erc, eout] = gpuobs_cli("export chrome -o " + trace + " " + cap);
  ASSERT_EQ(erc, 0) << eout;
  auto doc = nlohmann::json::parse(std::ifstream(trace));
  int64_t measured_tid = -1;
  for (auto& e : doc["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "Stream stream#1 0x10 (pid 100) measured")
      measured_tid = e["tid"];
  ASSERT_NE(measured_tid, -1) << "no measured track";
  std::vector<std::string> slices;
  for (auto& e : doc["traceEvents"])
    if (e["ph"] == "X" && e["tid"] == measured_tid)
      slices.push_back(e["name"].get<std::string>() + "@" + e["ts"].dump() + "+" + e["dur"].dump() + " " +
                       e["args"]["timing"].get<std::string>().substr(0, 8));
  EXPECT_EQ(slices, (std::vector<std::string>{
                        "gemm()@5000001.5+0.4 measured", "gemm()@5000002.5+0.3 measured",
                        "gemm()@5000003.5+0.6 measured", "cuMemcpyHtoDAsync_v2@5000004.2+0.512 measured",
                        "cuMemsetD32Async@5000005.1+0.05 measured", "cuGraphLaunch@5000006.5+0.2 measured"}));

  // Every measured interval inside its replay window: [enqueue, the sync's return].
  auto [rrc, rout] = gpuobs_cli("replay --check " + cap);
  EXPECT_EQ(rrc, 0) << rout;
  EXPECT_NE(rout.find("replay check: 6 of 6 measured GPU intervals inside"), std::string::npos) << rout;
}

// A measured kernel that starts before the call that enqueued it cannot be:
// --check names it and fails.
TEST(GpuTimeImport, ReplayCheckFailsOnAnIntervalOutsideItsWindow) {
  TempDir dir;
  auto cap = dir.file("g.gpuobs"), file = dir.file("g.gputime");
  write_capture(cap);
  write_file(file, activity_file(kT0 + 900));  // gemm #1 "started" before its launch at +1000
  ASSERT_TRUE(import_gpu_times(cap, file).ok());
  auto [rc, out] = gpuobs_cli("replay --check " + cap);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("replay check: 5 of 6 measured GPU intervals inside their operation's window (1 start before it"),
            std::string::npos)
      << out;
}

// A file that cannot be trusted is an error that names it; the capture is untouched.
TEST(GpuTimeImport, ACorruptFileIsAnErrorAndStoresNothing) {
  TempDir dir;
  auto cap = dir.file("g.gpuobs"), file = dir.file("g.gputime");
  write_capture(cap);
  write_file(file, std::vector<uint8_t>(200, 0x41));
  auto r = import_gpu_times(cap, file);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(file), std::string::npos) << r.error().message;
  auto db = open_capture_readonly(cap);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM gpu_time_rows"), 0);
}
