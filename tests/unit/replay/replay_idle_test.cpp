// Idle time (docs/replay.md, "Idle time"): gaps per queue and per process,
// split into host_wait / sync_wait / dependency_wait / other, with estimated
// (window) and measured (gpu_times) busy intervals; and the reports gpu_idle,
// gpu_idle_buckets, launch_gaps and queue_depth over them. Schedules are
// worked out by hand in the comments; times are ns after kT0.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "replay/replay.h"
#include "replay_capture.h"
#include "store/schema.h"

using namespace gpuobs;
using gpuobs::testing::replay_file;
using gpuobs::testing::ReplayCapture;
using json = nlohmann::json;
using Strs = std::vector<std::string>;

namespace {

constexpr int64_t T0 = ReplayCapture::kT0;

std::string rel(int64_t t) { return std::to_string(t - T0); }
std::string queue(std::optional<int64_t> q) { return q ? "q" + std::to_string(*q) : "all"; }

// "q1 100..430 work=2 measured=0 busy=80 idle=250 gaps=1"
Strs spans(const replay::Result& r) {
  Strs out;
  for (const auto& s : r.idle_spans)
    out.push_back(queue(s.queue_id) + " " + rel(s.start_ns) + ".." + rel(s.end_ns) +
                  " work=" + std::to_string(s.work_ops) + " measured=" + std::to_string(s.measured_ops) + " busy=" +
                  std::to_string(s.busy_ns) + " idle=" + std::to_string(s.idle_ns) + " gaps=" + std::to_string(s.gaps));
  return out;
}

// "1 q1 150..400 host=250 sync=0 dep=0 other=0 m0 prev1 next2 t100 before11 after12 | host_wait 150..400"
Strs gaps(const replay::Result& r) {
  Strs out;
  for (const auto& g : r.idle_gaps) {
    std::string s = std::to_string(g.id) + " " + queue(g.queue_id) + " " + rel(g.start_ns) + ".." + rel(g.end_ns) +
                    " host=" + std::to_string(g.host_wait_ns) + " sync=" + std::to_string(g.sync_wait_ns) +
                    " dep=" + std::to_string(g.dependency_wait_ns) + " other=" + std::to_string(g.other_ns) + " m" +
                    std::to_string(int{g.measured}) + " prev" + std::to_string(g.prev_op_id) + " next" +
                    std::to_string(g.next_op_id) + " t" + std::to_string(g.tid) + " before" +
                    std::to_string(g.before_stack_id) + " after" + std::to_string(g.after_stack_id) + " |";
    for (const auto& p : g.pieces) s += " " + p.kind + " " + rel(p.start_ns) + ".." + rel(p.end_ns);
    out.push_back(s);
  }
  return out;
}

std::pair<int, std::string> gpuobs_cli(const std::string& args) {
  return gpuobs::testing::run_output(std::string(GPUOBS_BIN) + " " + args);
}

// `gpuobs report NAME FILE --format json [extra]`, parsed (stderr is not in it).
json report(const std::string& name, const std::string& file, const std::string& extra = "") {
  auto [rc, out] = gpuobs::testing::run_output("(" + std::string(GPUOBS_BIN) + " report " + name + " " + file +
                                               " --format json " + extra + " 2>/dev/null)");
  EXPECT_EQ(rc, 0) << out;
  return json::parse(out, nullptr, false);
}

void write_replay(const std::string& file) {
  auto [rc, out] = gpuobs_cli("replay " + file);
  ASSERT_EQ(rc, 0) << out;
}

// Measured GPU intervals (gpu_time_rows, schema 20) for launches: (op source row, start, end) after kT0.
void measure(const std::string& file, const std::vector<std::tuple<int64_t, int64_t, int64_t>>& rows) {
  auto db = Db::open(file, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(db.ok());
  for (auto [row, start, end] : rows)
    ASSERT_TRUE(db->exec("INSERT INTO gpu_time_rows VALUES (0, " + std::to_string(row) + ", 1, NULL, " +
                         std::to_string(start) + ", " + std::to_string(end - start) + ", 0, 7, " + std::to_string(row) +
                         ", 1, 0)")
                    .ok())
        << db->errmsg();
}

// The sleeper: launch, sync, the host sleeps 250 ns, launch, sync.
void sleeper(ReplayCapture& c) {
  c.named_stack(10, "train_step");
  c.named_stack(11, "wait_for_gpu");
  c.named_stack(12, "next_step");
  c.launch(100, 0, 10);                                   // op 1
  c.call(110, "cuStreamSynchronize", {0}, 0, 40, 0, 11);  // [110, 150): proves op 1
  c.launch(400, 0, 12);                                   // op 2
  c.call(410, "cuStreamSynchronize", {0}, 0, 20, 0, 11);  // [410, 430): proves op 2
}

}  // namespace

// Estimated: op 1 busy [100, 150], op 2 [400, 430]. The gap [150, 400) ends
// when op 2 is enqueued and its thread was in no call: all host_wait; before
// it the thread's last call was the sync entered at 110 (stack 11).
TEST(ReplayIdle, HostSleepIsHostWait) {
  ReplayCapture c;
  sleeper(c);
  auto r = replay_file(c.finish(1000));
  EXPECT_EQ(spans(r), (Strs{"q1 100..430 work=2 measured=0 busy=80 idle=250 gaps=1",
                            "all 100..430 work=2 measured=0 busy=80 idle=250 gaps=1"}));
  EXPECT_EQ(
      gaps(r),
      (Strs{"1 q1 150..400 host=250 sync=0 dep=0 other=0 m0 prev1 next2 t100 before11 after12 | host_wait 150..400",
            "2 all 150..400 host=250 sync=0 dep=0 other=0 m0 prev1 next2 t100 before11 after12 | host_wait "
            "150..400"}));
}

// Stream A = queue 1, B = queue 2. B's op 1 [100, 130]; A's op 2 [200, 500];
// B's op 3 [600, 620]. B's gap [130, 600): the thread enqueues op 3 at 600;
// before that it was blocked in A's sync [210, 500) (sync_wait 290) and free
// for [130, 210) and [500, 600) (host_wait 180). The process is idle only in
// [130, 200) and [500, 600), both host_wait.
TEST(ReplayIdle, SyncOnAnotherStreamIsSyncWait) {
  ReplayCapture c;
  c.named_stack(10, "produce");
  c.named_stack(11, "sync_b");
  c.named_stack(12, "consume");
  c.named_stack(13, "sync_a");
  c.named_stack(14, "produce_again");
  c.stream_create(10, 0xA);
  c.stream_create(20, 0xB);
  c.launch(100, 0xB, 10);                                    // op 1
  c.call(120, "cuStreamSynchronize", {0xB}, 0, 10, 0, 11);   // [120, 130): proves op 1
  c.launch(200, 0xA, 12);                                    // op 2
  c.call(210, "cuStreamSynchronize", {0xA}, 0, 290, 0, 13);  // [210, 500): proves op 2
  c.launch(600, 0xB, 14);                                    // op 3
  c.call(610, "cuStreamSynchronize", {0xB}, 0, 10, 0, 11);   // [610, 620): proves op 3
  const std::string& file = c.finish(1000);
  auto r = replay_file(file);
  EXPECT_EQ(spans(r), (Strs{"q1 200..500 work=1 measured=0 busy=300 idle=0 gaps=0",
                            "q2 100..620 work=2 measured=0 busy=50 idle=470 gaps=1",
                            "all 100..620 work=3 measured=0 busy=350 idle=170 gaps=2"}));
  EXPECT_EQ(gaps(r), (Strs{"1 q2 130..600 host=180 sync=290 dep=0 other=0 m0 prev1 next3 t100 before11 after14 |"
                           " host_wait 130..210 sync_wait 210..500 host_wait 500..600",
                           "2 all 130..200 host=70 sync=0 dep=0 other=0 m0 prev1 next2 t100 before11 after12 |"
                           " host_wait 130..200",
                           "3 all 500..600 host=100 sync=0 dep=0 other=0 m0 prev2 next3 t100 before13 after14 |"
                           " host_wait 500..600"}));

  write_replay(file);
  auto rows = report("gpu_idle", file);
  ASSERT_EQ(rows.size(), 3u) << rows.dump();
  EXPECT_EQ(rows[0]["queue"], "all");
  EXPECT_EQ(rows[0]["pid"], 100);
  EXPECT_EQ(rows[0]["process"], "app");
  EXPECT_EQ(rows[0]["span_ns"], 520);
  EXPECT_EQ(rows[0]["busy_ns"], 350);
  EXPECT_EQ(rows[0]["idle_ns"], 170);
  EXPECT_DOUBLE_EQ(rows[0]["idle_pct"].get<double>(), 32.69);
  EXPECT_EQ(rows[0]["gaps"], 2);
  EXPECT_EQ(rows[0]["host_wait_ns"], 170);
  EXPECT_EQ(rows[0]["sync_wait_ns"], 0);
  EXPECT_EQ(rows[0]["measured"], "estimated");
  EXPECT_EQ(rows[0]["top_host_wait_stack"], "sync_a");  // 100 ns after the sync at 210, 70 after the one at 120
  EXPECT_EQ(rows[1]["queue"], "stream#1 0xa");
  EXPECT_EQ(rows[1]["span_ns"], 300);
  EXPECT_EQ(rows[1]["idle_ns"], 0);
  EXPECT_EQ(rows[1]["gaps"], 0);
  EXPECT_TRUE(rows[1]["top_host_wait_stack"].is_null());
  EXPECT_EQ(rows[2]["queue"], "stream#2 0xb");
  EXPECT_EQ(rows[2]["span_ns"], 520);
  EXPECT_EQ(rows[2]["busy_ns"], 50);
  EXPECT_EQ(rows[2]["idle_ns"], 470);
  EXPECT_DOUBLE_EQ(rows[2]["idle_pct"].get<double>(), 90.38);
  EXPECT_EQ(rows[2]["host_wait_ns"], 180);
  EXPECT_EQ(rows[2]["sync_wait_ns"], 290);
  EXPECT_EQ(rows[2]["dependency_wait_ns"], 0);
  EXPECT_EQ(rows[2]["other_ns"], 0);
  EXPECT_EQ(rows[2]["top_host_wait_stack"], "sync_b");
  // --pid of another process: no rows.
  EXPECT_EQ(report("gpu_idle", file, "--pid 7").size(), 0u);
}

// Measured: B's op 1 ran [60, 80], A's op 2 [105, 300], B's op 5 [310, 350].
// B waits on an event recorded after op 2 (op 4: wait_event, dependency 4 -> 3).
// B's gap [80, 310): host_wait [80, 130) until op 5 is enqueued, then
// dependency_wait [130, 310). The process: [80, 105) = host_wait until op 2's
// enqueue at 100, then other (submitted, no dependency) [100, 105); [300, 310)
// = dependency_wait (op 5 was enqueued at 130).
TEST(ReplayIdle, EventWaitIsDependencyWaitWithMeasuredTimes) {
  ReplayCapture c;
  for (int64_t s = 10; s <= 13; ++s) c.named_stack(s, "f" + std::to_string(s));
  c.stream_create(10, 0xA);
  c.stream_create(20, 0xB);
  c.event_create(30, 0xE1);
  c.launch(50, 0xB, 10);   // op 1
  c.launch(100, 0xA, 11);  // op 2
  c.record(110, 0xE1, 0xA);
  c.wait(120, 0xB, 0xE1);
  c.launch(130, 0xB, 12);                             // op 5
  c.call(400, "cuCtxSynchronize", {}, 0, 10, 0, 13);  // [400, 410): proves everything
  const std::string& file = c.finish(1000);
  auto estimated = replay_file(file);
  ASSERT_EQ(estimated.ops.size(), 5u);
  EXPECT_EQ(estimated.ops[3].kind, "wait_event");
  const int64_t row1 = estimated.ops[0].source_id, row2 = estimated.ops[1].source_id, row5 = estimated.ops[4].source_id;
  ASSERT_NO_FATAL_FAILURE(measure(file, {{row1, 60, 80}, {row2, 105, 300}, {row5, 310, 350}}));
  auto r = replay_file(file);
  EXPECT_EQ(spans(r), (Strs{"q1 105..300 work=1 measured=1 busy=195 idle=0 gaps=0",
                            "q2 60..350 work=2 measured=2 busy=60 idle=230 gaps=1",
                            "all 60..350 work=3 measured=3 busy=255 idle=35 gaps=2"}));
  EXPECT_EQ(gaps(r), (Strs{"1 q2 80..310 host=50 sync=0 dep=180 other=0 m1 prev1 next5 t100 before10 after12 |"
                           " host_wait 80..130 dependency_wait 130..310",
                           "2 all 80..105 host=20 sync=0 dep=0 other=5 m1 prev1 next2 t100 before10 after11 |"
                           " host_wait 80..100 other 100..105",
                           "3 all 300..310 host=0 sync=0 dep=10 other=0 m1 prev2 next5 t100 before12 after12 |"
                           " dependency_wait 300..310"}));
  write_replay(file);
  auto rows = report("gpu_idle", file);
  ASSERT_EQ(rows.size(), 3u) << rows.dump();
  EXPECT_EQ(rows[0]["queue"], "all");
  EXPECT_EQ(rows[0]["measured"], "measured");
  EXPECT_EQ(rows[0]["host_wait_ns"], 20);
  EXPECT_EQ(rows[0]["dependency_wait_ns"], 10);
  EXPECT_EQ(rows[0]["other_ns"], 5);
  EXPECT_EQ(rows[2]["queue"], "stream#2 0xb");
  EXPECT_EQ(rows[2]["dependency_wait_ns"], 180);
  EXPECT_EQ(rows[2]["top_host_wait_stack"], "f10");

  // Without op 1's measurement it is busy over its window [50, 410]: B has
  // no gap, and its ops are half measured.
  {
    auto db = Db::open(file, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("DELETE FROM gpu_time_rows WHERE row_id = " + std::to_string(row1)).ok());
  }
  auto mixed = replay_file(file);
  EXPECT_EQ(spans(mixed)[1], "q2 50..410 work=2 measured=1 busy=360 idle=0 gaps=0");
  write_replay(file);
  EXPECT_EQ(report("gpu_idle", file)[2]["measured"], "mixed");
}

// A wait on an event recorded on the same stream is no cross-queue
// dependency: the measured gap [150, 200) after the next launch's enqueue at
// 130 is other (submission latency), not dependency_wait.
TEST(ReplayIdle, WaitOnOwnQueueIsNoDependency) {
  ReplayCapture c;
  c.stream_create(10, 0xA);
  c.event_create(20, 0xE1);
  c.launch(100, 0xA, 1);  // op 1
  c.record(110, 0xE1, 0xA);
  c.wait(120, 0xA, 0xE1);  // dependency 3 -> 2, on its own queue
  c.launch(130, 0xA, 2);   // op 4
  c.call(300, "cuCtxSynchronize", {}, 0, 10);
  const std::string& file = c.finish(1000);
  auto estimated = replay_file(file);
  ASSERT_EQ(estimated.ops.size(), 4u);
  ASSERT_EQ(estimated.deps.size(), 1u);
  ASSERT_NO_FATAL_FAILURE(
      measure(file, {{estimated.ops[0].source_id, 100, 150}, {estimated.ops[3].source_id, 200, 250}}));
  auto r = replay_file(file);
  EXPECT_EQ(gaps(r), (Strs{"1 q1 150..200 host=0 sync=0 dep=0 other=50 m1 prev1 next4 t100 before2 after2 |"
                           " other 150..200",
                           "2 all 150..200 host=0 sync=0 dep=0 other=50 m1 prev1 next4 t100 before2 after2 |"
                           " other 150..200"}));
}

// Seconds: op 1 busy [0.5 s, 0.7 s] (its sync returns at 0.7 s), op 2 [2.2 s,
// 2.5 s]; the gap [0.7 s, 2.2 s) is host_wait. Per second: 0: span 0.5 s, idle
// 0.3 s; 1: all idle; 2: span 0.5 s, idle 0.2 s. --since 1.5 clips.
TEST(ReplayIdle, BucketsAndTimeFilters) {
  constexpr uint64_t ms = 1'000'000;
  ReplayCapture c;
  c.launch(500 * ms, 0, 1);
  c.call(600 * ms, "cuStreamSynchronize", {0}, 0, 100 * ms, 0, 2);
  c.launch(2200 * ms, 0, 3);
  c.call(2300 * ms, "cuStreamSynchronize", {0}, 0, 200 * ms, 0, 2);
  const std::string& file = c.finish(3000 * ms);
  write_replay(file);
  auto b = report("gpu_idle_buckets", file);
  ASSERT_EQ(b.size(), 3u) << b.dump();
  auto row = [](const json& j) {
    return std::to_string(j["t_s"].get<int64_t>()) + " span=" + std::to_string(j["span_ns"].get<int64_t>()) +
           " busy=" + std::to_string(j["busy_ns"].get<int64_t>()) +
           " idle=" + std::to_string(j["idle_ns"].get<int64_t>()) +
           " host=" + std::to_string(j["host_wait_ns"].get<int64_t>()) +
           " sync=" + std::to_string(j["sync_wait_ns"].get<int64_t>());
  };
  EXPECT_EQ(row(b[0]), "0 span=500000000 busy=200000000 idle=300000000 host=300000000 sync=0");
  EXPECT_EQ(row(b[1]), "1 span=1000000000 busy=0 idle=1000000000 host=1000000000 sync=0");
  EXPECT_EQ(row(b[2]), "2 span=500000000 busy=300000000 idle=200000000 host=200000000 sync=0");
  EXPECT_DOUBLE_EQ(b[0]["idle_pct"].get<double>(), 60.0);
  auto since = report("gpu_idle_buckets", file, "--since 1.5");
  ASSERT_EQ(since.size(), 2u) << since.dump();
  EXPECT_EQ(row(since[0]), "1 span=500000000 busy=0 idle=500000000 host=500000000 sync=0");
  EXPECT_EQ(row(since[1]), row(b[2]));
  auto idle = report("gpu_idle", file, "--since 1.5");
  ASSERT_EQ(idle.size(), 2u) << idle.dump();
  EXPECT_EQ(idle[0]["queue"], "all");
  EXPECT_EQ(idle[0]["span_ns"], 1000000000);
  EXPECT_EQ(idle[0]["idle_ns"], 700000000);
  EXPECT_EQ(idle[0]["host_wait_ns"], 700000000);
  EXPECT_DOUBLE_EQ(idle[0]["idle_pct"].get<double>(), 70.0);
  EXPECT_EQ(idle[1]["queue"], "legacy");
  EXPECT_EQ(idle[1]["busy_ns"], 300000000);
}

// Launch enqueues on the legacy stream at 100, 110, 130, 160, 200, 1200:
// intervals 10, 20, 30, 40, 1000 (nearest rank: p50 30, p95 and p99 1000).
// Four launches measured: 5 and 29 ns run below the 30 ns median interval
// (launch-bound), 50 and 30 do not. Stream 0xA: one interval, nothing measured.
TEST(ReplayIdle, LaunchGapsReport) {
  ReplayCapture c;
  c.named_stack(10, "before_long_gap");
  c.stream_create(10, 0xA);
  for (uint64_t t : {100, 110, 130, 160}) c.launch(t, 0, 1);
  c.launch(200, 0, 10);
  c.launch(1200, 0, 1);
  c.launch(300, 0xA);
  c.launch(340, 0xA);
  c.call(1300, "cuCtxSynchronize", {}, 0, 10);
  const std::string& file = c.finish(2000);
  auto r = replay_file(file);
  std::vector<int64_t> legacy_rows;
  for (const auto& o : r.ops)
    if (r.queues[o.queue_id - 1].kind == "legacy") legacy_rows.push_back(o.source_id);
  ASSERT_EQ(legacy_rows.size(), 6u);
  ASSERT_NO_FATAL_FAILURE(measure(file, {{legacy_rows[0], 101, 106},
                                         {legacy_rows[1], 111, 161},
                                         {legacy_rows[2], 170, 199},
                                         {legacy_rows[3], 200, 230}}));
  write_replay(file);
  auto rows = report("launch_gaps", file);
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  EXPECT_EQ(rows[0].dump(), json({{"pid", 100},
                                  {"process", "app"},
                                  {"queue", "legacy"},
                                  {"launches", 6},
                                  {"intervals", 5},
                                  {"gap_p50_ns", 30},
                                  {"gap_p95_ns", 1000},
                                  {"gap_p99_ns", 1000},
                                  {"gap_max_ns", 1000},
                                  {"gap_total_ns", 1100},
                                  {"longest_gap_stack", "before_long_gap"},
                                  {"measured_launches", 4},
                                  {"short_launches", 2},
                                  {"short_pct", 50.0}})
                                .dump());
  EXPECT_EQ(rows[1]["queue"], "stream#1 0xa");
  EXPECT_EQ(rows[1]["launches"], 2);
  EXPECT_EQ(rows[1]["gap_p50_ns"], 40);
  EXPECT_EQ(rows[1]["gap_p99_ns"], 40);
  EXPECT_EQ(rows[1]["gap_total_ns"], 40);
  EXPECT_EQ(rows[1]["longest_gap_stack"], "(no stack)");
  EXPECT_EQ(rows[1]["measured_launches"], 0);
  EXPECT_TRUE(rows[1]["short_launches"].is_null());
  EXPECT_TRUE(rows[1]["short_pct"].is_null());
  // --until 0.00000015 s (150 ns): launches at 100, 110, 130 only.
  auto until = report("launch_gaps", file, "--until 0.00000015");
  ASSERT_EQ(until.size(), 1u) << until.dump();
  EXPECT_EQ(until[0]["launches"], 3);
  EXPECT_EQ(until[0]["gap_max_ns"], 20);
}

// Replay.RecordWaitAcrossCreatedStreams' schedule. Queue 1's depth: 1 over
// [100, 110), 2 [110, 120), 3 [120, 150), 4 [150, 250), 1 [250, 312), then 0:
// 212 ns, mean 582 / 212. Queue 2: 1 [130, 140), 2 [140, 250), 0 [250, 400),
// 1 [400, 1000) (never proven: to the end): 870 ns, 150 of them empty.
TEST(ReplayIdle, QueueDepthReport) {
  ReplayCapture c;
  c.stream_create(10, 0xA);
  c.stream_create(20, 0xB);
  c.event_create(30, 0xE1);
  c.launch(100, 0xA, 1);
  c.launch(110, 0xA);
  c.record(120, 0xE1, 0xA);
  c.launch(130, 0xB);
  c.wait(140, 0xB, 0xE1);
  c.launch(150, 0xA);
  c.call(200, "cuStreamSynchronize", {0xB}, 0, 50);
  c.call(310, "cuStreamQuery", {0xA}, 0, 2);
  c.launch(400, 0xB);
  const std::string& file = c.finish(1000);
  write_replay(file);
  auto rows = report("queue_depth", file);
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  EXPECT_EQ(rows[0].dump(), json({{"pid", 100},
                                  {"process", "app"},
                                  {"queue", "stream#1 0xa"},
                                  {"span_ns", 212},
                                  {"mean_depth", 2.745},
                                  {"p50_depth", 3},
                                  {"p95_depth", 4},
                                  {"max_depth", 4},
                                  {"empty_ns", 0},
                                  {"empty_pct", 0.0}})
                                .dump());
  EXPECT_EQ(rows[1].dump(), json({{"pid", 100},
                                  {"process", "app"},
                                  {"queue", "stream#2 0xb"},
                                  {"span_ns", 870},
                                  {"mean_depth", 0.954},
                                  {"p50_depth", 1},
                                  {"p95_depth", 2},
                                  {"max_depth", 2},
                                  {"empty_ns", 150},
                                  {"empty_pct", 17.24}})
                                .dump());
}

// A replay report over a capture `gpuobs replay` has not written says so on
// stderr (and still exits 0 with no rows); other reports say nothing.
TEST(ReplayIdle, ReportsSayToReplayFirst) {
  ReplayCapture c;
  sleeper(c);
  const std::string& file = c.finish(1000);
  for (const char* name : {"gpu_idle", "gpu_idle_buckets", "launch_gaps", "queue_depth", "replay_queues",
                           "replay_hazards", "replay_blocked"}) {
    auto [rc, out] = gpuobs_cli(std::string("report ") + name + " " + file);
    EXPECT_EQ(rc, 0) << name << ": " << out;
    EXPECT_NE(out.find("has not been replayed"), std::string::npos) << name << ": " << out;
    EXPECT_NE(out.find("hint: run gpuobs replay " + file + " first"), std::string::npos) << name << ": " << out;
  }
  auto [rc, out] = gpuobs_cli("report api_sum " + file);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("replay"), std::string::npos) << out;
  write_replay(file);
  auto [rc2, out2] = gpuobs_cli("report gpu_idle " + file);
  EXPECT_EQ(rc2, 0) << out2;
  EXPECT_EQ(out2.find("gpuobs replay"), std::string::npos) << out2;
}

// A capture of schema 20 (before the idle tables; the same file less
// migration 021): read-only it reads no idle rows; replayed by an older
// gpuobs, the idle reports say to replay again; `gpuobs replay` migrates it
// and writes them.
TEST(ReplayIdle, Schema20CaptureReadsEmptyThenReplays) {
  ReplayCapture c;
  sleeper(c);
  const std::string& file = c.finish(1000);
  write_replay(file);  // as an older gpuobs would have: replay_runs filled
  {
    auto db = Db::open(file, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("DROP TABLE replay_idle_pieces; DROP TABLE replay_idle_gaps; DROP TABLE replay_idle_spans;"
                         " ALTER TABLE stacks DROP COLUMN python_thread; ALTER TABLE capture DROP COLUMN "
                         "python_main_thread;"                                  // 22
                         " DROP TABLE library_maps;"                            // 23
                         " DROP VIEW context_ops; DROP TABLE context_op_rows;"  // 24
                         " DROP VIEW process_names; DROP VIEW stream_names;"    // 25
                         " DROP VIEW gpu_job_ioctls; DROP TABLE gpu_jobs; DROP TABLE dma_fence_signals;"
                         " DROP TABLE drm_engine_samples; DROP TABLE drm_memory_samples;"
                         " DROP TABLE drm_clients;"                                       // 26
                         " DROP TABLE replay_exec_streams; DROP TABLE replay_exec_runs;"  // 27
                         " DELETE FROM schema_migrations WHERE version >= 21; PRAGMA user_version = 20;")
                    .ok())
        << db->errmsg();
  }
  {
    auto db = open_capture_readonly(file);
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(gpuobs::testing::scalar(*db, "SELECT count(*) FROM replay_idle_gaps"), 0);
    auto r = replay::run(*db);  // --no-write reads it as it is
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->idle_gaps.size(), 2u);
  }
  auto [rc, out] = gpuobs_cli("report gpu_idle " + file);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("replayed by an older gpuobs"), std::string::npos) << out;
  EXPECT_EQ(report("gpu_idle", file).size(), 0u);
  EXPECT_EQ(report("queue_depth", file).size(), 1u);  // the schema-8 tables are there
  write_replay(file);
  auto db = Db::open(file, SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(gpuobs::testing::scalar(*db, "PRAGMA user_version"), schema_version());
  EXPECT_EQ(gpuobs::testing::scalar(*db, "SELECT count(*) FROM replay_idle_gaps"), 2);
  auto rows = report("gpu_idle", file);
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  EXPECT_EQ(rows[0]["idle_ns"], 250);
  EXPECT_EQ(rows[0]["top_host_wait_stack"], "wait_for_gpu");
}
