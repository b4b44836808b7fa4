// gpuobs replay --execute on this GPU-less machine (issue 41): the executor
// runs against the fake libcuda under a real `gpuobs record` (root, BPF), so
// what it issued is captured like any program. Its capture's schedule must be
// the original's, call for call on every thread: the same kinds in the same
// order, on streams and events that correspond one to one, with the same
// bytes, directions, priorities and stream flags. The timings need a GPU (the
// H100 figures are in docs/performance.md); a host without one gets a clear
// error and nothing written.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "replay/exec_compare.h"
#include "replay/exec_schedule.h"
#include "replay/replay.h"
#include "run_util.h"
#include "store/db.h"
#include "unit/test_util.h"

namespace gpuobs {
namespace {

using testing::run_output;
using testing::TempDir;

// The original: api_workload's 3 threads calling every probed libcuda
// function (created streams with priorities, per-thread default streams,
// events recorded and waited on, copies of every direction, memsets, a graph,
// a host function, stream, event and context syncs).
std::string record_original(const TempDir& dir) {
  std::string cap = dir.file("orig.gpuobs");
  std::string cmd = std::string(GPUOBS_BIN) + " record -f -o " + cap + " --libcuda " + FAKE_LIBCUDA + " -- " +
                    API_WORKLOAD + " --lib " + FAKE_LIBCUDA + " --threads 3 --iterations 2 --truth " +
                    dir.file("truth.json") + " 2>&1";
  auto [rc, out] = run_output(cmd);
  EXPECT_EQ(rc, 0) << out;
  return cap;
}

// The whole capture, or an executor's run: its calls from the schedule's
// start until its last step was issued (its report says when).
replay::Schedule schedule_of(const std::string& file, const replay::ExecPart* run = nullptr) {
  auto db = Db::open(file, SQLITE_OPEN_READONLY);
  EXPECT_TRUE(db.ok()) << file;
  replay::ScheduleOptions o;
  if (run) {
    int64_t start = db->scalar("SELECT start_mono_ns FROM capture WHERE id = 1").value_or(0);
    o.from_ns = run->t0_mono_ns - start;
    o.to_ns = run->issued_mono_ns - start + 1;
  }
  auto s = replay::build_schedule(*db, o);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return s.ok() ? *s : replay::Schedule{};
}

// A graph is re-executed as one kernel of its span.
std::string kind_of(const replay::ExecStep& s) {
  return s.kind == replay::StepKind::graph ? "kernel" : replay::to_string(s.kind);
}

// The direction the executor can reproduce: host to device, device to host, or on the device.
std::string way(const std::string& d) {
  if (d == "HtoD" || d == "HtoA") return "to_device";
  if (d == "DtoH" || d == "AtoH") return "to_host";
  return "on_device";
}

// Ids on one side map to ids on the other one to one, the same way every time.
struct Bijection {
  std::map<int32_t, int32_t> there, back;
  bool add(int32_t a, int32_t b) {
    auto [i, new_a] = there.emplace(a, b);
    auto [j, new_b] = back.emplace(b, a);
    return i->second == b && j->second == a && new_a == new_b;
  }
};

}  // namespace

TEST(ReplayExecute, TheExecutorIssuesTheCapturedScheduleCallForCallOnEveryThread) {
  TempDir dir;
  std::string orig_file = record_original(dir);
  std::string prefix = dir.file("x");
  auto [rc, out] = run_output(std::string(GPUOBS_BIN) + " replay " + orig_file + " --execute --runs 2 --cuda-lib " +
                              FAKE_LIBCUDA + " --exec-out " + prefix + " 2>&1");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("per stream (median of 2 runs)"), std::string::npos) << out;

  replay::Schedule orig = schedule_of(orig_file);
  ASSERT_EQ(orig.threads.size(), 3u);
  ASSERT_GT(orig.steps.size(), 100u);
  for (int run = 1; run <= 2; ++run) {
    std::string exec_file = prefix + "." + std::to_string(run) + ".gpuobs";
    auto parts = replay::read_exec_report(prefix + "." + std::to_string(run) + ".report.jsonl");
    ASSERT_TRUE(parts.ok()) << parts.error().message;
    ASSERT_EQ(parts->size(), 1u);
    replay::Schedule exec = schedule_of(exec_file, &parts->front());
    ASSERT_EQ(exec.threads.size(), orig.threads.size()) << "run " << run;
    ASSERT_EQ(exec.steps.size(), orig.steps.size()) << "run " << run;
    // Per thread (threads in order of their first step on both sides), step for step.
    std::map<int32_t, std::vector<const replay::ExecStep*>> o_by, e_by;
    for (const auto& s : orig.steps) o_by[s.thread].push_back(&s);
    for (const auto& s : exec.steps) e_by[s.thread].push_back(&s);
    Bijection streams, events;
    for (int32_t t = 0; t < 3; ++t) {
      ASSERT_EQ(o_by[t].size(), e_by[t].size()) << "thread " << t;
      for (size_t i = 0; i < o_by[t].size(); ++i) {
        const auto& o = *o_by[t][i];
        const auto& e = *e_by[t][i];
        std::string at = "run " + std::to_string(run) + ", thread " + std::to_string(t) + ", step " +
                         std::to_string(i) + " (" + o.name + ")";
        ASSERT_EQ(kind_of(e), kind_of(o)) << at;
        EXPECT_EQ(e.bytes, o.bytes) << at;
        if (o.kind == replay::StepKind::copy) {
          EXPECT_EQ(e.async, o.async) << at;
          EXPECT_EQ(way(e.direction), way(o.direction)) << at << ": " << o.direction << " became " << e.direction;
        }
        EXPECT_EQ(e.stream < 0, o.stream < 0) << at;
        if (o.stream >= 0) { EXPECT_TRUE(streams.add(o.stream, e.stream)) << at << ": stream " << o.stream; }
        if (o.event >= 0) { EXPECT_TRUE(events.add(o.event, e.event)) << at << ": event " << o.event; }
      }
    }
    // Each stream as the original made it.
    for (auto [o, e] : streams.there) {
      const auto& os = orig.streams[o];
      const auto& es = exec.streams[e];
      EXPECT_EQ(es.kind == "legacy", os.kind == "legacy") << os.label;
      EXPECT_EQ(es.kind == "per_thread", os.kind == "per_thread") << os.label;
      EXPECT_EQ(es.priority, os.priority) << os.label;
      EXPECT_EQ(es.non_blocking, os.non_blocking) << os.label;
    }
    EXPECT_EQ(streams.there.size(), orig.streams.size());
  }

  // The comparison, stored in the original: every stream found on the executor's side.
  auto db = Db::open(orig_file, SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(*db->scalar("SELECT count(*) FROM replay_exec_runs"), 2);
  EXPECT_EQ(*db->scalar("SELECT count(*) FROM replay_exec_streams"), 2 * static_cast<int64_t>(orig.streams.size()));
  EXPECT_EQ(*db->scalar("SELECT count(*) FROM replay_exec_streams WHERE exec_queue IS NULL"), 0);
  EXPECT_EQ(*db->scalar("SELECT count(*) FROM replay_exec_streams WHERE orig_work_ops <> exec_work_ops"), 0);
  EXPECT_EQ(*db->scalar("SELECT sum(exec_launches = orig_launches) FROM replay_exec_runs"), 2);
  auto [rrc, report] = run_output(std::string(GPUOBS_BIN) + " report replay_exec_sum " + orig_file + " --format csv");
  ASSERT_EQ(rrc, 0) << report;
  EXPECT_NE(report.find("end to end,,2,"), std::string::npos) << report;
  EXPECT_EQ(report.find("not been replayed"), std::string::npos) << report;
}

// The what-if edits reach the executor: with no host gaps and every sync
// dropped, the re-execution has no sync step and its launches the same count.
TEST(ReplayExecute, EditsAreWhatIsExecuted) {
  TempDir dir;
  std::string orig_file = record_original(dir);
  std::string prefix = dir.file("y");
  auto [rc, out] = run_output(std::string(GPUOBS_BIN) + " replay " + orig_file +
                              " --execute --no-host-gaps --drop-syncs --cuda-lib " + FAKE_LIBCUDA + " --exec-out " +
                              prefix + " 2>&1");
  ASSERT_EQ(rc, 0) << out;
  auto parts = replay::read_exec_report(prefix + ".1.report.jsonl");
  ASSERT_TRUE(parts.ok());
  replay::Schedule exec = schedule_of(prefix + ".1.gpuobs", &parts->front());
  replay::Schedule orig = schedule_of(orig_file);
  int64_t syncs = 0, launches = 0, orig_launches = 0;
  for (const auto& s : exec.steps) {
    syncs += s.kind == replay::StepKind::stream_sync || s.kind == replay::StepKind::event_sync ||
             s.kind == replay::StepKind::context_sync;
    launches += s.kind == replay::StepKind::kernel || s.kind == replay::StepKind::graph;
  }
  for (const auto& s : orig.steps)
    orig_launches += s.kind == replay::StepKind::kernel || s.kind == replay::StepKind::graph;
  EXPECT_EQ(syncs, 0);
  EXPECT_EQ(launches, orig_launches);
  auto db = Db::open(orig_file, SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok());
  Stmt st(db->get(), "SELECT edits FROM replay_exec_runs");
  ASSERT_EQ(st.step(), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0)), "no-host-gaps,drop-syncs");
}

// No driver (a libcuda that is not there), or a driver with no GPU: a clear
// error, exit 1, and neither a schedule nor a run written.
TEST(ReplayExecute, AHostWithoutAGpuGetsAClearErrorAndNothingWritten) {
  TempDir dir;
  std::string orig_file = record_original(dir);
  std::string prefix = dir.file("z");
  auto [rc, out] = run_output(std::string(GPUOBS_BIN) + " replay " + orig_file +
                              " --execute --cuda-lib /nonexistent/libcuda.so.1 --exec-out " + prefix + " 2>&1");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("no CUDA driver: cannot load /nonexistent/libcuda.so.1"), std::string::npos) << out;
  EXPECT_NE(out.find("this host cannot re-execute a schedule: no CUDA GPU"), std::string::npos) << out;
  EXPECT_NE(out.find("--schedule-out"), std::string::npos) << "the way out is named: " << out;
  EXPECT_FALSE(std::filesystem::exists(prefix + ".schedule.json"));
  EXPECT_FALSE(std::filesystem::exists(prefix + ".1.gpuobs"));
  // The CUDA toolkit's stub libcuda: a driver library whose cuInit fails.
  auto [rc2, out2] = run_output(std::string(GPUOBS_BIN) + " replay " + orig_file + " --execute --cuda-lib " +
                                CUDA_STUB + " --exec-out " + prefix + " 2>&1");
  EXPECT_EQ(rc2, 1) << out2;
  EXPECT_NE(out2.find("no usable GPU: cuInit failed"), std::string::npos) << out2;
  auto db = Db::open(orig_file, SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok());
  auto n = db->scalar("SELECT count(*) FROM replay_exec_runs");
  EXPECT_TRUE(!n.ok() || *n == 0) << "no comparison stored";
  auto [rrc, report] = run_output(std::string(GPUOBS_BIN) + " report replay_exec_sum " + orig_file + " 2>&1");
  EXPECT_EQ(rrc, 0) << report;
  EXPECT_NE(report.find("has not been re-executed"), std::string::npos) << report;
  EXPECT_NE(report.find("hint: run gpuobs replay " + orig_file + " --execute"), std::string::npos) << report;
}

}  // namespace gpuobs
