// gpuobs diff end to end (issue 21): real recordings (real BPF) of
// tests/workloads/step_workload.cpp on the fake libcuda, unchanged and with
// each of three known changes; the diff must find exactly the changed row,
// significant, and nothing in the unchanged pair. Plus --per, --fail-on's
// exit status, windows of one capture, and bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "daemon/diff_watch.h"
#include "daemon/metrics_text.h"
#include "daemon_util.h"
#include "run_util.h"
#include "shared_recordings.h"
#include "store/schema.h"
#include "unit/test_util.h"

using namespace gpuobs::testing;

namespace {

std::unique_ptr<TempDir> g_dir;                // this process's diff outputs
std::unique_ptr<SharedRecordings> g_captures;  // the five recordings, made once per ctest run

std::string cap(const std::string& name) { return g_captures->file(name + ".gpuobs"); }

// 300 iterations per thread; the copy takes delay_us in the fake.
bool record(const std::string& dir, const std::string& name, int delay_us, const std::string& knobs = "") {
  const std::string out = dir + "/" + name + ".gpuobs", log = dir + "/" + name + ".log";
  std::string cmd = "FAKE_CUDA_DELAY_US=cuMemcpyHtoD_v2=" + std::to_string(delay_us) + " " + GPUOBS_BIN +
                    " record -o " + out + " --libcuda " + FAKE_LIBCUDA + " -- " + STEP_WORKLOAD + " --lib " +
                    FAKE_LIBCUDA + " --steps 300 " + knobs + " >" + log + " 2>&1";
  if (run(cmd) == 0) return true;
  ADD_FAILURE() << cmd << "\n" << read_file(log);
  return false;
}

struct Diff {
  int rc = -1;
  nlohmann::json rows;
  std::string err;
};

Diff diff(const std::string& args) {
  Diff d;
  std::string out = g_dir->file("diff.json"), err = g_dir->file("diff.err");
  d.rc = run(std::string(GPUOBS_BIN) + " diff " + args + " --format json >" + out + " 2>" + err);
  d.err = read_file(err);
  if (d.rc != 2) d.rows = read_json(out);
  return d;
}

class DiffRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_dir = std::make_unique<TempDir>();
    g_captures = std::make_unique<SharedRecordings>("diff", [](const std::string& dir) {
      // base and same back to back: two runs of one unchanged program.
      return record(dir, "base", 200) && record(dir, "same", 200) &&
             record(dir, "extra", 200, "--extra-kernel 1") &&  // one more kernel per step, on its own stream
             record(dir, "slow", 600) &&                       // cuMemcpyHtoD_v2 3x slower
             record(dir, "idle", 200, "--idle-ms 3");          // stream 2 idle 3 ms after each of its steps
    });
  }
  static void TearDownTestSuite() {
    g_captures.reset();
    g_dir.reset();
  }
  void SetUp() override { ASSERT_TRUE(g_captures->ok()) << "the recordings failed (see the first test's output)"; }
};

}  // namespace

TEST_F(DiffRuns, AnUnchangedRunChangesNothing) {
  auto d = diff(cap("base") + " " + cap("same"));
  ASSERT_EQ(d.rc, 0) << d.err;
  EXPECT_TRUE(d.rows.empty()) << d.rows.dump(1);
  EXPECT_NE(d.err.find("0 regressed, 0 improved"), std::string::npos) << d.err;
  EXPECT_NE(d.err.find("0 new and 0 vanished kernels, 0 new and 0 vanished stacks"), std::string::npos) << d.err;
  // --all: every row, each "same"; counts equal on both sides (300 per thread).
  auto all = diff(cap("base") + " " + cap("same") + " --all");
  ASSERT_EQ(all.rc, 0);
  int launches = 0;
  for (const auto& r : all.rows) {
    EXPECT_EQ(r["verdict"], "same") << r.dump();
    if (r["measure"] == "launches") {
      ++launches;
      EXPECT_EQ(r["base_n"], 300);
      EXPECT_EQ(r["new_n"], 300);
    }
  }
  EXPECT_EQ(launches, 3);  // stepA, stepB on stream#1; stepC on stream#2
  auto pass = diff(cap("base") + " " + cap("same") + " --fail-on 'regressed>0,new_kernels>0,p95_latency>+10%'");
  EXPECT_EQ(pass.rc, 0) << pass.err;
  EXPECT_NE(pass.err.find("gpuobs diff: PASS (3 thresholds)"), std::string::npos) << pass.err;
}

TEST_F(DiffRuns, OneExtraKernelIsOneNewRow) {
  auto d = diff(cap("base") + " " + cap("extra"));
  ASSERT_EQ(d.rc, 0) << d.err;
  ASSERT_EQ(d.rows.size(), 1u) << d.rows.dump(1);
  const auto& r = d.rows[0];
  EXPECT_EQ(r["verdict"], "new");
  EXPECT_EQ(r["measure"], "launches");
  EXPECT_EQ(r["name"], "extraKernel");
  EXPECT_EQ(r["stream"], "stream#3");
  EXPECT_EQ(r["base_n"], 0);
  EXPECT_EQ(r["new_n"], 300);
  EXPECT_NE(r["stack"].get<std::string>().find("launch(void*, void*) (step_workload.cpp:"), std::string::npos);
  EXPECT_NE(d.err.find("1 new and 0 vanished kernels"), std::string::npos) << d.err;
  // Per step (stepA once per step): one extraKernel per step.
  auto per_step = diff(cap("base") + " " + cap("extra") + " --per step --step-kernel stepA");
  ASSERT_EQ(per_step.rc, 0) << per_step.err;
  ASSERT_EQ(per_step.rows.size(), 1u);
  EXPECT_EQ(per_step.rows[0]["unit"], "per step");
  EXPECT_EQ(per_step.rows[0]["new"], 1.0);
  // --kernel keeps the rows of the kernels it names; the step marker still counts.
  auto only = diff(cap("base") + " " + cap("extra") + " --kernel extra --per step --step-kernel stepA");
  ASSERT_EQ(only.rc, 0) << only.err;
  ASSERT_EQ(only.rows.size(), 1u) << only.rows.dump(1);
  EXPECT_EQ(only.rows[0]["name"], "extraKernel");
  EXPECT_EQ(only.rows[0]["new"], 1.0);
  // CI: the threshold is crossed, exit 1, the verdict names the kernel.
  auto fail = diff(cap("base") + " " + cap("extra") + " --fail-on 'new_kernels>0,p95_latency>+10%'");
  EXPECT_EQ(fail.rc, 1);
  EXPECT_NE(fail.err.find("gpuobs diff: FAIL (1 of 2 thresholds): new_kernels>0: 1 (extraKernel)"), std::string::npos)
      << fail.err;
}

TEST_F(DiffRuns, AThreeTimesSlowerCallIsOneRegressedRow) {
  auto d = diff(cap("base") + " " + cap("slow"));
  ASSERT_EQ(d.rc, 0) << d.err;
  ASSERT_EQ(d.rows.size(), 1u) << d.rows.dump(1);
  const auto& r = d.rows[0];
  EXPECT_EQ(r["verdict"], "regressed");
  EXPECT_EQ(r["measure"], "latency");
  EXPECT_EQ(r["name"], "cuMemcpyHtoD_v2");
  EXPECT_EQ(r["base_n"], 300);
  EXPECT_EQ(r["new_n"], 300);
  // 200 -> 600 us asked of nanosleep, which adds its own overshoot to both.
  EXPECT_GE(r["new"].get<double>(), 600'000);
  EXPECT_GE(r["change_pct"].get<double>(), 50) << r.dump();
  EXPECT_LT(r["q_value"].get<double>(), 1e-6);
  EXPECT_GE(r["effect"].get<double>(), 0.6);
  // The time added: every call's host time in the new run minus the base's.
  auto copy_ns = [](const std::string& file) {
    auto db = gpuobs::open_capture_readonly(file);
    return db.ok() ? scalar(*db, "SELECT sum(duration_ns) FROM copies WHERE api = 'cuMemcpyHtoD_v2'") : -1;
  };
  EXPECT_NEAR(r["impact_ns"].get<double>(), double(copy_ns(cap("slow")) - copy_ns(cap("base"))), 1.0);
  EXPECT_GT(r["impact_ns"].get<double>(), 0);
  EXPECT_NE(r["stack"].get<std::string>().find("step_workload.cpp"), std::string::npos);
  auto fail = diff(cap("base") + " " + cap("slow") + " --fail-on 'p50_latency>+50%'");
  EXPECT_EQ(fail.rc, 1);
  EXPECT_NE(fail.err.find("p50_latency>+50%: step_workload: cuMemcpyHtoD_v2 +"), std::string::npos) << fail.err;
  EXPECT_EQ(diff(cap("base") + " " + cap("slow") + " --fail-on 'p50_latency>+1000%'").rc, 0);
}

TEST_F(DiffRuns, AnIdleStreamIsARegressedLaunchGapRowAndNothingElseOfOtherThreads) {
  auto d = diff(cap("base") + " " + cap("idle"));
  ASSERT_EQ(d.rc, 0) << d.err;
  ASSERT_GE(d.rows.size(), 1u);
  // The change is the idler thread's alone: its gap row first (the largest
  // impact by far). Its own sync may come out slower too, a real effect of
  // waking from the sleep (blocked +11 %, delta 0.62, once in a loaded full
  // run); nothing of the other threads may change.
  for (size_t i = 1; i < d.rows.size(); ++i) {
    EXPECT_EQ(d.rows[i]["measure"], "blocked") << d.rows.dump(1);
    EXPECT_NE(d.rows[i]["stack"].get<std::string>().find("main::{lambda()#2}"), std::string::npos) << d.rows.dump(1);
  }
  const auto& r = d.rows[0];
  EXPECT_EQ(r["verdict"], "regressed");
  EXPECT_EQ(r["measure"], "launch_gap");
  EXPECT_EQ(r["stream"], "stream#2");
  EXPECT_EQ(r["base_n"], 299);
  EXPECT_GE(r["new"].get<double>(), 3'000'000);  // each gap holds the 3 ms sleep
  EXPECT_LT(r["base"].get<double>(), 3'000'000);
}

TEST_F(DiffRuns, TwoWindowsOfOneCaptureAndBadInput) {
  // Two windows that split one run at its middle launch: every launch falls
  // in one of them.
  double mid_s;
  {
    auto db = gpuobs::open_capture_readonly(cap("base"));
    ASSERT_TRUE(db.ok());
    mid_s = double(scalar(*db,
                          "SELECT (min(ts_mono_ns) + max(ts_mono_ns)) / 2 - (SELECT start_mono_ns FROM capture) "
                          "FROM kernel_launches")) /
            1e9;
  }
  auto halves = diff(cap("base") + " --base-until " + std::to_string(mid_s) + " --since " + std::to_string(mid_s) +
                     " --no-stacks --all");
  ASSERT_EQ(halves.rc, 0) << halves.err;
  int launch_rows = 0, in_base = 0, in_new = 0;
  for (const auto& r : halves.rows)
    if (r["measure"] == "launches") {
      ++launch_rows;
      EXPECT_EQ(r["base_n"].get<int>() + r["new_n"].get<int>(), 300) << r.dump();
      in_base += r["base_n"].get<int>();
      in_new += r["new_n"].get<int>();
    }
  EXPECT_EQ(launch_rows, 3);
  EXPECT_GT(in_base, 0);  // (threads run at their own pace: one may finish in the first half)
  EXPECT_GT(in_new, 0);
  auto empty = diff(cap("base") + " --since 1000");
  EXPECT_EQ(empty.rc, 2);
  EXPECT_NE(empty.err.find("the new side has no launches or API calls in its window"), std::string::npos) << empty.err;
  auto itself = diff(cap("base"));
  EXPECT_EQ(itself.rc, 2);
  EXPECT_NE(itself.err.find("it would be compared with itself"), std::string::npos);
  std::ofstream(g_dir->file("junk.gpuobs")) << "not a capture";
  auto junk = diff(cap("base") + " " + g_dir->file("junk.gpuobs"));
  EXPECT_EQ(junk.rc, 2);
  EXPECT_NE(junk.err.find("junk.gpuobs"), std::string::npos) << junk.err;
  auto bad = diff(cap("base") + " " + cap("same") + " --fail-on 'speed>+1%'");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("unknown metric speed"), std::string::npos) << bad.err;
  auto no_step = diff(cap("base") + " " + cap("same") + " --per step");
  EXPECT_EQ(no_step.rc, 2);
  EXPECT_NE(no_step.err.find("needs a step marker"), std::string::npos);
}

// gpuobsd's rolling comparison, one step at a time: the current segment's
// window against the baseline, into the status and the Prometheus gauges.
TEST_F(DiffRuns, TheDaemonsRollingComparison) {
  using gpuobs::daemon::DiffWatch;
  DiffWatch w(cap("base"), std::chrono::seconds(3600), 1e6);  // the window covers the whole capture
  w.compare_once();                                           // no current segment yet: nothing done
  EXPECT_EQ(w.state().comparisons, 0u);
  w.set_current(cap("slow"));
  w.compare_once();
  auto st = w.state();
  EXPECT_EQ(st.baseline, "");  // set by start(); compare_once alone does not
  EXPECT_EQ(st.comparisons, 1u);
  EXPECT_EQ(st.errors, 0u);
  EXPECT_GE(st.regressed, 1u);     // cuMemcpyHtoD_v2's latency at least
  EXPECT_GE(st.worst_ratio, 1.5);  // 3x asked of nanosleep
  w.set_current(cap("extra"));
  w.compare_once();
  EXPECT_EQ(w.state().new_kernels, 1u);
  EXPECT_EQ(w.state().comparisons, 2u);
  // A comparison that fails clears what the last good one found.
  w.set_current(cap("slow"));
  w.compare_once();
  ASSERT_GE(w.state().regressed, 1u);
  w.set_current(g_dir->file("gone.gpuobs"));
  w.compare_once();
  EXPECT_EQ(w.state().errors, 1u);
  EXPECT_EQ(w.state().regressed, 0u);
  EXPECT_EQ(w.state().new_kernels, 0u);
  EXPECT_EQ(w.state().worst_ratio, 1.0);
  EXPECT_NE(w.state().last_error.find("segment " + g_dir->file("gone.gpuobs")), std::string::npos);

  gpuobs::HealthSnapshot h;
  h.diff_baseline = cap("base");
  h.diff_comparisons = 2;
  h.diff_regressed = 3;
  h.diff_worst_ratio = 2.5;
  h.diff_new_kernels = 1;
  std::string text = gpuobs::render_prometheus(h);
  EXPECT_NE(text.find("\ngpuobs_diff_regressed_series 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ngpuobs_diff_worst_regression_ratio 2.5\n"), std::string::npos);
  EXPECT_NE(text.find("\ngpuobs_diff_new_kernels 1\n"), std::string::npos);
  EXPECT_NE(text.find("\ngpuobs_diff_comparisons_total 2\n"), std::string::npos);
  h.diff_baseline.clear();  // off: no diff series at all
  EXPECT_EQ(gpuobs::render_prometheus(h).find("gpuobs_diff_"), std::string::npos);

  DiffWatch bad(g_dir->file("missing.gpuobs"), std::chrono::seconds(3600), 60);
  bad.set_current(cap("base"));
  bad.compare_once();
  EXPECT_EQ(bad.state().errors, 1u);
  EXPECT_EQ(bad.state().comparisons, 0u);
  EXPECT_NE(bad.state().last_error.find("baseline " + g_dir->file("missing.gpuobs")), std::string::npos)
      << bad.state().last_error;
}

// The idle-time analysis on a real recording (issue 21): the idler thread
// sleeps 3 ms after each of its 300 syncs, so stream 2 (the second stream
// created) sits idle at least that long 299 times, all of it host_wait (the
// host had not submitted; estimated gaps contain the whole sleep: the sync's
// return bounds the previous launch, the next launch's entry the gap's end).
TEST_F(DiffRuns, TheInjectedIdleTimeIsFoundAsHostWait) {
  std::string copy = g_dir->file("idle_replayed.gpuobs");
  std::filesystem::copy_file(cap("idle"), copy);
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " replay " + copy + " >/dev/null 2>&1"), 0);
  auto db = gpuobs::open_capture_readonly(copy);
  ASSERT_TRUE(db.ok());
  const std::string q2 = "(SELECT id FROM replay_queues WHERE kind = 'created' ORDER BY created_ns LIMIT 1 OFFSET 1)";
  EXPECT_EQ(scalar(*db, "SELECT gaps FROM replay_idle_spans WHERE queue_id = " + q2), 299);
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM replay_idle_gaps WHERE queue_id = " + q2), 299);
  EXPECT_EQ(scalar(*db, "SELECT min(host_wait_ns) >= 3000000 FROM replay_idle_gaps WHERE queue_id = " + q2), 1);
  EXPECT_EQ(scalar(*db, "SELECT sum(dependency_wait_ns + other_ns) FROM replay_idle_gaps WHERE queue_id = " + q2), 0);
  int64_t host_wait = scalar(*db, "SELECT sum(host_wait_ns) FROM replay_idle_gaps WHERE queue_id = " + q2);
  EXPECT_GE(host_wait, 299 * 3'000'000LL);
  EXPECT_LE(host_wait, 299 * 4'500'000LL) << "more than 1.5 ms of scheduling per 3 ms sleep";
  // The report says the same, as estimated.
  std::string out = g_dir->file("idle.csv");
  ASSERT_EQ(run(std::string(GPUOBS_BIN) + " report gpu_idle " + copy + " --format csv >" + out), 0);
  std::string csv = read_file(out);
  // (A little sync_wait may open a gap: another thread's observation can
  // prove stream 2's launch complete while the idler still sits in its sync.)
  int64_t sync_wait = scalar(*db, "SELECT sum(sync_wait_ns) FROM replay_idle_gaps WHERE queue_id = " + q2);
  EXPECT_NE(csv.find(",299," + std::to_string(host_wait) + "," + std::to_string(sync_wait) + ",0,0,estimated,"),
            std::string::npos)
      << csv;
}

// The real gpuobsd with diff_baseline: it captures the 3x-slower run into its
// segment and, at its first comparison (every 10 s, the shortest interval),
// finds the regression and publishes it in its status.
TEST_F(DiffRuns, GpuobsdComparesItsSegmentWithTheBaseline) {
  TempDir dir;
  std::string state = dir.file("state"), status = dir.file("status.json"), log = dir.file("gpuobsd.log");
  std::filesystem::create_directories(state);
  auto args = base_args(dir.file("gpuobsd.conf"), state, status);
  const std::string baseline = cap("base");
  for (const std::string& a : std::vector<std::string>{"--diff-baseline", baseline, "--diff-interval", "10",
                                                       "--diff-window", "120", "--metrics-hz", "0"})
    args.push_back(a);
  Daemon d(args, log);
  ASSERT_TRUE(d.wait_log(log, "capturing to")) << read_file(log);
  EXPECT_NE(read_file(log).find("comparing the last 120 s with " + cap("base") + " every 10 s"), std::string::npos);
  ASSERT_EQ(run("FAKE_CUDA_DELAY_US=cuMemcpyHtoD_v2=600 " + std::string(STEP_WORKLOAD) + " --lib " + FAKE_LIBCUDA +
                " --steps 300"),
            0);
  nlohmann::json diff_state;
  for (int i = 0; i < 300; ++i) {  // the first comparison comes 10 s after the start
    auto j = nlohmann::json::parse(read_file(status), nullptr, false);
    if (j.is_object() && j.contains("diff") && j["diff"]["comparisons"].get<int>() >= 1) {
      diff_state = j["diff"];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(diff_state.is_object()) << read_file(status) << read_file(log);
  EXPECT_EQ(diff_state["baseline"], cap("base"));
  EXPECT_EQ(diff_state["errors"], 0) << diff_state.dump();
  EXPECT_GE(diff_state["regressed"].get<int>(), 1) << diff_state.dump();
  EXPECT_GE(diff_state["worst_ratio"].get<double>(), 1.5) << diff_state.dump();
  EXPECT_EQ(diff_state["new_kernels"], 0);
  EXPECT_TRUE(d.wait_log(log, "series regressed against " + cap("base"))) << read_file(log);
  std::string st = output_of(std::string(GPUOBS_BIN) + " status --status-file " + status);
  EXPECT_NE(st.find("diff:           "), std::string::npos) << st;
  EXPECT_NE(st.find("against " + cap("base") + "; "), std::string::npos) << st;
}
