// Level Zero probes end to end with real BPF: level_zero_workload calls the
// real loader (Debian's libze1), which dispatches to the project's fake driver
// (ZE_ENABLE_ALT_DRIVERS). Two recordings of the same run: plain, and with the
// loader's tracing layer on (ZE_ENABLE_TRACING_LAYER=1, which puts the
// layer's table between the loader's exports and the driver). Exact counts
// per thread and symbol; launches with the group count as grid, the group
// size as block, the command list as stream and the name from zeKernelCreate;
// copies, fills with their pattern, syncs with their blocked time, the queue
// execution with its list and fence, memory with addresses and sizes; the
// same reports as CUDA and HIP.
#include <gtest/gtest.h>

#include <map>

#include "recorded_suite.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;
using json = nlohmann::json;

namespace {

constexpr int kIterations = 12;
constexpr int kThreads = 3;

template <bool kTracing>
class LevelZeroRun : public RecordedSuite<LevelZeroRun<kTracing>> {
 public:
  static constexpr const char* kCapture = kTracing ? "ze-tracing.gpuobs" : "ze.gpuobs";
  static std::string record_args(const std::string& truth) {
    return std::string("-- env ZE_ENABLE_ALT_DRIVERS=") + FAKE_LEVEL_ZERO +
           (kTracing ? " ZE_ENABLE_TRACING_LAYER=1 " : " ") + LEVEL_ZERO_WORKLOAD + " --threads " +
           std::to_string(kThreads) + " --iterations " + std::to_string(kIterations) + " --truth " + truth;
  }

 protected:
  using Base = RecordedSuite<LevelZeroRun<kTracing>>;
  int64_t q(const std::string& sql) { return Base::q(sql); }
  const json& truth() { return *Base::truth_; }
  static std::string num(const json& v) { return std::to_string(v.get<uint64_t>()); }

  void probes_attach() {
    for (const char* sym : {"zeCommandListAppendLaunchKernel", "zeKernelSetGroupSize", "zeKernelCreate",
                            "zeCommandQueueExecuteCommandLists", "zeMemAllocShared", "zeFenceHostSynchronize"})
      EXPECT_EQ(Base::text(std::string("SELECT status FROM probes WHERE library LIKE '%libze_loader%' AND symbol = '") +
                           sym + "'"),
                "attached")
          << sym;
    // Loader 1.8 (API 1.4) has no zeCommandListHostSynchronize: said, not silently absent.
    EXPECT_EQ(Base::text("SELECT status FROM probes WHERE symbol = 'zeCommandListHostSynchronize'"), "missing");
    EXPECT_EQ(q("SELECT count(*) FROM probes WHERE library LIKE '%libze_loader%' AND status = 'failed'"), 0);
    EXPECT_EQ(q("SELECT sum(value) FROM counters WHERE name LIKE 'dropped_%'"), 0);
  }

  void exact_calls_per_thread() {
    ASSERT_EQ(truth()["threads"].size(), size_t(kThreads));
    std::vector<json> all = truth()["threads"];
    all.push_back(truth()["main"]);
    for (const auto& t : all) {
      std::string tid = num(t["handles"]["tid"]);
      std::map<std::string, int64_t> got, want;
      Stmt st(Base::db_.get(), "SELECT api, count(*) FROM api_calls WHERE tid = " + tid + " GROUP BY api");
      while (st.step() == SQLITE_ROW)
        got[reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0))] = sqlite3_column_int64(st.get(), 1);
      for (auto& [k, v] : t["counts"].items()) want[k] = v;
      EXPECT_EQ(got, want) << "thread " << tid;
      EXPECT_EQ(q("SELECT count(*) FROM api_calls WHERE tid = " + tid + " AND vendor != 'level_zero'"), 0);
    }
    // The one call the fake refuses, with Level Zero's own code.
    EXPECT_EQ(q("SELECT count(*) FROM gpu_modules WHERE api = 'zeKernelCreate' AND result = 2013265937"), kThreads);
  }

  void launches() {
    for (const auto& t : truth()["threads"]) {
      int64_t i = t["index"];
      const json& h = t["handles"];
      std::string tid = num(h["tid"]);
      // vector_add on the regular list: grid (4+t, 2, 1), block (64+32t, 1, 1) from zeKernelSetGroupSize.
      EXPECT_EQ(q("SELECT count(*) FROM kernel_launches WHERE tid = " + tid +
                  " AND api = 'zeCommandListAppendLaunchKernel' AND kernel_name = 'vector_add'"
                  " AND grid_x = " +
                  std::to_string(4 + i) +
                  " AND grid_y = 2 AND grid_z = 1"
                  " AND block_x = " +
                  std::to_string(64 + 32 * i) +
                  " AND block_y = 1 AND block_z = 1"
                  " AND stream = " +
                  num(h["list"]) + " AND function = " + num(h["vector_add"]) +
                  " AND vendor = 'level_zero' AND args_complete = 1 AND cooperative = 0"),
                kIterations);
      EXPECT_EQ(
          q("SELECT count(*) FROM kernel_launches WHERE tid = " + tid +
            " AND kernel_name = 'scale_rows' AND grid_x = 8 AND grid_y = 8 AND grid_z = " + std::to_string(1 + i) +
            " AND block_x = 32 AND block_y = 4 AND block_z = 1 AND stream = " + num(h["immediate"])),
          kIterations);
      EXPECT_EQ(q("SELECT count(*) FROM kernel_launches WHERE tid = " + tid +
                  " AND api = 'zeCommandListAppendLaunchCooperativeKernel' AND kernel_name = 'reduce_sum'"
                  " AND cooperative = 1 AND grid_x = 2 AND block_x = 256 AND args_complete = 1"),
                1);
      // The indirect launch's group count is in device memory: the grid is unknown, and said so.
      EXPECT_EQ(q("SELECT count(*) FROM kernel_launches WHERE tid = " + tid +
                  " AND api = 'zeCommandListAppendLaunchKernelIndirect' AND kernel_name = 'vector_add'"
                  " AND grid_x = 0 AND args_complete = 0 AND block_x = " +
                  std::to_string(64 + 32 * i)),
                1);
      EXPECT_EQ(q("SELECT count(*) FROM kernel_names WHERE api = 'zeKernelCreate' AND vendor = 'level_zero'"
                  " AND handle = " +
                  num(h["scale_rows"]) + " AND name = 'scale_rows' AND source = " + num(h["module"])),
                1);
    }
    EXPECT_EQ(q("SELECT count(*) FROM kernel_launches"), kThreads * (2 * kIterations + 2));
    // Each launch's stack reaches the workload's own function.
    EXPECT_EQ(q("SELECT count(DISTINCT k.id) FROM kernel_launches k JOIN stack_symbols s ON s.stack_id = k.stack_id"
                " WHERE k.api = 'zeCommandListAppendLaunchKernel' AND s.symbol LIKE '%submit_iteration%'"),
              2 * kThreads * kIterations);
  }

  void copies_streams_syncs() {
    for (const auto& t : truth()["threads"]) {
      int64_t i = t["index"];
      const json& h = t["handles"];
      std::string tid = num(h["tid"]), list = num(h["list"]);
      EXPECT_EQ(q("SELECT count(*) FROM copies WHERE tid = " + tid +
                  " AND api = 'zeCommandListAppendMemoryCopy' AND direction = 'default' AND async = 1"
                  " AND bytes = " +
                  std::to_string(4096 + 64 * i) + " AND dst = " + num(h["dev"]) + " AND src = " + num(h["host"]) +
                  " AND stream = " + list),
                kIterations);
      EXPECT_EQ(q("SELECT count(*) FROM copies WHERE tid = " + tid +
                  " AND kind = 'memset' AND bytes = 2048 AND value = " + std::to_string(0xc0ffee00u + i) +
                  " AND dst = " + num(h["dev"]) + " AND stream = " + list),
                kIterations);
      // The queue runs the list, with the fence as its event.
      EXPECT_EQ(q("SELECT count(*) FROM stream_ops WHERE tid = " + tid +
                  " AND api = 'zeCommandQueueExecuteCommandLists' AND op = 'graph_launch'"
                  " AND stream = " +
                  num(h["queue"]) + " AND handle = " + list + " AND event = " + num(h["fence"])),
                kIterations);
      EXPECT_EQ(q("SELECT count(*) FROM stream_ops WHERE tid = " + tid +
                  " AND op = 'wait_event' AND stream = " + num(h["immediate"]) + " AND event = " + num(h["ev1"])),
                kIterations);
      EXPECT_EQ(q("SELECT count(*) FROM stream_ops WHERE tid = " + tid +
                  " AND op = 'event_record' AND stream = " + list + " AND event = " + num(h["ev1"])),
                kIterations);
      EXPECT_EQ(q("SELECT count(*) FROM stream_ops WHERE tid = " + tid + " AND op = 'stream_create' AND stream IN (" +
                  num(h["queue"]) + ", " + list + ", " + num(h["immediate"]) + ")"),
                3);
      // Host synchronizations block 2 ms in the fake: their blocked time says so.
      for (const char* target : {"fence", "event", "stream"})
        EXPECT_EQ(q("SELECT count(*) FROM syncs WHERE tid = " + tid + " AND target = '" + target +
                    "' AND blocked_ns >= 2000000 AND result = 0"),
                  kIterations)
            << target;
      EXPECT_EQ(
          q("SELECT count(*) FROM syncs WHERE tid = " + tid + " AND target = 'fence' AND event = " + num(h["fence"])),
          kIterations);
      // zeEventQueryStatus answers ZE_RESULT_NOT_READY (1).
      EXPECT_EQ(q("SELECT count(*) FROM stream_ops WHERE tid = " + tid + " AND op = 'event_query' AND result = 1"),
                kIterations);
      EXPECT_EQ(q("SELECT count(*) FROM memory_ops WHERE tid = " + tid +
                  " AND api = 'zeMemAllocDevice' AND kind = 'device' AND bytes = " + num(h["dev_bytes"]) +
                  " AND address = " + num(h["dev"])),
                1);
      EXPECT_EQ(q("SELECT count(*) FROM memory_ops WHERE tid = " + tid +
                  " AND api = 'zeMemAllocShared' AND kind = 'managed' AND bytes = " + std::to_string(12288 + 4096 * i) +
                  " AND address = " + num(h["shared"])),
                1);
    }
  }

  void reports() {
    std::string out = Base::tmp_.file("kern.json");
    ASSERT_EQ(run(std::string(GPUOBS_BIN) + " report kern_sum " + Base::out_ + " --format json > " + out), 0);
    std::map<std::string, int64_t> launches;
    for (const auto& r : read_json(out)) launches[r["kernel"]] = r["launches"];
    EXPECT_EQ(launches["vector_add"], kThreads * (kIterations + 1));
    EXPECT_EQ(launches["scale_rows"], kThreads * kIterations);
    EXPECT_EQ(launches["reduce_sum"], kThreads);
    std::string syncs = Base::tmp_.file("sync.json");
    ASSERT_EQ(run(std::string(GPUOBS_BIN) + " report sync_sum " + Base::out_ + " --format json > " + syncs), 0);
    int64_t fence_calls = 0;
    for (const auto& r : read_json(syncs))
      if (r["api"] == "zeFenceHostSynchronize" && r["event"].is_number()) fence_calls += r["syncs"].get<int64_t>();
    EXPECT_EQ(fence_calls, kThreads * kIterations);
  }
};

using LevelZero = LevelZeroRun<false>;
using LevelZeroTracingLayer = LevelZeroRun<true>;

}  // namespace

TEST_F(LevelZero, ProbesAttachToTheLoader) { probes_attach(); }
TEST_F(LevelZero, ExactCallsPerThreadAndSymbol) { exact_calls_per_thread(); }
TEST_F(LevelZero, LaunchesWithGroupCountSizeListAndName) { launches(); }
TEST_F(LevelZero, CopiesFillsQueuesEventsSyncsMemory) { copies_streams_syncs(); }
TEST_F(LevelZero, SameReportsAsCuda) { reports(); }

// The tracing layer is between the loader's exports and the driver: the
// application's calls are the same, and so is everything recorded.
TEST_F(LevelZeroTracingLayer, ProbesAttachToTheLoader) { probes_attach(); }
TEST_F(LevelZeroTracingLayer, ExactCallsPerThreadAndSymbol) { exact_calls_per_thread(); }
TEST_F(LevelZeroTracingLayer, LaunchesWithGroupCountSizeListAndName) { launches(); }
TEST_F(LevelZeroTracingLayer, CopiesFillsQueuesEventsSyncsMemory) { copies_streams_syncs(); }
TEST_F(LevelZeroTracingLayer, SameReportsAsCuda) { reports(); }
