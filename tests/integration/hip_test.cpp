// HIP runtime probes end to end with real BPF on a real libamdhip64 (Debian's
// libamdhip64-5): hip_workload's threads call every family; without a GPU the
// calls fail inside the library, after the probes fired. Exact counts per
// thread and symbol, dim3 arguments decoded from their registers, kernel
// names from __hipRegisterFunction, and the same tables and reports as CUDA.
#include <gtest/gtest.h>

#include <map>

#include "catalogue/api_spec.h"
#include "recorded_suite.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;
using json = nlohmann::json;

namespace {

class Hip : public RecordedSuite<Hip> {
 public:
  static constexpr const char* kCapture = "hip.gpuobs";
  static std::string record_args(const std::string& truth) {
    return std::string("--libhip ") + HIP_RUNTIME + " -- " + HIP_WORKLOAD + " --lib " + HIP_RUNTIME +
           " --threads 3 --iterations " + std::to_string(kIterations) + " --truth " + truth;
  }

 protected:
  static constexpr int kIterations = 15;
};

}  // namespace

TEST_F(Hip, ProbesAttachToTheRuntime) {
  for (const char* sym : {"hipLaunchKernel", "hipLaunchKernel_spt", "hipModuleLaunchKernel", "hipMalloc",
                          "hipMemcpyAsync", "hipStreamSynchronize", "__hipRegisterFunction"})
    EXPECT_EQ(text(std::string("SELECT status FROM probes WHERE symbol = '") + sym + "'"), "attached") << sym;
  // ROCm 5.2 has no hipExtModuleLaunchKernel: reported, not silently absent.
  EXPECT_EQ(text("SELECT status FROM probes WHERE symbol = 'hipExtModuleLaunchKernel'"), "missing");
  EXPECT_EQ(q("SELECT count(*) FROM probes WHERE library LIKE '%amdhip64%' AND status = 'failed'"), 0);
  EXPECT_EQ(q("SELECT sum(value) FROM counters WHERE name LIKE 'dropped_%'"), 0);
}

TEST_F(Hip, ExactCallsPerThreadAndSymbol) {
  ASSERT_EQ((*truth_)["threads"].size(), 3u);
  int64_t error = (*truth_)["error"];
  EXPECT_NE(error, 0) << "without a GPU every call fails";
  for (const auto& t : (*truth_)["threads"]) {
    std::string tid = std::to_string(t["tid"].get<int64_t>());
    std::map<std::string, int64_t> got;
    Stmt st(db_.get(), "SELECT api, count(*) FROM api_calls WHERE tid = " + tid + " GROUP BY api");
    while (st.step() == SQLITE_ROW)
      got[reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0))] = sqlite3_column_int64(st.get(), 1);
    std::map<std::string, int64_t> want;
    for (auto& [k, v] : t["counts"].items()) want[k] = v;
    EXPECT_EQ(got, want) << "thread " << t["index"];
    EXPECT_EQ(q("SELECT count(*) FROM api_calls WHERE tid = " + tid + " AND vendor != 'hip'"), 0);
  }
  EXPECT_EQ(q("SELECT count(*) FROM memory_ops WHERE api = 'hipMalloc' AND result = " + std::to_string(error)),
            3 * kIterations);
}

TEST_F(Hip, LaunchArgumentsAndKernelNames) {
  for (const auto& t : (*truth_)["threads"]) {
    int64_t i = t["index"];
    std::string tid = std::to_string(t["tid"].get<int64_t>());
    // hipLaunchKernel(stub_axpy, dim3(4+t, 2, 1), dim3(64, 2, 1), nullptr, 256, 0x5000+t): the two dim3
    // halves come from four registers, shared memory and stream from the stack.
    EXPECT_EQ(q("SELECT count(*) FROM kernel_launches WHERE tid = " + tid +
                " AND api = 'hipLaunchKernel'"
                " AND grid_x = " +
                std::to_string(4 + i) +
                " AND grid_y = 2 AND grid_z = 1 AND block_x = 64"
                " AND block_y = 2 AND block_z = 1 AND shared_mem_bytes = 256 AND stream = " +
                std::to_string(0x5000 + i) +
                " AND kernel_name = 'axpy(float, float const*, float*)'"
                " AND vendor = 'hip' AND args_complete = 1"),
              kIterations);
    EXPECT_EQ(q("SELECT count(*) FROM kernel_launches WHERE tid = " + tid +
                " AND api = 'hipLaunchKernel_spt'"
                " AND grid_x = 8 AND grid_z = 3 AND block_x = 32 AND stream = 0 AND per_thread_stream = 1"
                " AND kernel_name = 'scale(float*)'"),
              kIterations);
    EXPECT_EQ(q("SELECT count(*) FROM kernel_launches WHERE tid = " + tid +
                " AND api = 'hipModuleLaunchKernel'"
                " AND function = " +
                std::to_string(0x7000 + i) +
                " AND grid_x = 3 AND grid_y = 2 AND block_x = 128"
                " AND shared_mem_bytes = 512 AND stream = " +
                std::to_string(0x5000 + i)),
              kIterations);
  }
  EXPECT_EQ(q("SELECT count(*) FROM kernel_names WHERE api = '__hipRegisterFunction' AND vendor = 'hip' AND handle = " +
              std::to_string((*truth_)["stub_axpy"].get<uint64_t>()) + " AND name = '_Z4axpyfPKfPf'"),
            1);
  EXPECT_EQ(q("SELECT count(*) FROM gpu_modules WHERE api = '__hipRegisterFunction' AND result IS NULL"), 2);
  // The launch's stack reaches the workload's own function.
  EXPECT_GT(q("SELECT count(*) FROM kernel_launches k JOIN stack_symbols s ON s.stack_id = k.stack_id"
              " WHERE k.api = 'hipLaunchKernel' AND s.symbol LIKE '%run%'"),
            0);
}

TEST_F(Hip, CopiesSyncsAndReports) {
  for (const auto& t : (*truth_)["threads"]) {
    int64_t i = t["index"];
    std::string tid = std::to_string(t["tid"].get<int64_t>());
    EXPECT_EQ(q("SELECT count(*) FROM copies WHERE tid = " + tid +
                " AND api = 'hipMemcpy' AND direction = 'HtoD'"
                " AND bytes = " +
                std::to_string(100 + i)),
              kIterations);
    EXPECT_EQ(q("SELECT count(*) FROM copies WHERE tid = " + tid +
                " AND api = 'hipMemcpyAsync'"
                " AND direction = 'DtoH' AND async = 1 AND stream = " +
                std::to_string(0x5000 + i)),
              kIterations);
    EXPECT_EQ(q("SELECT count(*) FROM copies WHERE tid = " + tid +
                " AND kind = 'memset' AND value = 7 AND bytes = " + std::to_string(64 + i)),
              kIterations);
    EXPECT_EQ(q("SELECT count(*) FROM memory_ops WHERE tid = " + tid +
                " AND api = 'hipHostMalloc' AND kind = 'host'"
                " AND bytes = " +
                std::to_string(8192 * (i + 1))),
              kIterations);
    EXPECT_EQ(q("SELECT count(*) FROM syncs WHERE tid = " + tid +
                " AND target = 'stream' AND stream = " + std::to_string(0x5000 + i)),
              kIterations);
  }
  EXPECT_EQ(q("SELECT count(*) FROM syncs WHERE api = 'hipDeviceSynchronize' AND target = 'context'"), 3 * kIterations);
  std::string out = tmp_.file("kern.json");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " report kern_sum " + out_ + " --format json > " + out), 0);
  int64_t axpy = -1;
  for (const auto& r : read_json(out))
    if (r["kernel"] == "axpy(float, float const*, float*)") axpy = r["launches"];
  EXPECT_EQ(axpy, 3 * kIterations);
}
