// Every report of schema/reports/ against a capture written by the real
// writer from synthetic events whose totals are known: numbers are checked
// exactly, from the JSON output. Filters (:pid, :process, :since_s, :until_s)
// too.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "catalogue/api_spec.h"
#include "report/query.h"
#include "store/schema.h"
#include "store/writer.h"
#include "test_util.h"

using namespace gpuobs;
using json = nlohmann::json;

namespace {

constexpr uint64_t kT0 = 1'000'000'000;  // capture start (monotonic ns)

uint32_t api_id(std::string_view symbol) {
  const ApiSpec* s = api_by_symbol(symbol);
  if (!s) ADD_FAILURE() << "no API " << symbol;
  return s ? s->id : 0;
}

gpuobs_hdr hdr(uint32_t type, uint32_t tgid, uint64_t ts) { return gpuobs_hdr{type, 0, ts, tgid, tgid}; }

// A returned call: args, result, duration, out-value.
ApiCallEvent call(uint32_t tgid, uint64_t ts, std::string_view api, std::vector<uint64_t> args, int64_t ret,
                  uint64_t dur, uint64_t out = 0, std::string blob = {}) {
  ApiCallEvent e{hdr(GPUOBS_EV_API_CALL, tgid, ts),
                 {},
                 ret,
                 dur,
                 out,
                 api_id(api),
                 GPUOBS_CALL_F_RETURNED | (out ? GPUOBS_CALL_F_OUT_READ : 0u),
                 blob.empty() ? 0u : static_cast<uint32_t>(GPUOBS_BLOB_STRING),
                 std::move(blob)};
  for (size_t i = 0; i < args.size() && i < 8; ++i) e.args[i] = args[i];
  return e;
}

gpuobs_launch launch(uint32_t tgid, uint64_t ts, uint64_t fn, uint32_t grid, uint32_t block, uint64_t stream) {
  gpuobs_launch l{};
  l.hdr = hdr(GPUOBS_EV_LAUNCH, tgid, ts);
  l.function = fn;
  l.grid_x = grid, l.grid_y = 1, l.grid_z = 1;
  l.block_x = block, l.block_y = 1, l.block_z = 1;
  l.stream = stream;
  l.api = GPUOBS_API_CU_LAUNCH_KERNEL;
  return l;
}

class Reports : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("r.gpuobs");
    auto w = CaptureWriter::create(path_, false, nullptr);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->write_meta(CaptureMeta{"t", CaptureMode::record, "c", "h", "k", "", kT0, 0, 4096}).ok());
    ASSERT_TRUE((*w)->write_watched_device(195, std::nullopt, "nvidia").ok());
    (*w)->start();
    auto push = [&](Event e) { (*w)->push(std::move(e)); };
    push(ProcEvent{GPUOBS_EV_PROC_FORK, hdr(GPUOBS_EV_PROC_FORK, 100, kT0), 1, 1, 0, "trainer", ""});
    push(ProcEvent{GPUOBS_EV_PROC_FORK, hdr(GPUOBS_EV_PROC_FORK, 200, kT0), 2, 1, 0, "infer", ""});
    const uint64_t s = 1'000'000'000;  // 1 s
    // trainer (pid 100), first second: a named kernel launched 3 times on stream 0x10.
    push(call(100, kT0 + s / 10, "cuModuleGetFunction", {0, 0xD0, 0}, 0, 40, 0xF1, std::string("_Z4gemmv\0", 9)));
    // The launches share one stack (a pseudo-module's frame: not symbolized).
    push(ModuleDef{1, "[anon]", 0, 0, nullptr});
    push(FrameDef{1, 1, 0x1234});
    push(StackDef{1, 0, {1}});
    (*w)->push(launch(100, kT0 + s / 5, 0xF1, 2, 128, 0x10), 1);
    (*w)->push(launch(100, kT0 + s / 5 + 1, 0xF1, 4, 128, 0x10), 1);
    (*w)->push(launch(100, kT0 + s / 5 + 2, 0xF1, 6, 128, 0x10), 1);
    for (uint64_t d : {100, 300, 200}) push(call(100, kT0 + s / 2 + d, "cuStreamSynchronize", {0x10}, 0, d));
    push(call(100, kT0 + s / 2 + 10, "cuMemcpyHtoD_v2", {0xA0, 0x5000, 1000}, 0, 50));
    push(call(100, kT0 + s / 2 + 11, "cuMemcpyHtoDAsync_v2", {0xA0, 0x5000, 4000, 0x10}, 0, 10));
    push(call(100, kT0 + s / 2 + 12, "cuMemcpyHtoD_v2", {0xA0, 0x5000, 77}, 1, 5));  // failed
    push(call(100, kT0 + s / 2 + 13, "cuMemsetD8_v2", {0xA0, 7, 256}, 0, 7));
    // A stream query answering CUDA_ERROR_NOT_READY: not a failure.
    push(call(100, kT0 + s / 2 + 14, "cuStreamQuery", {0x10}, 600, 0));
    push(call(100, kT0 + s / 2 + 20, "cuMemAlloc_v2", {0, 1 << 20}, 0, 20, 0xA0));
    push(call(100, kT0 + s / 2 + 21, "cuMemAlloc_v2", {0, 2 << 20}, 0, 30, 0xB0));
    push(call(100, kT0 + s / 2 + 22, "cuMemFree_v2", {0xA0}, 0, 8));
    // Three NV_ESC_RM_FREE: fine, refused by the kernel (-EINVAL), refused by RM (a status).
    IoctlEvent io{hdr(GPUOBS_EV_IOCTL, 100, kT0 + s / 2 + 30),
                  1000,
                  0,
                  0,
                  0xC0104629,
                  195,
                  0,
                  5,
                  GPUOBS_DRV_NVIDIA,
                  0,
                  std::string(16, '\0'),
                  {}};
    push(io);
    io.hdr.ts_ns += 1, io.latency_ns = 3000, io.ret = -22;
    push(io);
    io.hdr.ts_ns += 1, io.latency_ns = 500, io.ret = 0;
    io.head[12] = 0x33;  // NVOS00 status: NV_ERR_INVALID_OBJECT_HANDLE
    push(io);
    // infer (pid 200), after two seconds: an unnamed kernel, a long sync, a failed alloc.
    push(launch(200, kT0 + 2 * s + 1, 0xF2, 1, 64, 0));
    push(call(200, kT0 + 2 * s + 2, "cuStreamSynchronize", {0}, 0, 1000));
    push(call(200, kT0 + 2 * s + 3, "cuMemAlloc_v2", {0, 1 << 30}, 2, 9));
    (*w)->stop();
    ASSERT_TRUE((*w)->write_end(kT0 + 3 * s, 0, {}).ok());
  }

  json report(const std::string& name, const Params& params = {}) {
    auto db = open_capture_readonly(path_);
    EXPECT_TRUE(db.ok());
    auto sql = report_sql(name);
    EXPECT_TRUE(sql.ok()) << name;
    auto r = run_query(*db, *sql, params);
    EXPECT_TRUE(r.ok()) << name << ": " << (r.ok() ? "" : r.error().message);
    std::ostringstream out;
    print_result(*r, OutputFormat::json, out);
    return json::parse(out.str());
  }

  static const json& row(const json& rows, const std::string& key, const json& value) {
    for (const auto& r : rows)
      if (r[key] == value) return r;
    static json none;
    ADD_FAILURE() << "no row with " << key << " = " << value << " in " << rows.dump();
    return none;
  }

  gpuobs::testing::TempDir dir_;
  std::string path_;
};

}  // namespace

TEST_F(Reports, ApiSumHasExactStatistics) {
  json r = report("api_sum");
  const json& sync = row(r, "api", "cuStreamSynchronize");
  EXPECT_EQ(sync["calls"], 4);
  EXPECT_EQ(sync["timed_calls"], 4);
  EXPECT_EQ(sync["total_ns"], 1600);
  EXPECT_DOUBLE_EQ(sync["avg_ns"].get<double>(), 400.0);
  EXPECT_DOUBLE_EQ(sync["median_ns"].get<double>(), 250.0);  // (200 + 300) / 2
  EXPECT_EQ(sync["min_ns"], 100);
  EXPECT_EQ(sync["max_ns"], 1000);
  EXPECT_DOUBLE_EQ(sync["stddev_ns"].get<double>(), 408.2);  // sqrt(500000 / 3)
  // All timed host time: 1600 + 40 + 50 + 10 + 5 + 7 + 0 + 20 + 30 + 8 + 9 = 1779 ns.
  EXPECT_DOUBLE_EQ(sync["time_pct"].get<double>(), 89.94);
  EXPECT_EQ(r[0]["api"], "cuStreamSynchronize");  // most time first
  const json& launch = row(r, "api", "cuLaunchKernel");
  EXPECT_EQ(launch["calls"], 4);
  EXPECT_EQ(launch["timed_calls"], 0);
  EXPECT_TRUE(launch["median_ns"].is_null());
  const json& alloc = row(r, "api", "cuMemAlloc_v2");
  EXPECT_EQ(alloc["calls"], 3);
  EXPECT_DOUBLE_EQ(alloc["median_ns"].get<double>(), 20.0);
}

TEST_F(Reports, KernSumPerKernelName) {
  json r = report("kern_sum");
  ASSERT_EQ(r.size(), 2u);
  const json& gemm = row(r, "kernel", "gemm()");
  EXPECT_EQ(gemm["launches"], 3);
  EXPECT_EQ(gemm["processes"], 1);
  EXPECT_EQ(gemm["streams"], 1);
  EXPECT_EQ(gemm["grid_min"], 2);
  EXPECT_EQ(gemm["grid_max"], 6);
  EXPECT_DOUBLE_EQ(gemm["grid_avg"].get<double>(), 4.0);
  EXPECT_EQ(gemm["block_max"], 128);
  const json& unknown = row(r, "kernel", "(unknown: handle 0xf2)");
  EXPECT_EQ(unknown["launches"], 1);
}

TEST_F(Reports, CopyAndMemsetSums) {
  json c = report("copy_sum");
  ASSERT_EQ(c.size(), 2u);
  const json& sync = row(c, "mode", "sync");
  EXPECT_EQ(sync["direction"], "HtoD");
  EXPECT_EQ(sync["copies"], 1);
  EXPECT_EQ(sync["bytes"], 1000);
  EXPECT_EQ(sync["host_ns"], 50);  // successful calls only, like every other column
  EXPECT_EQ(sync["failed"], 1);
  const json& async = row(c, "mode", "async");
  EXPECT_EQ(async["bytes"], 4000);
  EXPECT_EQ(async["failed"], 0);
  json m = report("memset_sum");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]["api"], "cuMemsetD8_v2");
  EXPECT_EQ(m[0]["bytes"], 256);
}

TEST_F(Reports, SyncStreamProcIoctlSums) {
  json s = report("sync_sum");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0]["pid"], 200);  // most blocked first
  EXPECT_EQ(s[0]["blocked_ns"], 1000);
  EXPECT_EQ(s[1]["pid"], 100);
  EXPECT_EQ(s[1]["target"], "stream");
  EXPECT_EQ(s[1]["stream"], "stream#1");  // stream_names' label, never the handle
  EXPECT_TRUE(s[1]["event"].is_null());
  EXPECT_EQ(s[1]["syncs"], 3);
  EXPECT_EQ(s[1]["blocked_ns"], 600);

  json st = report("stream_sum");
  const json& s10 = row(st, "handle", 0x10);
  EXPECT_EQ(s10["stream"], "stream#1");
  EXPECT_EQ(s10["kernels"], 3);
  EXPECT_EQ(s10["copies"], 1);
  EXPECT_EQ(s10["bytes"], 4000);
  EXPECT_EQ(s10["ops"], 4);

  json p = report("proc_sum");
  ASSERT_EQ(p.size(), 2u);
  const json& trainer = row(p, "pid", 100);
  EXPECT_EQ(trainer["process"], "trainer");
  EXPECT_EQ(trainer["kernels"], 3);
  EXPECT_EQ(trainer["api_calls"], 3 + 1 + 3 + 4 + 1 + 3);  // launches, lookup, syncs, copies+memset, query, allocs+free
  EXPECT_EQ(trainer["copy_bytes"], 5000);
  EXPECT_EQ(trainer["device_mem_peak"], 3 << 20);
  EXPECT_EQ(trainer["ioctls"], 3);
  EXPECT_EQ(trainer["errors"], 3);  // the failed copy, the two failed ioctls
  EXPECT_DOUBLE_EQ(trainer["first_s"].get<double>(), 0.1);
  const json& infer = row(p, "pid", 200);
  EXPECT_EQ(infer["errors"], 1);
  EXPECT_EQ(infer["device_mem_peak"], 0);

  json io = report("ioctl_sum");
  ASSERT_EQ(io.size(), 1u);
  EXPECT_EQ(io[0]["driver"], "nvidia");
  EXPECT_EQ(io[0]["request"], "NV_ESC_RM_FREE");
  EXPECT_EQ(io[0]["calls"], 3);
  EXPECT_EQ(io[0]["total_ns"], 4500);
  EXPECT_EQ(io[0]["failed"], 2);
}

TEST_F(Reports, ErrorsInTimeOrder) {
  json e = report("errors");
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0]["call"], "cuMemcpyHtoD_v2");
  EXPECT_EQ(e[0]["result"], 1);
  EXPECT_EQ(e[1]["layer"], "ioctl");
  EXPECT_EQ(e[1]["call"], "NV_ESC_RM_FREE");
  EXPECT_EQ(e[1]["result"], -22);
  EXPECT_EQ(e[2]["result"], 0x33);
  EXPECT_EQ(e[2]["status"], "NV_ERR_INVALID_OBJECT_HANDLE");
  EXPECT_EQ(e[3]["pid"], 200);
  EXPECT_EQ(e[3]["call"], "cuMemAlloc_v2");
  EXPECT_EQ(e[3]["result"], 2);
}

TEST_F(Reports, FiltersByPidProcessAndTime) {
  EXPECT_EQ(report("kern_sum", {{"pid", int64_t{200}}}).size(), 1u);
  EXPECT_EQ(report("kern_sum", {{"process", std::string("trainer")}})[0]["launches"], 3);
  // From second 1.5: only infer's activity.
  json late = report("api_sum", {{"since_s", 1.5}});
  EXPECT_EQ(row(late, "api", "cuStreamSynchronize")["calls"], 1);
  EXPECT_EQ(report("errors", {{"until_s", 1.0}}).size(), 3u);
  EXPECT_EQ(report("proc_sum", {{"process", std::string("infer")}}).size(), 1u);
}

// Without a time filter the launch reports read the writer's launch_agg; with
// one (here one that keeps everything) they read the launches: same answer.
TEST_F(Reports, LaunchAggregatesAgreeWithTheLaunches) {
  for (const char* name : {"kern_sum", "api_sum", "stream_sum", "top_stacks"})
    EXPECT_EQ(report(name), report(name, {{"since_s", 0.0}})) << name;
  json l = report("launches");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(row(l, "kernel", "gemm()")["launches"], 3);
  EXPECT_DOUBLE_EQ(row(l, "kernel", "gemm()")["first_s"].get<double>(), 0.2);
  json c = report("calls");
  EXPECT_EQ(row(c, "family", "launch")["calls"], 3);
}

TEST_F(Reports, TopStacksRankByLaunches) {
  json t = report("top_stacks");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["stack_id"], 1);
  EXPECT_EQ(t[0]["launches"], 3);
  EXPECT_EQ(t[0]["calls"], 3);
  EXPECT_EQ(t[0]["depth"], 1);
  EXPECT_EQ(t[0]["stack"], "?");
  EXPECT_EQ(report("top_stacks", {{"pid", int64_t{200}}}).size(), 0u);
}

TEST_F(Reports, SqlIsReadOnlyByConstructionAndBindsParameters) {
  std::string before = gpuobs::testing::file_bytes(path_);
  auto db = open_capture_readonly(path_);
  ASSERT_TRUE(db.ok());
  std::string into = dir_.file("copy.db");
  for (const std::string& q :
       std::vector<std::string>{"DELETE FROM kernel_launches", "CREATE TABLE x (a)", "PRAGMA user_version = 99",
                                "UPDATE processes SET comm = 'x'", "VACUUM", "SELECT 1; DELETE FROM kernel_launches",
                                "VACUUM INTO '" + into + "'", "-- only a comment"})
    EXPECT_FALSE(run_query(*db, q).ok()) << q;
  EXPECT_FALSE(std::filesystem::exists(into));  // refused before it ran (PRAGMA query_only = 0 is accepted and
                                                // harmless: the connection itself is read-only)
  EXPECT_TRUE(run_query(*db, "SELECT 1; -- a note").ok());
  // A parameter the query does not name is an error, not a silent no-op.
  EXPECT_FALSE(run_query(*db, "SELECT count(*) FROM kernel_launches", {{"pid", int64_t{100}}}).ok());
  EXPECT_EQ(std::get<int64_t>(parse_param_value("0x10")), 16);
  // Repeated column names all reach the JSON.
  std::ostringstream out;
  print_result(*run_query(*db, "SELECT 1 AS id, 2 AS id"), OutputFormat::json, out);
  auto j = json::parse(out.str());
  EXPECT_EQ(j[0]["id"], 1);
  EXPECT_EQ(j[0]["id:1"], 2);
  auto r = run_query(*db, "SELECT count(*) AS n FROM kernel_launches WHERE tgid = :pid AND grid_x >= $g",
                     {{"pid", int64_t{100}}, {"g", parse_param_value("4")}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<int64_t>(r->rows[0][0]), 2);
  EXPECT_EQ(gpuobs::testing::file_bytes(path_), before);  // not one byte changed
  EXPECT_EQ(std::get<double>(parse_param_value("1.5")), 1.5);
  EXPECT_EQ(std::get<std::string>(parse_param_value("trainer")), "trainer");
}

TEST_F(Reports, MemAndLeaks) {
  json m = report("mem");
  ASSERT_EQ(m.size(), 1u);  // infer's only allocation failed
  EXPECT_EQ(m[0]["pid"], 100);
  EXPECT_EQ(m[0]["kind"], "device");
  EXPECT_EQ(m[0]["allocs"], 2);
  EXPECT_EQ(m[0]["alloc_bytes"], 3 << 20);
  EXPECT_EQ(m[0]["frees"], 1);
  EXPECT_EQ(m[0]["freed_bytes"], 1 << 20);
  EXPECT_EQ(m[0]["peak_live_bytes"], 3 << 20);
  EXPECT_EQ(m[0]["end_live_bytes"], 2 << 20);
  EXPECT_EQ(m[0]["leaks"], 1);
  EXPECT_EQ(m[0]["leaked_bytes"], 2 << 20);
  json l = report("leaks");
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0]["address"], 0xB0);
  EXPECT_EQ(l[0]["bytes"], 2 << 20);
  EXPECT_EQ(l[0]["api"], "cuMemAlloc_v2");
  EXPECT_EQ(report("leaks", {{"pid", int64_t{200}}}).size(), 0u);
}

// "Device memory" is one set of allocation kinds everywhere (issue 20): every
// `kind IN (...)` list naming 'device' in the reports, the C++ sources and
// the documents is exactly docs/schema.md's set. proc_sum counted physical
// memory, the Perfetto counter did not.
TEST(DeviceMemory, EveryListOfItsKindsIsTheSame) {
  namespace fs = std::filesystem;
  const std::set<std::string> want{"device", "pitch", "async", "pool", "physical"};
  const std::regex list(R"(kind\s+IN\s*\(([^)]*)\))", std::regex::icase);
  const std::regex word(R"('([a-z_]+)')");
  size_t lists = 0;
  std::string root = GPUOBS_SOURCE_DIR;
  for (const char* dir : {"schema/reports", "userspace", "docs", "cli", "daemon"})
    for (const auto& e : fs::recursive_directory_iterator(root + "/" + dir)) {
      std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".sql" && ext != ".cpp" && ext != ".h" && ext != ".md")) continue;
      if (e.path().string().find("/measurements/") != std::string::npos) continue;  // logs of past runs
      std::ifstream in(e.path());
      std::stringstream text;
      text << in.rdbuf();
      std::string s = text.str();
      for (auto m = std::sregex_iterator(s.begin(), s.end(), list); m != std::sregex_iterator(); ++m) {
        std::set<std::string> kinds;
        std::string inside = (*m)[1];
        for (auto w = std::sregex_iterator(inside.begin(), inside.end(), word); w != std::sregex_iterator(); ++w)
          kinds.insert((*w)[1]);
        if (!kinds.count("device")) continue;
        ++lists;
        EXPECT_EQ(kinds, want) << e.path() << ": " << m->str();
      }
    }
  EXPECT_GE(lists, 3u);  // proc_sum.sql, timeline_source.cpp, docs/schema.md
}
