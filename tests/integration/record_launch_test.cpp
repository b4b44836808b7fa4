// gpuobs record, end to end with real BPF, against workloads whose truth is
// known: every launch of every thread and of a forked child, every argument.
// Runs as root; a machine where BPF cannot load fails these tests.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "../workloads/launch_truth.h"
#include "catalogue/api_spec.h"
#include "run_util.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

struct Param {
  const char* name;
  const char* lib;
};

class RecordLaunches : public ::testing::TestWithParam<Param> {};

void check_rows_of_worker(Db& db, uint32_t tid, uint32_t worker, uint32_t launches, uint32_t ptsz) {
  Stmt st(db.get(),
          "SELECT api, function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem_bytes, stream,"
          " kernel_params, extra, args_complete FROM kernel_launches WHERE tid = ? ORDER BY ts_mono_ns");
  st.bind(1, tid);
  std::vector<bool> seen(launches, false);
  uint32_t rows = 0, ptsz_rows = 0;
  while (st.step() == SQLITE_ROW) {
    ++rows;
    auto col = [&](int i) { return static_cast<uint64_t>(sqlite3_column_int64(st.get(), i)); };
    std::string api = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
    uint32_t i = static_cast<uint32_t>(col(2)) - 1;  // grid_x = i + 1
    ASSERT_LT(i, launches);
    EXPECT_FALSE(seen[i]) << "launch " << i << " of worker " << worker << " recorded twice";
    seen[i] = true;
    auto want = launch_args(worker, i);
    EXPECT_EQ(col(1), want.function) << "launch " << i;
    EXPECT_EQ(col(3), want.grid_y);
    EXPECT_EQ(col(4), want.grid_z);
    EXPECT_EQ(col(5), want.block_x);
    EXPECT_EQ(col(6), want.block_y);
    EXPECT_EQ(col(7), want.block_z);
    EXPECT_EQ(col(8), want.shared_mem_bytes);
    EXPECT_EQ(col(9), want.stream);
    EXPECT_EQ(col(10), want.kernel_params);
    EXPECT_EQ(col(11), 0u);
    EXPECT_EQ(col(12), 1u);
    EXPECT_EQ(api, want.ptsz ? "cuLaunchKernel_ptsz" : "cuLaunchKernel") << "launch " << i;
    ptsz_rows += api == "cuLaunchKernel_ptsz";
  }
  EXPECT_EQ(rows, launches) << "worker " << worker << " tid " << tid;
  EXPECT_EQ(ptsz_rows, ptsz);
}

}  // namespace

TEST_P(RecordLaunches, EveryLaunchOfEveryThreadAndChildWithEveryArgument) {
  TempDir dir;
  const uint32_t threads = 4, launches = 2500, child_launches = 1500;
  std::string out = dir.file("cap.gpuobs"), truth = dir.file("truth.json");
  std::string cmd = std::string(GPUOBS_BIN) + " record -o " + out + " --libcuda " + GetParam().lib + " -- " +
                    LAUNCH_WORKLOAD + " --lib " + GetParam().lib + " --threads " + std::to_string(threads) +
                    " --launches " + std::to_string(launches) + " --child-launches " + std::to_string(child_launches) +
                    " --truth " + truth;
  ASSERT_EQ(run(cmd), 0) << cmd;
  auto t = read_json(truth);
  auto db = open_capture_readonly(out);
  ASSERT_TRUE(db.ok()) << db.error().message;

  const int64_t total = threads * launches + child_launches;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), total);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'submitted_launch'"), total);
  EXPECT_EQ(scalar(*db, "SELECT value FROM counters WHERE name = 'stored_launch'"), total);
  EXPECT_EQ(scalar(*db, "SELECT sum(value) FROM counters WHERE name LIKE 'dropped_%'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT sum(value) FROM counters WHERE name LIKE 'decode_%'"), 0);
  EXPECT_EQ(scalar(*db, "SELECT exit_status FROM capture"), 0);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM probes WHERE status = 'attached' AND symbol LIKE 'cu%'"),
            static_cast<int64_t>(cuda_api_table().size()));

  const int64_t pid = t["pid"], child = t["child"]["pid"];
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(pid)),
            threads * launches);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE tgid = " + std::to_string(child)), child_launches);
  for (const auto& w : t["workers"]) check_rows_of_worker(*db, w["tid"], w["worker"], w["launches"], w["ptsz"]);
  check_rows_of_worker(*db, t["child"]["tid"], t["child"]["worker"], t["child"]["launches"], t["child"]["ptsz"]);

  // The process tree: the recorded command and the child it forked.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM processes WHERE tgid = " + std::to_string(pid) +
                            " AND source = 'root' AND exe LIKE '%launch_workload' AND exit_code = 0"),
            1);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM processes WHERE tgid = " + std::to_string(child) +
                            " AND source = 'fork' AND ppid = " + std::to_string(pid) + " AND exit_mono_ns IS NOT NULL"),
            1);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM threads WHERE tid IN (SELECT tid FROM kernel_launches)"), threads + 1);
}

INSTANTIATE_TEST_SUITE_P(Libraries, RecordLaunches,
                         ::testing::Values(Param{"FakeLibcuda", FAKE_LIBCUDA}, Param{"CudaStub", CUDA_STUB}),
                         [](const auto& info) { return std::string(info.param.name); });

// Kernels before 6.6 have no uprobe-multi links: one perf-event uprobe per
// symbol (slow to release: ~80 ms each here) must capture the same.
TEST(RecordLaunchesFallback, PerSymbolUprobesCaptureEveryLaunch) {
  TempDir dir;
  std::string out = dir.file("fb.gpuobs"), truth = dir.file("truth.json");
  ASSERT_EQ(run("GPUOBS_NO_UPROBE_MULTI=1 " + std::string(GPUOBS_BIN) + " -v debug record -o " + out + " --libcuda " +
                FAKE_LIBCUDA + " -- " + LAUNCH_WORKLOAD + " --lib " + FAKE_LIBCUDA +
                " --threads 2 --launches 3000 --truth " + truth + " 2>" + dir.file("err")),
            0);
  EXPECT_NE(read_file(dir.file("err")).find("one perf-event uprobe per symbol"), std::string::npos);
  auto db = open_capture_readonly(out);
  ASSERT_TRUE(db.ok());
  auto t = read_json(truth);
  for (const auto& w : t["workers"]) check_rows_of_worker(*db, w["tid"], w["worker"], w["launches"], w["ptsz"]);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM probes WHERE status = 'attached' AND symbol LIKE 'cu%'"),
            static_cast<int64_t>(cuda_api_table().size()));
}

// The leader thread exiting is not the process exiting: a worker that
// launches after the leader's pthread_exit is still followed and recorded.
TEST(RecordLaunches, LeaderExitingFirstDoesNotEndTheProcess) {
  TempDir dir;
  std::string out = dir.file("leader.gpuobs"), truth = dir.file("truth.json");
  ASSERT_EQ(
      run(std::string(GPUOBS_BIN) + " record -o " + out + " --libcuda " + FAKE_LIBCUDA + " -- " + LAUNCH_WORKLOAD +
          " --lib " + FAKE_LIBCUDA + " --leader-exits-first --launches 2000 --truth " + truth + " 2>/dev/null"),
      0);
  auto db = open_capture_readonly(out);
  ASSERT_TRUE(db.ok());
  auto t = read_json(truth);
  const auto& w = t["workers"][0];
  check_rows_of_worker(*db, w["tid"], w["worker"], w["launches"], w["ptsz"]);
  std::string pid = std::to_string(t["pid"].get<int64_t>());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM processes WHERE tgid = " + pid), 1);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM processes WHERE tgid = " + pid +
                            " AND exit_code = 0 AND exit_mono_ns > (SELECT max(ts_mono_ns) FROM kernel_launches)"),
            1);
}

TEST(RecordExample, BundledExampleAgainstTheCudaStub) {
  TempDir dir;
  std::string out = dir.file("ex.gpuobs");
  std::string cmd = std::string(GPUOBS_BIN) + " record -o " + out + " --libcuda " + CUDA_STUB + " -- " +
                    CUDA_STREAMS_EXAMPLE + " --lib " + CUDA_STUB + " --launches 20000 --streams 4 >/dev/null";
  ASSERT_EQ(run(cmd), 0);
  // A finished capture is one file, and reading it writes nothing.
  EXPECT_FALSE(std::filesystem::exists(out + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(out + "-shm"));
  std::string before = read_file(out);
  for (const char* report : {"launches", "ioctls", "capture", "probes"})
    EXPECT_EQ(run(std::string(GPUOBS_BIN) + " report " + report + " " + out + " >/dev/null"), 0) << report;
  EXPECT_EQ(run(std::string(GPUOBS_BIN) + " report launches --format json " + out + " >/dev/null"), 0);
  EXPECT_FALSE(std::filesystem::exists(out + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(out + "-shm"));
  EXPECT_EQ(read_file(out), before);
  auto db = open_capture_readonly(out);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), 20000);
  EXPECT_EQ(scalar(*db, "SELECT count(DISTINCT stream) FROM kernel_launches"), 4);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches WHERE grid_x = 16 AND block_x = 256"), 20000);
  // The stub fails every other call with CUDA_ERROR_STUB_LIBRARY (34): visible,
  // cuInit among them (a set-up call, family 'context', since schema 24).
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM api_calls WHERE family != 'launch'"), 12);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM api_calls WHERE family != 'launch' AND result = 34"), 12);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM context_ops WHERE api = 'cuInit' AND op = 'init' AND result = 34"), 1);
  EXPECT_EQ(scalar(*db, "SELECT count(DISTINCT family) FROM api_calls"), 7);
  EXPECT_EQ(scalar(*db, "SELECT sum(value) FROM counters WHERE name LIKE 'dropped_%'"), 0);
}
