// The full CUDA driver API capture, end to end with real BPF, against
// api_workload (3 threads, every family) through the fake libcuda.so.1:
// exact counts per thread and symbol, arguments, result codes, out-values,
// kernel names, blocked time, and the memory views (timeline, leaks).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "../workloads/api_truth.h"
#include "catalogue/api_spec.h"
#include "recorded_suite.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

class RecordApi : public RecordedSuite<RecordApi> {
 public:
  static constexpr const char* kCapture = "api.gpuobs";
  static std::string record_args(const std::string& truth) {
    return std::string("--libcuda ") + FAKE_LIBCUDA + " -- " + API_WORKLOAD + " --lib " + FAKE_LIBCUDA +
           " --threads 3 --iterations " + std::to_string(kIterations) + " --truth " + truth;
  }

 protected:
  static std::string h(const nlohmann::json& v) { return std::to_string(v.get<uint64_t>()); }

  static constexpr int kIterations = 20;
};

}  // namespace

TEST_F(RecordApi, EveryCallOfEveryThreadIsRecordedExactlyOnce) {
  for (const auto& t : (*truth_)["threads"]) {
    std::string tid = std::to_string(t["tid"].get<int64_t>());
    std::map<std::string, int64_t> got;
    Stmt st(db_.get(), "SELECT api, count(*) FROM api_calls WHERE tid = " + tid + " GROUP BY api");
    while (st.step() == SQLITE_ROW)
      got[reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0))] = sqlite3_column_int64(st.get(), 1);
    std::map<std::string, int64_t> want;
    for (auto& [sym, n] : t["counts"].items()) want[sym] = n.get<int64_t>();
    EXPECT_EQ(got, want) << "thread " << t["index"];
  }
  EXPECT_EQ(q("SELECT sum(value) FROM counters WHERE name LIKE 'dropped_%'"), 0);
  EXPECT_EQ(q("SELECT sum(value) FROM counters WHERE name IN ('api_entry_stale', 'api_return_without_entry',"
              " 'kernel_name_unreadable')"),
            0);
  EXPECT_EQ(q("SELECT sum(value) FROM counters WHERE name IN ('submitted_launch', 'submitted_api_call')"),
            q("SELECT sum(value) FROM counters WHERE name IN ('stored_launch', 'stored_api_call')"));
  EXPECT_EQ(q("SELECT count(*) FROM probes WHERE status = 'attached' AND symbol LIKE 'cu%'"),
            static_cast<int64_t>(cuda_api_table().size()));
}

// The set-up calls (issue 37): the driver, the device and the contexts,
// with what each returned through its pointer; a failed cuDeviceGet keeps
// its ordinal and its result, and no device.
TEST_F(RecordApi, SetUpCallsCarryDevicesContextsAndValues) {
  for (const auto& t : (*truth_)["threads"]) {
    const std::string w = " FROM context_ops WHERE tid = " + std::to_string(t["tid"].get<int64_t>());
    const auto& s = t["handles"]["setup"];
    EXPECT_EQ(q("SELECT count(*)" + w), 12);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND api = 'cuInit' AND op = 'init' AND flags = 0 AND result = 0"), 1);
    EXPECT_EQ(q("SELECT value" + w + " AND op = 'driver_version'"), s["version"].get<int64_t>());
    EXPECT_EQ(q("SELECT value" + w + " AND op = 'device_count'"), 2);
    EXPECT_EQ(q("SELECT device" + w + " AND op = 'device_get' AND ordinal = 1 AND result = 0"), 1);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op = 'device_get' AND ordinal = 7 AND result = 101 AND device IS NULL"),
              1);
    EXPECT_EQ(q("SELECT value" + w + " AND op = 'device_attribute' AND attribute = 75 AND device = 1"),
              s["cc_major"].get<int64_t>());
    EXPECT_EQ(q("SELECT value" + w + " AND op = 'device_total_mem' AND device = 1"), s["total"].get<int64_t>());
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op = 'primary_set_flags' AND device = 1 AND flags = 4"), 1);
    EXPECT_EQ(q("SELECT context" + w + " AND op = 'primary_retain' AND device = 1"), s["primary"].get<int64_t>());
    EXPECT_EQ(q("SELECT context" + w + " AND op = 'context_create' AND device = 1 AND flags = 0"),
              s["ctx"].get<int64_t>());
    EXPECT_EQ(q("SELECT context" + w + " AND op = 'context_destroy'"), s["ctx"].get<int64_t>());
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op = 'primary_release' AND device = 1"), 1);
    // In api_calls, as their own family.
    EXPECT_EQ(q("SELECT count(*) FROM api_calls WHERE family = 'context' AND tid = " +
                std::to_string(t["tid"].get<int64_t>())),
              12);
  }
}

TEST_F(RecordApi, LaunchesCarryNamesStreamsAndAttributes) {
  for (const auto& t : (*truth_)["threads"]) {
    std::string tid = std::to_string(t["tid"].get<int64_t>());
    const auto& hd = t["handles"];
    std::string w = " FROM kernel_launches WHERE tid = " + tid;
    EXPECT_EQ(q("SELECT count(*)" + w +
                " AND api = 'cuLaunchKernel' AND kernel_name = 'square(float*, int)'"
                " AND stream = " +
                h(hd["s1"]) + " AND function = " + h(hd["function"]) + " AND block_x = 128"),
              kIterations);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND api = 'cuLaunchKernelEx' AND function = " + h(hd["kernel_function"]) +
                " AND kernel_name = 'axpy(float, float const*, float*)' AND cooperative = 1 AND cluster_x = 2"
                " AND cluster_y = 1 AND cluster_z = 1 AND grid_y = 2 AND block_x = 64 AND shared_mem_bytes = 512"
                " AND attributes = 2 AND stream = " +
                h(hd["s2"])),
              kIterations);
    EXPECT_EQ(q("SELECT sum(grid_x)" + w + " AND api = 'cuLaunchKernelEx'"), kIterations * (kIterations + 1) / 2);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND api = 'cuLaunchKernel_ptsz' AND per_thread_stream = 1 AND stream = 0"),
              1);
    EXPECT_EQ(q("SELECT count(*)" + w +
                " AND api = 'cuLaunchCooperativeKernel' AND cooperative = 1 AND extra = 0"
                " AND grid_x = 4 AND kernel_name = 'square(float*, int)'"),
              1);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND kernel_name IS NULL"), 0);
    EXPECT_EQ(text("SELECT name FROM kernel_names WHERE kind = 'kernel' AND handle = " + h(hd["kernel"])),
              kAxpyMangled);
    if (hd.contains("lazy_kernel")) {
      EXPECT_EQ(text("SELECT demangled FROM kernel_names WHERE handle = " + h(hd["lazy_kernel"])), "lazy_name()");
    }
  }
}

TEST_F(RecordApi, MemoryOperationsResultsAndLeaks) {
  int64_t leaked_total = 0;
  for (const auto& t : (*truth_)["threads"]) {
    std::string tid = std::to_string(t["tid"].get<int64_t>());
    uint32_t idx = t["index"];
    std::string w = " FROM memory_ops WHERE tid = " + tid;
    int64_t loop_sum = 0;
    for (int i = 0; i < kIterations; ++i) loop_sum += static_cast<int64_t>(loop_bytes(idx, i));
    EXPECT_EQ(q("SELECT sum(bytes)" + w + " AND api = 'cuMemAlloc_v2' AND result = 0"), loop_sum);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND api = 'cuMemAlloc_v2' AND result = 1 AND address = 0"), 1);
    // Every successful free names its allocation and carries its size.
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op = 'free' AND (alloc_id IS NULL OR bytes IS NULL)"), 0);
    EXPECT_EQ(q("SELECT count(*) FROM memory_ops f JOIN memory_ops a ON a.id = f.alloc_id WHERE f.tid = " + tid +
                " AND (a.address != f.address OR a.bytes != f.bytes)"),
              0);
    EXPECT_EQ(q("SELECT bytes" + w + " AND api = 'cuMemAllocPitch_v2'"), 10000);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND kind = 'managed' AND flags = 1 AND bytes = 1048576"), 1);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND kind = 'pool' AND handle = 36864 AND stream = " + h(t["handles"]["s2"])),
              1);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND api = 'cuMemAllocAsync_ptsz' AND per_thread_stream = 1"), 1);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op IN ('release', 'unmap') AND alloc_id IS NOT NULL AND bytes = 2097152"),
              2);
    // Exactly one leak per thread: the last loop allocation.
    EXPECT_EQ(q("SELECT count(*) FROM leaks WHERE tid = " + tid), 1);
    EXPECT_EQ(q("SELECT address FROM leaks WHERE tid = " + tid), t["handles"]["leak_address"].get<int64_t>());
    EXPECT_EQ(q("SELECT bytes FROM leaks WHERE tid = " + tid), static_cast<int64_t>(loop_bytes(idx, kIterations - 1)));
    leaked_total += static_cast<int64_t>(loop_bytes(idx, kIterations - 1));
  }
  // Live device memory at the end of the capture = what leaked.
  EXPECT_EQ(
      q("SELECT live_bytes FROM memory_timeline WHERE kind = 'device' ORDER BY ts_mono_ns DESC, rowid DESC LIMIT 1"),
      leaked_total);
}

TEST_F(RecordApi, CopiesAndMemsetsWithDirectionBytesAndStream) {
  for (const auto& t : (*truth_)["threads"]) {
    std::string tid = std::to_string(t["tid"].get<int64_t>());
    std::string w = " FROM copies WHERE tid = " + tid;
    auto one = [&](const std::string& api, const std::string& cond) {
      EXPECT_EQ(q("SELECT count(*)" + w + " AND api = '" + api + "' AND " + cond), 1) << api << ": " << cond;
    };
    one("cuMemcpy2D_v2",
        "direction = 'HtoD' AND bytes = 512 AND async = 0 AND dst = " + std::to_string(0x7d0000000000ll));
    one("cuMemcpy2DAsync_v2", "direction = 'HtoD' AND bytes = 512 AND async = 1 AND stream = " + h(t["handles"]["s1"]));
    one("cuMemcpy3D_v2", "direction = 'DtoH' AND bytes = 128 AND src = " + std::to_string(0x7d0000100000ll));
    one("cuMemcpy3DAsync_v2", "direction = 'DtoH' AND bytes = 128 AND stream = " + h(t["handles"]["s2"]));
    one("cuMemcpyPeerAsync", "direction = 'peer' AND bytes = 7000 AND async = 1");
    one("cuMemcpy", "direction = 'default' AND bytes = 1000 AND async = 0");
    one("cuMemcpyDtoA_v2", "direction = 'DtoA' AND bytes = 111");
    one("cuMemcpyAtoH_v2", "direction = 'AtoH' AND bytes = 444");
    one("cuMemcpyAtoA_v2", "direction = 'AtoA' AND bytes = 555");
    one("cuMemcpyHtoAAsync_v2",
        "direction = 'HtoA' AND bytes = 666 AND async = 1 AND stream = " + h(t["handles"]["s1"]));
    one("cuMemcpy3DPeerAsync", "direction = 'DtoH' AND bytes = 128 AND stream = " + h(t["handles"]["s2"]));
    one("cuMemsetD16_v2", "kind = 'memset' AND bytes = 200 AND value = 4660 AND direction IS NULL");
    one("cuMemsetD2D8_v2", "bytes = 256 AND value = 17");
    one("cuMemsetD2D32Async", "bytes = 256 AND async = 1 AND stream = " + h(t["handles"]["s2"]));
    one("cuMemsetD8_v2_ptds", "per_thread_stream = 1 AND bytes = 50");
    EXPECT_EQ(q("SELECT count(*)" + w +
                " AND api = 'cuMemcpyHtoDAsync_v2' AND direction = 'HtoD' AND stream = " + h(t["handles"]["s1"])),
              kIterations);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND result != 0"), 0);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND (duration_ns IS NULL OR duration_ns <= 0)"), 0);
  }
}

TEST_F(RecordApi, StreamsEventsSyncsAndModules) {
  for (const auto& t : (*truth_)["threads"]) {
    std::string tid = std::to_string(t["tid"].get<int64_t>());
    const auto& hd = t["handles"];
    std::string w = " FROM stream_ops WHERE tid = " + tid;
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op = 'stream_create' AND stream = " + h(hd["s1"]) + " AND flags = 1"), 1);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op = 'stream_create' AND stream = " + h(hd["s2"]) + " AND priority = -1"),
              1);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op = 'event_create' AND event = " + h(hd["event"])), 1);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op = 'wait_event' AND stream = " + h(hd["s2"]) +
                " AND event = " + h(hd["event"])),
              kIterations);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op = 'capture_end' AND handle = " + h(hd["graph"])), 1);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op = 'graph_launch' AND handle = " + h(hd["graph"]) +
                " AND stream = " + h(hd["s2"]) + " AND result IS NULL"),
              1);
    EXPECT_EQ(q("SELECT count(*)" + w + " AND op = 'stream_destroy'"), 2);
    // Synchronizations: the fake blocks 200 us in each.
    std::string s = " FROM syncs WHERE tid = " + tid;
    EXPECT_EQ(q("SELECT count(*)" + s), kIterations + 4);
    EXPECT_EQ(q("SELECT count(*)" + s + " AND (blocked_ns < 150000 OR result != 0)"), 0);
    EXPECT_EQ(q("SELECT count(*)" + s + " AND target = 'context'"), 2);
    EXPECT_EQ(q("SELECT count(*)" + s + " AND target = 'event' AND event = " + h(hd["event"])), 1);
    EXPECT_EQ(q("SELECT count(*)" + s + " AND api = 'cuStreamSynchronize_ptsz' AND per_thread_stream = 1"), 1);
    EXPECT_EQ(text("SELECT path FROM gpu_modules WHERE api = 'cuModuleLoad' AND tid = " + tid), kModulePath);
    EXPECT_EQ(q("SELECT handle FROM gpu_modules WHERE api = 'cuModuleLoad' AND tid = " + tid),
              hd["module"].get<int64_t>());
    EXPECT_EQ(text("SELECT path FROM gpu_modules WHERE api = 'cuLibraryLoadFromFile' AND tid = " + tid), kLibraryPath);
  }
}

TEST(RecordApiStub, EverySymbolOfTheRealLayoutAttaches) {
  TempDir dir;
  std::string out = dir.file("stub.gpuobs");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " record -o " + out + " --libcuda " + CUDA_STUB + " -- " + API_WORKLOAD +
                " --lib " + CUDA_STUB + " --threads 1 --iterations 3 --truth " + dir.file("t.json") + " 2>/dev/null"),
            0);
  auto db = open_capture_readonly(out);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM probes WHERE status = 'attached' AND symbol LIKE 'cu%'"),
            static_cast<int64_t>(cuda_api_table().size()));
  // The stub returns CUDA_ERROR_STUB_LIBRARY (34) from every call: failures are visible.
  auto t = read_json(dir.file("t.json"));
  int64_t calls = 0;
  for (auto& [sym, n] : t["threads"][0]["counts"].items()) calls += n.get<int64_t>();
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM api_calls"), calls);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM api_calls WHERE result IS NOT NULL AND result != 34"), 0);
  EXPECT_GT(scalar(*db, "SELECT count(*) FROM api_calls WHERE result = 34"), 50);
}

// copy_sum and memset_sum against the copies table when calls fail (the
// toolkit's stub libcuda fails every call): successful and failed calls
// add up to every call, their bytes to every byte asked for (issue 37).
TEST(RecordApiFailures, CopySumAndMemsetSumAccountForEveryCallAndByte) {
  TempDir dir;
  const std::string out = dir.file("f.gpuobs"), truth = dir.file("t.json");
  ASSERT_EQ(run("FAKE_CUDA_FAIL=cuMemcpyHtoD_v2,cuMemsetD8_v2 " + std::string(GPUOBS_BIN) + " record -o " + out +
                " --libcuda " + FAKE_LIBCUDA + " -- " + API_WORKLOAD + " --lib " + FAKE_LIBCUDA +
                " --threads 2 --iterations 5 --truth " + truth + " 2>" + dir.file("err")),
            0)
      << read_file(dir.file("err"));
  auto db = open_capture_readonly(out);
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto q = [&](const std::string& sql) { return scalar(*db, sql); };
  ASSERT_GT(q("SELECT count(*) FROM copies WHERE api = 'cuMemcpyHtoD_v2' AND result = 999"), 0);
  ASSERT_GT(q("SELECT count(*) FROM copies WHERE api = 'cuMemsetD8_v2' AND result = 999"), 0);
  for (const char* rep : {"copy_sum", "memset_sum"}) {
    const std::string kind = std::string(rep) == "copy_sum" ? "copy" : "memset";
    const std::string n = kind == "copy" ? "copies" : "memsets";
    auto [rc, text_out] = run_output(std::string(GPUOBS_BIN) + " report --format json " + rep + " " + out);
    ASSERT_EQ(rc, 0) << text_out;
    auto rows = nlohmann::json::parse(text_out);
    int64_t calls = 0, bytes = 0, failed = 0, failed_bytes = 0;
    for (const auto& r : rows) {
      calls += r.at(n).get<int64_t>();
      bytes += r.at("bytes").get<int64_t>();
      failed += r.at("failed").get<int64_t>();
      failed_bytes += r.at("failed_bytes").get<int64_t>();
    }
    const std::string w = " FROM copies WHERE kind = '" + kind + "'";
    EXPECT_EQ(calls + failed, q("SELECT count(*)" + w)) << rep;
    EXPECT_EQ(bytes + failed_bytes, q("SELECT sum(bytes)" + w)) << rep;
    EXPECT_EQ(failed, q("SELECT count(*)" + w + " AND result <> 0")) << rep;
    EXPECT_EQ(failed_bytes, q("SELECT sum(bytes)" + w + " AND result <> 0")) << rep;
    EXPECT_GT(failed_bytes, 0) << rep;
  }
}
