// The re-execution's comparison (replay/exec_compare.h) on replays of known
// shape: busy and idle time clipped to a window, the idle split by cause, the
// executor's queues found by its report, the errors and the launch-gap
// percentiles; the executor's report read and refused when it is not one.
#include <gtest/gtest.h>

#include <fstream>

#include "replay/exec_compare.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::replay;

namespace {

// One queue busy over [100, 1100) but for a gap [300, 500): host_wait then dependency_wait.
void add_queue(replay::Result& r, int64_t id, uint32_t tgid, const std::string& kind, uint64_t handle,
               int64_t shift = 0) {
  Queue q;
  q.id = id, q.tgid = tgid, q.kind = kind, q.handle = handle;
  r.queues.push_back(q);
  IdleSpan s;
  s.queue_id = id, s.start_ns = 100 + shift, s.end_ns = 1100 + shift, s.work_ops = 3, s.measured_ops = 3;
  r.idle_spans.push_back(s);
  IdleGap g;
  g.queue_id = id, g.start_ns = 300 + shift, g.end_ns = 500 + shift;
  g.pieces = {{"host_wait", 300 + shift, 400 + shift}, {"dependency_wait", 400 + shift, 500 + shift}};
  r.idle_gaps.push_back(g);
  for (int64_t t : {100, 500, 800}) {
    Op o;
    o.queue_id = id, o.kind = "launch", o.enqueue_ns = t + shift;
    r.ops.push_back(o);
  }
}

ExecStep launch(int64_t index, int32_t stream, int64_t gap) {
  ExecStep s;
  s.index = index, s.stream = stream, s.kind = StepKind::kernel, s.gap_ns = gap;
  return s;
}

}  // namespace

TEST(ExecCompare, BusyAndIdleAreClippedToTheWindowAndSplitByCause) {
  replay::Result r;
  add_queue(r, 1, 10, "created", 0x7000);
  StreamUse all = stream_use(r, 1, {0, 2000});
  EXPECT_EQ(all.busy_ns, 800);
  EXPECT_EQ(all.idle_ns, 200);
  EXPECT_EQ(all.host_wait_ns, 100);
  EXPECT_EQ(all.dependency_wait_ns, 100);
  EXPECT_EQ(all.sync_wait_ns + all.other_ns, 0);
  EXPECT_EQ(all.work_ops, 3);
  EXPECT_EQ(all.measured_ops, 3);
  // [350, 1000): 650 of the span, 150 of the gap (50 host, 100 dependency), two of the three ops entered.
  StreamUse part = stream_use(r, 1, {350, 1000});
  EXPECT_EQ(part.busy_ns, 500);
  EXPECT_EQ(part.idle_ns, 150);
  EXPECT_EQ(part.host_wait_ns, 50);
  EXPECT_EQ(part.dependency_wait_ns, 100);
  EXPECT_EQ(part.work_ops, 2);
  EXPECT_EQ(part.measured_ops, 0) << "the span is not all inside the window: its measured count is not this window's";
  EXPECT_EQ(stream_use(r, 2, {0, 2000}).busy_ns, 0) << "another queue";
}

TEST(ExecCompare, StreamsAreFoundByTheExecutorsHandlesAndComparedWithTheirErrors) {
  Schedule orig;
  orig.start_ns = 100, orig.end_ns = 1100;
  orig.streams = {{0, 1, 5, 100, "created", "stream#1", true, -2}, {1, 2, 5, 100, "legacy", "", false, 0}};
  orig.steps = {launch(0, 0, 0), launch(1, 1, 40), launch(2, 0, 10), launch(3, 0, 20)};
  replay::Result orig_r;
  add_queue(orig_r, 1, 100, "created", 0x7000);
  add_queue(orig_r, 2, 100, "legacy", 0);

  Schedule exec;  // the executor's capture: its own queue ids, handles and pid, later and 10% longer on stream#1
  exec.start_ns = 5000, exec.end_ns = 6200;
  exec.steps = {launch(0, 0, 0), launch(1, 1, 60), launch(2, 0, 20), launch(3, 0, 30)};
  replay::Result exec_r;
  add_queue(exec_r, 7, 4242, "legacy", 0, 4900);
  add_queue(exec_r, 8, 4242, "created", 0xbeef0000, 4900);
  exec_r.idle_spans[1].end_ns += 80;  // stream#1 busy 880 instead of 800
  ExecPart part;
  part.process_id = 5, part.pid = 4242, part.t0_mono_ns = 5000;
  part.streams = {{0, 0xbeef0000, 0}, {1, 0, 0}};

  ExecCompare c = compare_execution(orig, orig_r, exec, exec_r, {part});
  ASSERT_EQ(c.streams.size(), 2u);
  EXPECT_EQ(c.streams[0].exec.queue_id, 8);
  EXPECT_EQ(c.streams[1].exec.queue_id, 7);
  EXPECT_EQ(c.streams[0].orig.busy_ns, 800);
  EXPECT_EQ(c.streams[0].exec.busy_ns, 880);
  EXPECT_DOUBLE_EQ(c.streams[0].busy_error(), 0.1);
  EXPECT_DOUBLE_EQ(c.streams[1].busy_error(), 0.0);
  EXPECT_EQ(c.streams[0].priority, -2);
  EXPECT_EQ(c.orig_e2e_ns, 1000);
  EXPECT_EQ(c.exec_e2e_ns, 1200);
  EXPECT_DOUBLE_EQ(c.e2e_error(), 0.2);
  EXPECT_EQ(c.orig_launches, 4);
  EXPECT_EQ(c.orig_gap_p50_ns, 10);  // gaps 0 10 20 40: nearest rank 2 of 4
  EXPECT_EQ(c.orig_gap_p90_ns, 40);
  EXPECT_EQ(c.exec_gap_p50_ns, 20);
  EXPECT_EQ(c.orig_total.busy_ns, 1600);
  EXPECT_EQ(c.exec_total.busy_ns, 1680);
  EXPECT_EQ(c.exec_total.host_wait_ns, 200);

  part.pid = 1;  // the report names another process: nothing of the executor's is this run's
  ExecCompare none = compare_execution(orig, orig_r, exec, exec_r, {part});
  EXPECT_FALSE(none.streams[0].exec.queue_id.has_value());
  EXPECT_DOUBLE_EQ(none.streams[0].busy_error(), -1.0);
}

TEST(ExecCompare, TheExecutorsReportIsReadAndWhatIsNotOneRefused) {
  gpuobs::testing::TempDir dir;
  std::string f = dir.file("r.jsonl");
  std::ofstream(f) << R"({"process_id":3,"pid":77,"t0_mono_ns":10,"issued_mono_ns":15,"end_mono_ns":20,)"
                   << R"("calibration":{"measured":true,"ns_per_cycle":0.5,"fixed_ns":1200.5},)"
                   << R"("streams":[{"id":0,"handle":4096,"tid":0},{"id":2,"handle":2,"tid":78}],"threads":[]})"
                   << "\n";
  auto r = read_exec_report(f);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].pid, 77u);
  EXPECT_EQ((*r)[0].calibration, "events") << "measured, without a source: an executor of before the source";
  EXPECT_DOUBLE_EQ((*r)[0].fixed_ns, 1200.5);
  ASSERT_EQ((*r)[0].streams.size(), 2u);
  EXPECT_EQ((*r)[0].streams[1].tid, 78u);
  std::ofstream(f) << "not json\n";
  EXPECT_FALSE(read_exec_report(f).ok());
  std::ofstream(f) << "";
  auto empty = read_exec_report(f);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("did not finish"), std::string::npos);
  EXPECT_FALSE(read_exec_report(dir.file("missing")).ok());
}

// The fit through each cycle count's median: a stray sample moves nothing,
// one count alone or a flat line gives no fit.
TEST(ExecCompare, TheSpinKernelFitGoesThroughTheMedians) {
  std::vector<std::pair<uint64_t, int64_t>> s;
  for (uint64_t c : {0, 1000, 4000, 16000})
    for (int i = 0; i < 9; ++i) s.emplace_back(c, static_cast<int64_t>(1200 + c / 2));  // 1.2 us + 0.5 ns/cycle
  s.emplace_back(4000, 900000);                                                         // one kernel held up
  auto f = fit_spin_kernel(s);
  ASSERT_TRUE(f.has_value());
  EXPECT_NEAR(f->fixed_ns, 1200, 1e-6);
  EXPECT_NEAR(f->ns_per_cycle, 0.5, 1e-9);
  EXPECT_FALSE(fit_spin_kernel({{1000, 5}, {1000, 6}}).has_value());
  EXPECT_FALSE(fit_spin_kernel({{0, 500}, {1000, 500}}).has_value()) << "no positive rate";
}
