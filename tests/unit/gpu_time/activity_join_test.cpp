// The join of CUPTI activity records to captured calls (activity_join.cpp) on
// synthetic records whose answer is known: in order, reordered, driver
// records missing, extra activities, threads interleaved, ties, graph
// launches, pthread ids, stream disagreement.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "gpu_time/activity_join.h"
#include "gt_builder.h"

namespace gpuobs::gpu_time {
namespace {

using testing::driver;
using testing::gpu;

constexpr uint32_t kPid = 100, kTid = 101;
constexpr uint64_t kStreamA = 0xA000;

HostCall call(uint64_t row, uint32_t tgid, uint32_t tid, uint64_t ts, HostCallKind kind, uint64_t stream = kStreamA) {
  HostCall c;
  c.row_id = row;
  c.tgid = tgid;
  c.tid = tid;
  c.ts_ns = ts;
  c.kind = kind;
  c.stream = stream;
  return c;
}

// One thread: launch, copy, launch, memset, launch 10 us apart; each driver
// call enters 2 us after the probe (correlation ids 10..50), then a
// synchronize (60) with no GPU work.
struct OneThread {
  std::vector<HostCall> calls = {
      call(1, kPid, kTid, 1'000'000, HostCallKind::launch), call(2, kPid, kTid, 1'010'000, HostCallKind::copy),
      call(3, kPid, kTid, 1'020'000, HostCallKind::launch), call(4, kPid, kTid, 1'030'000, HostCallKind::memset),
      call(5, kPid, kTid, 1'040'000, HostCallKind::launch)};
  std::vector<Activity> acts = {driver(kPid, 10, kTid, 1'002'000, 1'005'000),
                                driver(kPid, 20, kTid, 1'012'000, 1'015'000),
                                driver(kPid, 30, kTid, 1'022'000, 1'025'000),
                                driver(kPid, 40, kTid, 1'032'000, 1'035'000),
                                driver(kPid, 50, kTid, 1'042'000, 1'045'000),
                                driver(kPid, 60, kTid, 1'052'000, 2'800'000),
                                gpu(ActivityKind::kernel, kPid, 10, 2'000'000, 2'100'000),
                                gpu(ActivityKind::memcpy, kPid, 20, 2'200'000, 2'300'000),
                                gpu(ActivityKind::kernel, kPid, 30, 2'400'000, 2'450'000),
                                gpu(ActivityKind::memset, kPid, 40, 2'500'000, 2'510'000),
                                gpu(ActivityKind::kernel, kPid, 50, 2'600'000, 2'700'000)};

  void drop_driver(uint32_t corr) {
    std::erase_if(acts,
                  [&](const Activity& a) { return a.kind == ActivityKind::driver_api && a.correlation_id == corr; });
  }
};

void expect_time(const JoinResult& r, uint64_t row, uint64_t start, uint64_t end, uint32_t corr, bool by_order,
                 uint32_t stream = 7, uint32_t activities = 1) {
  const GpuTime* t = r.find(row);
  ASSERT_NE(t, nullptr) << "row " << row;
  EXPECT_EQ(t->start_ns, start) << "row " << row;
  EXPECT_EQ(t->end_ns, end) << "row " << row;
  EXPECT_EQ(t->correlation_id, corr) << "row " << row;
  EXPECT_EQ(t->by_order, by_order) << "row " << row;
  EXPECT_EQ(t->stream_id, stream) << "row " << row;
  EXPECT_EQ(t->device_id, 0u) << "row " << row;
  EXPECT_EQ(t->activities, activities) << "row " << row;
}

void expect_one_thread(const JoinResult& r, bool by_order_3 = false, bool all_by_order = false) {
  ASSERT_EQ(r.rows.size(), 5u);
  for (size_t i = 1; i < r.rows.size(); ++i) EXPECT_LT(r.rows[i - 1].row_id, r.rows[i].row_id);
  expect_time(r, 1, 2'000'000, 2'100'000, 10, all_by_order);
  expect_time(r, 2, 2'200'000, 2'300'000, 20, all_by_order);
  expect_time(r, 3, 2'400'000, 2'450'000, 30, all_by_order || by_order_3);
  expect_time(r, 4, 2'500'000, 2'510'000, 40, all_by_order);
  expect_time(r, 5, 2'600'000, 2'700'000, 50, all_by_order);
}

TEST(GpuTimeJoin, InOrder) {
  OneThread s;
  JoinResult r = join_activities(s.calls, s.acts);
  expect_one_thread(r);
  const JoinCounts& c = r.counts;
  EXPECT_EQ(c.joined_by_correlation, 5u);
  EXPECT_EQ(c.joined_by_order + c.extra_activities + c.activities_without_row + c.activities_ambiguous +
                c.rows_without_activity + c.rows_without_process + c.stream_conflicts,
            0u);
}

TEST(GpuTimeJoin, ReorderedRecordsAndCalls) {
  OneThread s;
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::shuffle(s.acts.begin(), s.acts.end(), rng);
    std::shuffle(s.calls.begin(), s.calls.end(), rng);
    JoinResult r = join_activities(s.calls, s.acts);
    expect_one_thread(r);
    EXPECT_EQ(r.counts.joined_by_correlation, 5u);
  }
}

TEST(GpuTimeJoin, MissingDriverRecordJoinsByOrderBetweenItsNeighbours) {
  OneThread s;
  s.drop_driver(30);
  JoinResult r = join_activities(s.calls, s.acts);
  expect_one_thread(r, /*by_order_3=*/true);
  EXPECT_EQ(r.counts.joined_by_correlation, 4u);
  EXPECT_EQ(r.counts.joined_by_order, 1u);
  EXPECT_EQ(r.counts.activities_ambiguous + r.counts.activities_without_row + r.counts.rows_without_activity, 0u);
}

TEST(GpuTimeJoin, NoDriverRecordsAtAllJoinsEachKindInCallOrder) {
  OneThread s;
  for (uint32_t corr : {10, 20, 30, 40, 50, 60}) s.drop_driver(corr);
  JoinResult r = join_activities(s.calls, s.acts);
  expect_one_thread(r, true, /*all_by_order=*/true);
  EXPECT_EQ(r.counts.joined_by_order, 5u);
  EXPECT_EQ(r.counts.joined_by_correlation, 0u);
}

TEST(GpuTimeJoin, ExtraActivitiesAreCounted) {
  OneThread s;
  // A kernel of a thread gpuobs has no calls from, and one after the last
  // driver record with no launch left to take it.
  s.acts.push_back(driver(kPid, 55, 999, 1'043'000, 1'044'000));
  s.acts.push_back(gpu(ActivityKind::kernel, kPid, 55, 2'750'000, 2'760'000));
  s.acts.push_back(gpu(ActivityKind::kernel, kPid, 65, 2'800'000, 2'810'000));
  JoinResult r = join_activities(s.calls, s.acts);
  expect_one_thread(r);
  EXPECT_EQ(r.counts.joined_by_correlation, 5u);
  EXPECT_EQ(r.counts.activities_without_row, 2u);
  EXPECT_EQ(r.counts.activities_ambiguous, 0u);
}

TEST(GpuTimeJoin, MoreActivitiesThanCallsInAWindowIsAmbiguous) {
  OneThread s;
  s.drop_driver(30);
  s.acts.push_back(gpu(ActivityKind::kernel, kPid, 35, 2'460'000, 2'470'000));  // between 20 and 40, no driver record
  JoinResult r = join_activities(s.calls, s.acts);
  EXPECT_EQ(r.find(3), nullptr);
  EXPECT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.counts.joined_by_correlation, 4u);
  EXPECT_EQ(r.counts.activities_ambiguous, 2u);
  EXPECT_EQ(r.counts.rows_without_activity, 1u);
}

TEST(GpuTimeJoin, MissingActivityLeavesItsCallUnjoined) {
  OneThread s;
  std::erase_if(s.acts, [](const Activity& a) { return a.kind == ActivityKind::memcpy; });
  JoinResult r = join_activities(s.calls, s.acts);
  EXPECT_EQ(r.find(2), nullptr);
  EXPECT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.counts.rows_without_activity, 1u);
  EXPECT_EQ(r.counts.joined_by_correlation, 4u);
}

TEST(GpuTimeJoin, TwoThreadsInterleaved) {
  constexpr uint32_t kPid2 = 200, kA = 201, kB = 202;
  std::vector<HostCall> calls;
  std::vector<Activity> acts;
  for (uint32_t i = 0; i < 6; ++i) {
    uint32_t tid = i % 2 ? kB : kA;
    uint64_t ts = 1'000'000 + 5'000ull * i;
    calls.push_back(call(i + 1, kPid2, tid, ts, HostCallKind::launch, tid == kA ? 0xA : 0xB));
    acts.push_back(driver(kPid2, i + 1, tid, ts + 2'000, ts + 3'000));
    acts.push_back(gpu(ActivityKind::kernel, kPid2, i + 1, 3'000'000 + 100'000ull * i, 3'050'000 + 100'000ull * i,
                       tid == kA ? 7 : 8));
  }
  auto check = [&](const JoinResult& r, bool b_by_order) {
    ASSERT_EQ(r.rows.size(), 6u);
    for (uint32_t i = 0; i < 6; ++i)
      expect_time(r, i + 1, 3'000'000 + 100'000ull * i, 3'050'000 + 100'000ull * i, i + 1, b_by_order && i % 2,
                  i % 2 ? 8 : 7);
  };
  JoinResult r = join_activities(calls, acts);
  check(r, false);
  EXPECT_EQ(r.counts.joined_by_correlation, 6u);
  // Thread B's driver records lost: its calls fall between thread A's.
  std::erase_if(acts, [&](const Activity& a) { return a.kind == ActivityKind::driver_api && a.tid == kB; });
  r = join_activities(calls, acts);
  check(r, true);
  EXPECT_EQ(r.counts.joined_by_correlation, 3u);
  EXPECT_EQ(r.counts.joined_by_order, 3u);
  EXPECT_EQ(r.counts.activities_ambiguous + r.counts.rows_without_activity, 0u);
}

TEST(GpuTimeJoin, AFailedLaunchInAnOrderWindowMakesItAmbiguous) {
  // Call 2's driver record is lost; call 3 failed (its driver record, no
  // kernel). Both fall between records 10 and 20: which one kernel 15
  // belongs to is not known without the API of record 20, so neither is joined.
  constexpr uint32_t kP = 300, kT = 301;
  std::vector<HostCall> calls = {call(1, kP, kT, 1'000'000, HostCallKind::launch),
                                 call(2, kP, kT, 1'010'000, HostCallKind::launch),
                                 call(3, kP, kT, 1'020'000, HostCallKind::launch)};
  std::vector<Activity> acts = {driver(kP, 10, kT, 1'002'000, 1'003'000),
                                gpu(ActivityKind::kernel, kP, 10, 2'000'000, 2'100'000),
                                gpu(ActivityKind::kernel, kP, 15, 2'200'000, 2'300'000),
                                driver(kP, 20, kT, 1'022'000, 1'023'000), driver(kP, 30, kT, 1'032'000, 1'033'000)};
  JoinResult r = join_activities(calls, acts);
  expect_time(r, 1, 2'000'000, 2'100'000, 10, false);
  EXPECT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.counts.activities_ambiguous, 1u);
  EXPECT_EQ(r.counts.rows_without_activity, 2u);
}

TEST(GpuTimeJoin, PrefersTheCallBeforeTheEntryToANearerOneAfter) {
  // A 3 us launch loop: the next call's probe (1'003'500) is nearer the entry
  // (1'002'000) than this call's (1'000'000), but it comes after the entry.
  std::vector<HostCall> calls = {call(1, 400, 401, 1'000'000, HostCallKind::launch),
                                 call(2, 400, 401, 1'003'500, HostCallKind::launch)};
  std::vector<Activity> acts = {
      driver(400, 1, 401, 1'002'000, 1'003'000), gpu(ActivityKind::kernel, 400, 1, 2'000'000, 2'100'000),
      driver(400, 2, 401, 1'005'500, 1'006'500), gpu(ActivityKind::kernel, 400, 2, 2'200'000, 2'300'000)};
  JoinResult r = join_activities(calls, acts);
  expect_time(r, 1, 2'000'000, 2'100'000, 1, false);
  expect_time(r, 2, 2'200'000, 2'300'000, 2, false);
}

TEST(GpuTimeJoin, TwoCandidateCallsAtOneTimeAreAmbiguous) {
  std::vector<HostCall> calls = {call(1, 400, 401, 1'000'000, HostCallKind::launch),
                                 call(2, 400, 401, 1'000'000, HostCallKind::launch)};
  std::vector<Activity> acts = {driver(400, 1, 401, 1'002'000, 1'003'000),
                                gpu(ActivityKind::kernel, 400, 1, 2'000'000, 2'100'000)};
  JoinResult r = join_activities(calls, acts);
  EXPECT_TRUE(r.rows.empty());
  EXPECT_EQ(r.counts.activities_ambiguous, 1u);
  EXPECT_EQ(r.counts.rows_without_activity, 2u);
}

TEST(GpuTimeJoin, CallTooFarFromItsDriverRecordIsNotJoined) {
  std::vector<HostCall> calls = {call(1, 450, 451, 1'000'000, HostCallKind::launch)};
  std::vector<Activity> acts = {driver(450, 1, 451, 1'300'000, 1'301'000),
                                gpu(ActivityKind::kernel, 450, 1, 2'000'000, 2'100'000)};
  JoinResult r = join_activities(calls, acts);  // default lead: 200 us
  EXPECT_TRUE(r.rows.empty());
  EXPECT_EQ(r.counts.activities_without_row, 1u);
  JoinOptions wide;
  wide.max_lead_ns = 400'000;
  EXPECT_EQ(join_activities(calls, acts, wide).rows.size(), 1u);
}

// A CUDA graph launch joins its own call (gpuobs's stream_ops row of the
// graph launch), never a kernel launch: the launches around it keep their
// own kernels. Found by the review of issue 19: K1, a graph, K2, K3 10 us
// apart gave K2 the graph's kernels and K3 K2's.
TEST(GpuTimeJoin, AGraphLaunchTakesNoNeighbouringLaunchRow) {
  std::vector<HostCall> calls = {
      call(1, 500, 501, 1'000'000, HostCallKind::launch), call(2, 500, 501, 1'020'000, HostCallKind::launch),
      call(3, 500, 501, 1'030'000, HostCallKind::launch), call(4, 500, 501, 1'010'000, HostCallKind::graph)};
  Activity graph = driver(500, 2, 501, 1'010'500, 1'012'000);
  graph.cbid = 514;  // cuGraphLaunch
  std::vector<Activity> acts = {driver(500, 1, 501, 1'000'500, 1'001'000),
                                graph,
                                driver(500, 3, 501, 1'020'500, 1'021'000),
                                driver(500, 4, 501, 1'030'500, 1'031'000),
                                gpu(ActivityKind::kernel, 500, 1, 2'000'000, 2'100'000),
                                gpu(ActivityKind::kernel, 500, 2, 2'150'000, 2'200'000),
                                gpu(ActivityKind::kernel, 500, 2, 2'200'000, 2'250'000),
                                gpu(ActivityKind::kernel, 500, 3, 2'300'000, 2'400'000),
                                gpu(ActivityKind::kernel, 500, 4, 2'500'000, 2'600'000)};
  JoinResult r = join_activities(calls, acts);
  ASSERT_EQ(r.rows.size(), 4u);
  expect_time(r, 1, 2'000'000, 2'100'000, 1, false);
  expect_time(r, 2, 2'300'000, 2'400'000, 3, false);
  expect_time(r, 3, 2'500'000, 2'600'000, 4, false);
  expect_time(r, 4, 2'150'000, 2'250'000, 2, false, 7, 2);  // the graph: both its kernels
  EXPECT_EQ(r.counts.graph_activities, 2u);
  EXPECT_EQ(r.counts.activities_without_row, 0u);
  // Without its call (an older capture, or a graph launched from a thread
  // gpuobs did not see): counted, and still no kernel launch takes it.
  std::vector<HostCall> launches_only(calls.begin(), calls.begin() + 3);
  JoinResult r2 = join_activities(launches_only, acts);
  ASSERT_EQ(r2.rows.size(), 3u);
  expect_time(r2, 2, 2'300'000, 2'400'000, 3, false);
  EXPECT_EQ(r2.counts.activities_without_row, 2u);
  // The same through the runtime (cudaGraphLaunch, 311), and a one-kernel graph.
  for (auto& a : acts)
    if (a.correlation_id == 2 && a.kind == ActivityKind::driver_api) a.kind = ActivityKind::runtime_api, a.cbid = 311;
  std::erase_if(acts, [](const Activity& a) { return a.correlation_id == 2 && a.start_ns == 2'200'000; });
  r = join_activities(calls, acts);
  ASSERT_EQ(r.rows.size(), 4u);
  expect_time(r, 2, 2'300'000, 2'400'000, 3, false);
  expect_time(r, 4, 2'150'000, 2'200'000, 2, false);  // cudaGraphLaunch's span holds the probed cuGraphLaunch
  EXPECT_EQ(r.counts.graph_activities, 1u);
}

TEST(GpuTimeJoin, PthreadIdsJoinTheNearestCallOfAnyThread) {
  std::vector<HostCall> calls = {call(1, 600, 601, 1'000'000, HostCallKind::launch),
                                 call(2, 600, 602, 1'005'000, HostCallKind::launch)};
  std::vector<Activity> acts = {driver(600, 1, 0, 1'001'000, 1'002'000), driver(600, 2, 0, 1'006'000, 1'007'000),
                                gpu(ActivityKind::kernel, 600, 2, 2'200'000, 2'300'000),
                                gpu(ActivityKind::kernel, 600, 1, 2'000'000, 2'100'000)};
  JoinResult r = join_activities(calls, acts);
  expect_time(r, 1, 2'000'000, 2'100'000, 1, false);
  expect_time(r, 2, 2'200'000, 2'300'000, 2, false);
}

TEST(GpuTimeJoin, AStreamThatDisagreesStopsAnOrderJoin) {
  std::vector<HostCall> calls = {call(1, 700, 701, 1'000'000, HostCallKind::launch),
                                 call(2, 700, 701, 1'010'000, HostCallKind::launch)};
  std::vector<Activity> acts = {
      driver(700, 10, 701, 1'002'000, 1'003'000),
      gpu(ActivityKind::kernel, 700, 10, 2'000'000, 2'100'000, 7),  // handle A is stream 7
      gpu(ActivityKind::kernel, 700, 15, 2'200'000, 2'300'000, 9),  // no driver record, stream 9
      driver(700, 20, 701, 1'022'000, 1'023'000)};
  JoinResult r = join_activities(calls, acts);
  EXPECT_NE(r.find(1), nullptr);
  EXPECT_EQ(r.find(2), nullptr);
  EXPECT_EQ(r.counts.activities_ambiguous, 1u);
  EXPECT_EQ(r.counts.rows_without_activity, 1u);
}

TEST(GpuTimeJoin, CallsOfUntracedProcessesAreCountedApart) {
  OneThread s;
  s.calls.push_back(call(99, 999, 999, 1'000'000, HostCallKind::launch));
  JoinResult r = join_activities(s.calls, s.acts);
  expect_one_thread(r);
  EXPECT_EQ(r.counts.rows_without_process, 1u);
  EXPECT_EQ(r.counts.rows_without_activity, 0u);
}

}  // namespace
}  // namespace gpuobs::gpu_time

namespace gpuobs::gpu_time {
namespace {

Activity runtime(uint32_t pid, uint32_t corr, uint32_t tid, uint64_t start, uint64_t end) {
  Activity a = testing::driver(pid, corr, tid, start, end);
  a.kind = ActivityKind::runtime_api;
  return a;
}

}  // namespace

// A PyTorch-style program: kernels launched through the runtime
// (cudaLaunchKernel) carry the runtime call's correlation id; the driver
// call inside it, which gpuobs probes, has another (and no GPU work). The
// runtime record's span holds the probe: each kernel joins its launch by
// correlation, none by order (on the H200, without runtime records: 615 of
// 615 by order).
TEST(GpuTimeJoin, RuntimeLaunchesJoinThroughTheRuntimeRecordThatHoldsTheProbe) {
  std::vector<HostCall> calls;
  std::vector<Activity> acts;
  for (uint32_t k = 0; k < 4; ++k) {
    uint64_t t = 1'000'000 + k * 10'000;
    calls.push_back(call(k + 1, kPid, kTid, t + 3'000, HostCallKind::launch));  // the probe, inside the runtime call
    acts.push_back(runtime(kPid, 100 + 2 * k, kTid, t, t + 8'000));             // cudaLaunchKernel
    acts.push_back(testing::driver(kPid, 101 + 2 * k, kTid, t + 3'500, t + 7'000));  // cuLaunchKernel inside it
    acts.push_back(
        testing::gpu(ActivityKind::kernel, kPid, 100 + 2 * k, 2'000'000 + k * 100'000, 2'050'000 + k * 100'000));
  }
  JoinResult r = join_activities(calls, acts);
  ASSERT_EQ(r.rows.size(), 4u);
  for (uint32_t k = 0; k < 4; ++k)
    expect_time(r, k + 1, 2'000'000 + k * 100'000, 2'050'000 + k * 100'000, 100 + 2 * k, false);
  EXPECT_EQ(r.counts.joined_by_correlation, 4u);
  EXPECT_EQ(r.counts.joined_by_order, 0u);
  EXPECT_EQ(r.counts.activities_without_row + r.counts.activities_ambiguous + r.counts.rows_without_activity, 0u);
}

// A runtime record whose span holds no call of its thread and kind: not joined, counted.
TEST(GpuTimeJoin, ARuntimeRecordWithNoCallInsideIsCounted) {
  std::vector<HostCall> calls = {call(1, kPid, kTid, 1'000'000, HostCallKind::launch)};
  std::vector<Activity> acts = {runtime(kPid, 7, kTid, 1'200'000, 1'210'000),
                                testing::gpu(ActivityKind::kernel, kPid, 7, 2'000'000, 2'100'000)};
  JoinResult r = join_activities(calls, acts);
  EXPECT_TRUE(r.rows.empty());
  EXPECT_EQ(r.counts.activities_without_row, 1u);
  EXPECT_EQ(r.counts.rows_without_activity, 1u);
}

}  // namespace gpuobs::gpu_time
