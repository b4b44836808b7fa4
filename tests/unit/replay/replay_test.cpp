// gpuobs replay against synthetic captures written by the real writer, whose
// schedules are worked out by hand in the comments: queues, op windows,
// dependencies, observations, depth and every hazard are asserted exactly.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

#include "replay/replay.h"
#include "replay_capture.h"
#include "store/schema.h"

using namespace gpuobs;
using gpuobs::testing::replay_file;
using gpuobs::testing::ReplayCapture;
using Strs = std::vector<std::string>;

namespace {

constexpr int64_t T0 = ReplayCapture::kT0;

std::string rel(std::optional<int64_t> t) { return t ? std::to_string(*t - T0) : "-"; }

// "id q<queue> s<seq> kind enq/start..end bound_by": one line per op, times relative to kT0.
Strs ops(const replay::Result& r) {
  Strs out;
  for (const auto& o : r.ops)
    out.push_back(std::to_string(o.id) + " q" + std::to_string(o.queue_id) + " s" + std::to_string(o.seq) + " " +
                  o.kind + " " + rel(o.enqueue_ns) + "/" + rel(o.earliest_start_ns) + ".." + rel(o.latest_end_ns) +
                  " b" + (o.bound_by ? std::to_string(*o.bound_by) : "-"));
  return out;
}
Strs deps(const replay::Result& r) {
  Strs out;
  for (const auto& d : r.deps)
    out.push_back(std::to_string(d.op_id) + "->" + std::to_string(d.on_op_id) + " " + d.kind);
  return out;
}
Strs queues(const replay::Result& r) {
  Strs out;
  for (const auto& q : r.queues) {
    char h[32];
    std::snprintf(h, sizeof h, "%#llx", static_cast<unsigned long long>(q.handle));
    out.push_back(std::to_string(q.id) + " " + q.kind + " " + h + (q.tid ? " t" + std::to_string(*q.tid) : "") +
                  (q.non_blocking ? " nb" : "") + " ops=" + std::to_string(q.ops) +
                  " max=" + std::to_string(q.max_depth));
  }
  return out;
}
Strs observations(const replay::Result& r) {
  Strs out;
  for (const auto& o : r.observations)
    out.push_back(std::to_string(o.id) + " " + o.kind + " q" + (o.queue_id ? std::to_string(*o.queue_id) : "-") + " " +
                  rel(o.start_ns) + ".." + rel(o.end_ns) + " done=" + std::to_string(o.ops_completed) +
                  " blocked=" + std::to_string(o.blocked_ns));
  return out;
}
Strs depth(const replay::Result& r, int64_t queue) {
  Strs out;
  for (const auto& d : r.depth)
    if (d.queue_id == queue) out.push_back(rel(d.ts_ns) + ":" + std::to_string(d.depth));
  return out;
}
// "kind op other source_table stack other_stack"
Strs hazards(const replay::Result& r) {
  Strs out;
  auto id = [](std::optional<int64_t> v) { return v ? std::to_string(*v) : std::string("-"); };
  for (const auto& h : r.hazards)
    out.push_back(h.kind + " op" + id(h.op_id) + " other" + id(h.other_op_id) + " " + h.source_table + " s" +
                  std::to_string(h.stack_id) + " s" + std::to_string(h.other_stack_id));
  return out;
}

}  // namespace

// Two created streams: record on A, wait on B. A sync of B proves A's work up
// to the record (through the event) but not A's later launch.
TEST(Replay, RecordWaitAcrossCreatedStreams) {
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
  c.call(200, "cuStreamSynchronize", {0xB}, 0, 50);  // obs 1: B = {A:3, B:2}, returns at 250
  c.call(300, "cuStreamQuery", {0xA}, 600, 1);       // NOT_READY: proves nothing
  c.call(310, "cuStreamQuery", {0xA}, 0, 2);         // obs 2: A = {A:4}, returns at 312
  c.launch(400, 0xB);                                // never proven
  auto r = replay_file(c.finish(1000));
  EXPECT_EQ(queues(r), (Strs{"1 created 0xa ops=4 max=4", "2 created 0xb ops=3 max=2"}));
  EXPECT_EQ(ops(r), (Strs{"1 q1 s1 launch 100/100..250 b1", "2 q1 s2 launch 110/110..250 b1",
                          "3 q1 s3 event_record 120/120..250 b1", "4 q2 s1 launch 130/130..250 b1",
                          "5 q2 s2 wait_event 140/140..250 b1", "6 q1 s4 launch 150/150..312 b2",
                          "7 q2 s3 launch 400/400..- b-"}));
  EXPECT_EQ(deps(r), (Strs{"5->3 event"}));
  EXPECT_EQ(observations(r),
            (Strs{"1 stream_sync q2 200..250 done=5 blocked=50", "2 stream_query q1 310..312 done=1 blocked=0"}));
  EXPECT_EQ(depth(r, 1), (Strs{"100:1", "110:2", "120:3", "150:4", "250:1", "312:0"}));
  EXPECT_EQ(depth(r, 2), (Strs{"130:1", "140:2", "250:0", "400:1"}));
  EXPECT_EQ(r.ops[0].stack_id, 1);
  EXPECT_EQ(r.ops[2].event, 0xE1u);
  EXPECT_EQ(r.end_ns, T0 + 1000);
  EXPECT_TRUE(r.hazards.empty()) << ::testing::PrintToString(hazards(r));
}

// The legacy default stream waits for blocking stream A (and A for it), never
// for non-blocking stream B; a context sync proves everything.
TEST(Replay, LegacyStreamSyncsWithBlockingNotNonBlocking) {
  ReplayCapture c;
  c.stream_create(10, 0xA, 0);
  c.stream_create(20, 0xB, 1);  // CU_STREAM_NON_BLOCKING
  c.launch(100, 0xA);
  c.launch(110, 0xB);
  c.launch(120, 0);                                // legacy (queue 3): waits for A's op 1
  c.launch(130, 0xA);                              // waits for legacy op 3
  c.launch(140, 0xB);                              // no implicit sync
  c.launch(150, 0);                                // waits for A's op 4
  c.call(200, "cuStreamSynchronize", {0}, 0, 10);  // legacy = {A:2, L:2}
  c.call(300, "cuCtxSynchronize", {}, 0, 20);      // everything
  auto r = replay_file(c.finish(1000));
  EXPECT_EQ(queues(r), (Strs{"1 created 0xa ops=2 max=2", "2 created 0xb nb ops=2 max=2", "3 legacy 0 ops=2 max=2"}));
  EXPECT_EQ(deps(r), (Strs{"3->1 legacy", "4->3 legacy", "6->4 legacy"}));
  EXPECT_EQ(ops(r), (Strs{"1 q1 s1 launch 100/100..210 b1", "2 q2 s1 launch 110/110..320 b2",
                          "3 q3 s1 launch 120/120..210 b1", "4 q1 s2 launch 130/130..210 b1",
                          "5 q2 s2 launch 140/140..320 b2", "6 q3 s2 launch 150/150..210 b1"}));
  EXPECT_EQ(observations(r),
            (Strs{"1 stream_sync q3 200..210 done=4 blocked=10", "2 context_sync q- 300..320 done=2 blocked=20"}));
}

// Per-thread default streams (stream 0 in _ptsz calls, or 0x2) are one queue per
// thread, blocking with respect to the legacy stream. A synchronous DtoH copy
// on the legacy stream proves itself and all before it.
TEST(Replay, PerThreadStreamsAndSyncDtoH) {
  ReplayCapture c;
  c.launch(100, 0, 0, 100, true);                                 // thread 100's per-thread stream (queue 1)
  c.launch(110, 0, 0, 101, true);                                 // thread 101's (queue 2)
  c.launch(120, 2, 0, 100, false);                                // CU_STREAM_PER_THREAD: queue 1
  c.launch(130, 0, 0, 101, false);                                // legacy (queue 3): waits for both per-thread streams
  c.call(140, "cuStreamSynchronize_ptsz", {0}, 0, 5, 0, 0, 101);  // queue 2 = {q2:1}
  c.call(150, "cuMemcpyDtoH_v2", {0x9000, 0xD000, 64}, 0, 10, 0, 0, 100);  // legacy op 5
  auto r = replay_file(c.finish(1000));
  EXPECT_EQ(queues(r),
            (Strs{"1 per_thread 0 t100 ops=2 max=2", "2 per_thread 0 t101 ops=1 max=1", "3 legacy 0 ops=2 max=2"}));
  EXPECT_EQ(deps(r), (Strs{"4->3 legacy", "4->2 legacy"}));
  EXPECT_EQ(ops(r),
            (Strs{"1 q1 s1 launch 100/100..160 b2", "2 q2 s1 launch 110/110..145 b1", "3 q1 s2 launch 120/120..160 b2",
                  "4 q3 s1 launch 130/130..160 b2", "5 q3 s2 copy 150/150..160 b2"}));
  EXPECT_EQ(observations(r),
            (Strs{"1 stream_sync q2 140..145 done=1 blocked=5", "2 sync_copy q3 150..160 done=4 blocked=10"}));
  EXPECT_EQ(depth(r, 1), (Strs{"100:1", "120:2", "160:0"}));
  EXPECT_EQ(depth(r, 3), (Strs{"130:1", "150:2", "160:0"}));
  EXPECT_EQ(r.ops[4].direction, "DtoH");
  EXPECT_EQ(r.ops[4].bytes, 64u);
}

// A synchronous HtoD copy proves what came before it, not itself; event
// queries and syncs prove the record; memsets prove nothing.
TEST(Replay, SyncHtoDEventQueryAndSync) {
  ReplayCapture c;
  c.launch(100, 0);
  c.call(110, "cuMemcpyHtoD_v2", {0xD000, 0x9000, 64}, 0, 20);  // obs 1 = {L:1}
  c.event_create(200, 0xE1);
  c.record(210, 0xE1, 0);
  c.launch(220, 0);
  c.call(230, "cuEventQuery", {0xE1}, 600, 1);      // NOT_READY
  c.call(240, "cuEventQuery", {0xE1}, 0, 1);        // obs 2 = {L:3}
  c.call(250, "cuEventSynchronize", {0xE1}, 0, 5);  // obs 3: nothing new
  c.call(260, "cuStreamQuery", {0}, 0, 0);          // obs 4 = {L:4}
  c.call(270, "cuMemsetD8_v2", {0xD000, 7, 256}, 0, 3);
  auto r = replay_file(c.finish(1000));
  EXPECT_EQ(ops(r), (Strs{"1 q1 s1 launch 100/100..130 b1", "2 q1 s2 copy 110/110..241 b2",
                          "3 q1 s3 event_record 210/210..241 b2", "4 q1 s4 launch 220/220..260 b4",
                          "5 q1 s5 memset 270/270..- b-"}));
  EXPECT_EQ(observations(r),
            (Strs{"1 sync_copy q1 110..130 done=1 blocked=20", "2 event_query q- 240..241 done=2 blocked=0",
                  "3 event_sync q- 250..255 done=0 blocked=5", "4 stream_query q1 260..260 done=1 blocked=0"}));
  EXPECT_EQ(depth(r, 1), (Strs{"100:1", "110:2", "130:1", "210:2", "220:3", "241:1", "260:0", "270:1"}));
  EXPECT_TRUE(r.hazards.empty()) << ::testing::PrintToString(hazards(r));
}

// A synchronous copy the return probe missed (NULL result and duration) is
// still enqueued but proves nothing: its entry is not its completion.
TEST(Replay, SyncCopyWithoutReturnProvesNothing) {
  ReplayCapture c;
  c.launch(100, 0);                                            // op 1
  c.entry_only(110, "cuMemcpyDtoH_v2", {0x9000, 0xD000, 64});  // op 2: no observation
  c.entry_only(120, "cuMemcpyHtoD_v2", {0xD000, 0x9000, 64});  // op 3: no observation
  c.call(130, "cuMemcpyDtoH_v2", {0x9000, 0xD000, 64}, 1, 5);  // failed: not enqueued
  c.launch(140, 0);                                            // op 4
  auto r = replay_file(c.finish(1000));
  EXPECT_EQ(ops(r), (Strs{"1 q1 s1 launch 100/100..- b-", "2 q1 s2 copy 110/110..- b-", "3 q1 s3 copy 120/120..- b-",
                          "4 q1 s4 launch 140/140..- b-"}));
  EXPECT_TRUE(r.observations.empty()) << ::testing::PrintToString(observations(r));
}

// A synchronous HtoD on the legacy stream proves only what was on the legacy
// stream before it (CUDA: a sync of the copy's stream, then return once the
// source is staged): not blocking stream B's launch that the copy, once
// enqueued, waits for.
TEST(Replay, SyncHtoDProvesOnlyItsOwnQueue) {
  ReplayCapture c;
  c.stream_create(10, 0xB);
  c.launch(100, 0xB);                                           // op 1 on B
  c.call(200, "cuMemcpyHtoD_v2", {0xD000, 0x9000, 64}, 0, 10);  // op 2 on legacy, returns at 210
  auto r = replay_file(c.finish(1000));
  EXPECT_EQ(deps(r), (Strs{"2->1 legacy"}));
  EXPECT_EQ(ops(r), (Strs{"1 q1 s1 launch 100/100..- b-", "2 q2 s1 copy 200/200..- b-"}));
  EXPECT_EQ(observations(r), (Strs{"1 sync_copy q2 200..210 done=0 blocked=10"}));
}

// Hazard 1: waiting on (or synchronizing with) an event never recorded.
TEST(ReplayHazards, WaitUnrecordedEvent) {
  for (bool fixed : {false, true}) {
    ReplayCapture c;
    c.stream_create(10, 0xA);
    c.stream_create(20, 0xB);
    c.event_create(30, 0xE1);
    c.launch(100, 0xB);                   // op 1
    if (fixed) c.record(110, 0xE1, 0xB);  // op 2
    c.call(120, "cuStreamWaitEvent", {0xA, 0xE1, 0}, 0, 1, 0, 3);
    c.call(130, "cuEventSynchronize", {0xE1}, 0, 4, 0, 4);
    auto r = replay_file(c.finish(1000));
    if (fixed) {
      EXPECT_TRUE(r.hazards.empty()) << ::testing::PrintToString(hazards(r));
      EXPECT_EQ(deps(r), (Strs{"3->2 event"}));
    } else {
      EXPECT_EQ(hazards(r), (Strs{"wait_unrecorded_event op2 other- stream_ops s3 s0",
                                  "wait_unrecorded_event op- other- syncs s4 s0"}));
      EXPECT_NE(r.hazards[0].detail.find("0xe1"), std::string::npos) << r.hazards[0].detail;
      EXPECT_TRUE(deps(r).empty());
      EXPECT_EQ(observations(r), (Strs{"1 event_sync q- 130..134 done=0 blocked=4"}));
    }
  }
}

// Hazard 1 needs the event's creation: an event the capture never saw created
// (the process was attached mid-run) may have been recorded before it, so a
// wait, query or sync on it is neither a hazard nor a dependency nor a proof.
TEST(ReplayHazards, EventCreatedBeforeAttachIsNoHazard) {
  ReplayCapture c;
  c.stream_create(10, 0xA);
  c.launch(100, 0xA);                                      // op 1
  c.call(110, "cuStreamWaitEvent", {0xA, 0xE9, 0}, 0, 1);  // op 2: no dependency
  c.call(120, "cuEventQuery", {0xE9}, 0, 1);               // obs 1: proves nothing
  c.call(130, "cuEventSynchronize", {0xE9}, 0, 4);         // obs 2: proves nothing
  c.event_create(140, 0xE1);
  c.call(150, "cuEventSynchronize", {0xE1}, 0, 2, 0, 4);  // created, never recorded: the hazard
  auto r = replay_file(c.finish(1000));
  EXPECT_EQ(hazards(r), (Strs{"wait_unrecorded_event op- other- syncs s4 s0"}));
  EXPECT_TRUE(deps(r).empty()) << ::testing::PrintToString(deps(r));
  EXPECT_EQ(ops(r), (Strs{"1 q1 s1 launch 100/100..- b-", "2 q1 s2 wait_event 110/110..- b-"}));
  EXPECT_EQ(observations(r),
            (Strs{"1 event_query q- 120..121 done=0 blocked=0", "2 event_sync q- 130..134 done=0 blocked=4",
                  "3 event_sync q- 150..152 done=0 blocked=2"}));
}

// Stream capture fork/join: a record on the capturing stream A is a graph node;
// stream B waiting on it joins the capture (its launch and record are graph
// nodes too) until A's capture_end. Nothing of it reaches a queue: no hazard,
// no dependency, no op but the graph launch and B's launch after the capture.
TEST(Replay, CaptureForkJoinEnqueuesNothing) {
  ReplayCapture c;
  c.stream_create(10, 0xA);
  c.stream_create(20, 0xB);
  c.event_create(30, 0xE1);
  c.event_create(40, 0xE2);
  c.call(100, "cuStreamBeginCapture_v2", {0xA, 0}, 0, 1);
  c.launch(110, 0xA);
  c.record(120, 0xE1, 0xA);  // fork
  c.wait(130, 0xB, 0xE1);
  c.launch(140, 0xB);
  c.record(150, 0xE2, 0xB);  // join
  c.wait(160, 0xA, 0xE2);
  c.call(170, "cuStreamEndCapture", {0xA, 0x7010}, 0, 1, 0x6000);
  c.call(180, "cuGraphLaunch", {0x6100, 0xA}, 0, 1);  // op 1 on A
  c.launch(190, 0xB);                                 // op 2: B is a real queue again
  c.call(200, "cuStreamSynchronize", {0xB}, 0, 5);    // proves op 2 only
  auto r = replay_file(c.finish(1000));
  EXPECT_TRUE(r.hazards.empty()) << ::testing::PrintToString(hazards(r));
  EXPECT_TRUE(deps(r).empty()) << ::testing::PrintToString(deps(r));
  EXPECT_EQ(ops(r), (Strs{"1 q1 s1 graph_launch 180/180..- b-", "2 q2 s1 launch 190/190..205 b1"}));
}

// Hazard 2: work enqueued on a destroyed stream; re-creating the handle makes a new queue.
TEST(ReplayHazards, DestroyedStream) {
  for (bool fixed : {false, true}) {
    ReplayCapture c;
    c.stream_create(10, 0xA);
    c.launch(100, 0xA);
    c.call(110, "cuStreamDestroy_v2", {0xA}, 0, 1);
    if (fixed) c.stream_create(120, 0xA);
    c.launch(130, 0xA, 5);
    auto r = replay_file(c.finish(1000));
    if (fixed) {
      EXPECT_TRUE(r.hazards.empty()) << ::testing::PrintToString(hazards(r));
      EXPECT_EQ(queues(r), (Strs{"1 created 0xa ops=1 max=1", "2 created 0xa ops=1 max=1"}));
      EXPECT_EQ(r.queues[0].destroyed_ns, T0 + 110);
      EXPECT_EQ(r.queues[1].created_ns, T0 + 120);
    } else {
      EXPECT_EQ(hazards(r), (Strs{"destroyed_stream op2 other- kernel_launches s5 s0"}));
      EXPECT_EQ(r.hazards[0].ts_ns, T0 + 130);
      EXPECT_NE(r.hazards[0].detail.find("stream#1 (0xa)"), std::string::npos) << r.hazards[0].detail;
    }
  }
}

// Hazard 3: freeing memory an unfinished async copy uses. Fixed: sync the stream first.
TEST(ReplayHazards, FreeWhileQueued) {
  for (bool fixed : {false, true}) {
    ReplayCapture c;
    c.call(10, "cuMemAllocHost_v2", {0x7000, 4096}, 0, 1, 0x9000);  // pinned host
    c.call(20, "cuMemAlloc_v2", {0x7000, 1024}, 0, 1, 0xD000);
    c.stream_create(30, 0xA);
    c.call(100, "cuMemcpyHtoDAsync_v2", {0xD100, 0x9000, 512, 0xA}, 0, 1, 0, 6);  // op 1
    if (fixed) c.call(110, "cuStreamSynchronize", {0xA}, 0, 10);
    c.call(130, "cuMemFree_v2", {0xD000}, 0, 1, 0, 7);
    auto r = replay_file(c.finish(1000));
    if (fixed) {
      EXPECT_TRUE(r.hazards.empty()) << ::testing::PrintToString(hazards(r));
    } else {
      EXPECT_EQ(hazards(r), (Strs{"free_while_queued op- other1 memory_ops s7 s6"}));
      EXPECT_NE(r.hazards[0].detail.find("0xd000 (1024 bytes)"), std::string::npos) << r.hazards[0].detail;
      EXPECT_NE(r.hazards[0].detail.find("1 of 1"), std::string::npos) << r.hazards[0].detail;
    }
  }
}

// Hazard 3 with many pending accesses (pruned in batches): 200 memsets on A,
// a sync of A after the first 100, then a synchronous free: exactly the last
// 100 are not known complete (10 reported, the detail gives the total).
TEST(ReplayHazards, FreeWhileQueuedManyPending) {
  ReplayCapture c;
  c.call(10, "cuMemAlloc_v2", {0x7000, 1024}, 0, 1, 0xD000);
  c.stream_create(20, 0xA);
  for (uint64_t i = 0; i < 200; ++i) {
    c.call(100 + 10 * i, "cuMemsetD8Async", {0xD000, 1, 64, 0xA}, 0, 1, 0, 2);  // op i + 1
    if (i == 99) c.call(1095, "cuStreamSynchronize", {0xA}, 0, 2);
  }
  c.call(5000, "cuMemFree_v2", {0xD000}, 0, 1, 0, 7);
  auto r = replay_file(c.finish(6000));
  ASSERT_EQ(r.hazards.size(), 10u) << ::testing::PrintToString(hazards(r));
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(r.hazards[i].kind, "free_while_queued");
    EXPECT_EQ(r.hazards[i].other_op_id, static_cast<int64_t>(101 + i));
    EXPECT_NE(r.hazards[i].detail.find(std::to_string(i + 1) + " of 100 such"), std::string::npos)
        << r.hazards[i].detail;
  }
  EXPECT_NE(r.hazards[0].detail.find("relies on the driver's implicit synchronization"), std::string::npos)
      << r.hazards[0].detail;
}

// Hazard 3, stream-ordered free: on the copy's own stream it is ordered; on
// another stream with no event between them it is not.
TEST(ReplayHazards, FreeAsyncOnAnotherStream) {
  for (bool fixed : {false, true}) {
    ReplayCapture c;
    c.call(10, "cuMemAllocHost_v2", {0x7000, 4096}, 0, 1, 0x9000);
    c.call(20, "cuMemAlloc_v2", {0x7000, 1024}, 0, 1, 0xD000);
    c.stream_create(30, 0xA);
    c.stream_create(40, 0xB);
    c.call(100, "cuMemcpyHtoDAsync_v2", {0xD000, 0x9000, 512, 0xA}, 0, 1, 0, 6);   // op 1
    c.call(130, "cuMemFreeAsync", {0xD000, fixed ? 0xAull : 0xBull}, 0, 1, 0, 7);  // op 2
    auto r = replay_file(c.finish(1000));
    if (fixed) {
      EXPECT_TRUE(r.hazards.empty()) << ::testing::PrintToString(hazards(r));
      EXPECT_EQ(ops(r)[1], "2 q1 s2 free_async 130/130..- b-");
    } else {
      EXPECT_EQ(hazards(r), (Strs{"free_while_queued op2 other1 memory_ops s7 s6"}));
    }
  }
}

// Hazard 4: an async copy through pageable host memory.
TEST(ReplayHazards, PageableAsyncCopy) {
  for (bool fixed : {false, true}) {
    ReplayCapture c;
    c.call(10, "cuMemHostAlloc", {0x7000, 4096, 0}, 0, 1, 0x9000);
    c.call(20, "cuMemAlloc_v2", {0x7000, 1024}, 0, 1, 0xD000);
    c.stream_create(30, 0xA);
    uint64_t host = fixed ? 0x9800 : 0x5000;
    c.call(100, "cuMemcpyHtoDAsync_v2", {0xD000, host, 512, 0xA}, 0, 1, 0, 2);
    c.call(110, "cuMemcpyDtoHAsync_v2", {host, 0xD000, 512, 0xA}, 0, 1, 0, 3);
    auto r = replay_file(c.finish(1000));
    if (fixed) {
      EXPECT_TRUE(r.hazards.empty()) << ::testing::PrintToString(hazards(r));
    } else {
      EXPECT_EQ(hazards(r),
                (Strs{"pageable_async_copy op1 other- copies s2 s0", "pageable_async_copy op2 other- copies s3 s0"}));
      EXPECT_NE(r.hazards[0].detail.find("from host memory 0x5000"), std::string::npos) << r.hazards[0].detail;
    }
  }
}

// Hazard 5: 8 launches each followed by a sync. Fixed: one sync after the 8.
TEST(ReplayHazards, SyncAfterEveryLaunch) {
  for (int variant : {0, 1, 2}) {  // 0: the bug; 1: one sync at the end; 2: only 7 pairs
    ReplayCapture c;
    int n = variant == 2 ? 7 : 8;
    for (int i = 0; i < n; ++i) {
      c.launch(100 + 20 * i, 0, 8);
      if (variant != 1) c.call(110 + 20 * i, "cuStreamSynchronize", {0}, 0, 5, 0, 9);
    }
    if (variant == 1) c.call(300, "cuStreamSynchronize", {0}, 0, 5, 0, 9);
    c.launch(400, 0, 8);  // not followed by a sync: ends the run
    auto r = replay_file(c.finish(1000));
    if (variant == 0) {
      EXPECT_EQ(hazards(r), (Strs{"sync_after_every_launch op1 other8 syncs s9 s8"}));
      EXPECT_EQ(r.hazards[0].ts_ns, T0 + 100);
      EXPECT_NE(r.hazards[0].detail.find("each of 8 consecutive launches"), std::string::npos) << r.hazards[0].detail;
    } else {
      EXPECT_TRUE(r.hazards.empty()) << ::testing::PrintToString(hazards(r));
    }
  }
}

// Hazard 6: stream B reads what stream A writes with nothing ordering them.
// Fixed: an event recorded on A after the write, waited on by B.
TEST(ReplayHazards, UnorderedCrossStream) {
  for (bool fixed : {false, true}) {
    ReplayCapture c;
    c.call(10, "cuMemAlloc_v2", {0x7000, 1 << 20}, 0, 1, 0xD000);
    c.stream_create(20, 0xA);
    c.stream_create(30, 0xB);
    c.event_create(40, 0xE1);
    c.call(100, "cuMemsetD8Async", {0xD000, 0, 256, 0xA}, 0, 1, 0, 2);  // op 1: writes [0xd000, 0xd100)
    if (fixed) {
      c.record(110, 0xE1, 0xA);
      c.wait(120, 0xB, 0xE1);
    }
    c.call(130, "cuMemcpyDtoDAsync_v2", {0xE000, 0xD080, 256, 0xB}, 0, 1, 0, 3);  // reads [0xd080, 0xd180)
    c.call(140, "cuMemsetD8Async", {0xF000, 0, 16, 0xA}, 0, 1, 0, 4);             // disjoint: no hazard
    auto r = replay_file(c.finish(1000));
    if (fixed) {
      EXPECT_TRUE(r.hazards.empty()) << ::testing::PrintToString(hazards(r));
    } else {
      EXPECT_EQ(hazards(r), (Strs{"unordered_cross_stream op2 other1 copies s3 s2"}));
      EXPECT_NE(r.hazards[0].detail.find("reads [0xd080, 0xd100)"), std::string::npos) << r.hazards[0].detail;
    }
  }
}

namespace {
// Every replay table as text, rows in key order.
std::string dump(Db& db) {
  std::string out;
  for (const char* q :
       {"SELECT * FROM replay_runs", "SELECT * FROM replay_queues ORDER BY id", "SELECT * FROM replay_ops ORDER BY id",
        "SELECT * FROM replay_deps ORDER BY op_id, on_op_id, kind", "SELECT * FROM replay_observations ORDER BY id",
        "SELECT * FROM replay_depth ORDER BY queue_id, ts_ns", "SELECT * FROM replay_hazards ORDER BY id",
        "SELECT * FROM replay_idle_spans ORDER BY process_id, queue_id", "SELECT * FROM replay_idle_gaps ORDER BY id",
        "SELECT * FROM replay_idle_pieces ORDER BY gap_id, start_ns"}) {
    Stmt st(db.get(), q);
    while (st.step() == SQLITE_ROW) {
      for (int i = 0; i < sqlite3_column_count(st.get()); ++i) {
        auto* t = sqlite3_column_text(st.get(), i);
        out += t ? reinterpret_cast<const char*>(t) : "NULL";
        out += '|';
      }
      out += '\n';
    }
  }
  return out;
}
}  // namespace

// Replaying twice gives the same result; writing twice leaves identical tables.
TEST(Replay, DeterministicTables) {
  ReplayCapture c;
  c.call(10, "cuMemAlloc_v2", {0x7000, 4096}, 0, 1, 0xD000);
  c.stream_create(20, 0xA);
  c.stream_create(30, 0xB, 1);
  c.event_create(40, 0xE1);
  for (int i = 0; i < 20; ++i) {
    c.launch(100 + 50 * i, i % 3 == 0 ? 0 : (i % 3 == 1 ? 0xA : 0xB), 1 + i % 4, 100 + i % 2);
    if (i % 5 == 0) c.record(110 + 50 * i, 0xE1, 0xA);
    if (i % 5 == 1) c.wait(120 + 50 * i, 0xB, 0xE1);
    if (i % 4 == 0) c.call(130 + 50 * i, "cuMemsetD8Async", {0xD000, 1, 64, i % 2 ? 0xAull : 0xBull}, 0, 1);
    if (i % 7 == 0) c.call(140 + 50 * i, "cuStreamSynchronize", {0xA}, 0, 5);
  }
  c.call(2000, "cuMemFree_v2", {0xD000}, 0, 1);
  const std::string& file = c.finish(3000);
  auto db = Db::open(file, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(db.ok());
  auto a = replay::run(*db), b = replay::run(*db);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(ops(*a), ops(*b));
  EXPECT_EQ(hazards(*a), hazards(*b));
  EXPECT_FALSE(a->hazards.empty());  // the memsets on A and B race, and the free races them
  ASSERT_TRUE(replay::write(*db, *a).ok());
  std::string first = dump(*db);
  ASSERT_TRUE(replay::write(*db, *b).ok());
  EXPECT_EQ(dump(*db), first);
  EXPECT_EQ(gpuobs::testing::scalar(*db, "SELECT count(*) FROM replay_ops"), static_cast<int64_t>(a->ops.size()));
  EXPECT_EQ(gpuobs::testing::scalar(*db, "SELECT count(*) FROM replay_hazards"),
            static_cast<int64_t>(a->hazards.size()));
  // Idle time too: the same gaps, written the same.
  EXPECT_FALSE(a->idle_gaps.empty());
  EXPECT_EQ(a->idle_gaps.size(), b->idle_gaps.size());
  EXPECT_EQ(gpuobs::testing::scalar(*db, "SELECT count(*) FROM replay_idle_gaps"),
            static_cast<int64_t>(a->idle_gaps.size()));
  EXPECT_EQ(gpuobs::testing::scalar(*db, "SELECT count(*) FROM replay_idle_spans"),
            static_cast<int64_t>(a->idle_spans.size()));
  EXPECT_GT(gpuobs::testing::scalar(*db, "SELECT count(*) FROM replay_idle_pieces"), 0);
}

// Every hazard stores its call's API, also one with no op (a synchronous free,
// an event sync): the replay_hazards report prints it, not the table name.
TEST(Replay, HazardRowsCarryTheApi) {
  ReplayCapture c;
  c.call(10, "cuMemAlloc_v2", {0x7000, 1024}, 0, 1, 0xD000);
  c.stream_create(20, 0xA);
  c.event_create(30, 0xE1);
  c.call(100, "cuMemsetD8Async", {0xD000, 1, 64, 0xA}, 0, 1);  // op 1
  c.call(110, "cuEventSynchronize", {0xE1}, 0, 2);             // never recorded: no op
  c.call(120, "cuMemFree_v2", {0xD000}, 0, 1);                 // op 1 queued: no op
  c.call(130, "cuStreamWaitEvent", {0xA, 0xE1, 0}, 0, 1);      // op 2
  const std::string& file = c.finish(1000);
  auto db = Db::open(file, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(db.ok());
  auto r = replay::run(*db);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(replay::write(*db, *r).ok());
  Strs rows;
  Stmt st((*db).get(), "SELECT kind, coalesce(op_id, '-'), api FROM replay_hazards ORDER BY id");
  while (st.step() == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < 3; ++i)
      row += (i ? " " : "") + std::string(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), i)));
    rows.push_back(row);
  }
  EXPECT_EQ(rows, (Strs{"wait_unrecorded_event - cuEventSynchronize", "free_while_queued - cuMemFree_v2",
                        "wait_unrecorded_event 2 cuStreamWaitEvent"}));
}

// Destroyed streams leave the legacy stream's implicit sync and a context sync
// once the host knows their work complete, not before: a destroyed stream with
// a pending launch still orders the next legacy op and is proven by the
// context sync; 300 synced-and-destroyed streams add nothing.
TEST(Replay, DestroyedStreamsRetireOnlyWhenComplete) {
  ReplayCapture c;
  for (uint64_t i = 0; i < 300; ++i) {
    uint64_t t = 100 + 10 * i, h = 0x10000 + i;
    c.stream_create(t, h);
    c.launch(t + 1, h);                               // op i + 1
    c.call(t + 2, "cuStreamSynchronize", {h}, 0, 1);  // obs i + 1
    c.call(t + 4, "cuStreamDestroy_v2", {h}, 0, 1);
  }
  c.stream_create(5000, 0xB);
  c.launch(5010, 0xB);  // op 301: pending at the destroy
  c.call(5020, "cuStreamDestroy_v2", {0xB}, 0, 1);
  c.launch(5030, 0);                            // op 302 on legacy: waits for op 301 only
  c.call(5040, "cuCtxSynchronize", {}, 0, 10);  // obs 301: proves ops 301 and 302
  auto r = replay_file(c.finish(9000));
  EXPECT_EQ(deps(r), (Strs{"302->301 legacy"}));
  ASSERT_EQ(r.ops.size(), 302u);
  EXPECT_EQ(r.ops[0].latest_end_ns, T0 + 103);
  EXPECT_EQ(r.ops[299].latest_end_ns, T0 + 100 + 2990 + 3);
  EXPECT_EQ(r.ops[300].latest_end_ns, T0 + 5050);
  EXPECT_EQ(r.ops[301].latest_end_ns, T0 + 5050);
  ASSERT_EQ(r.observations.size(), 301u);
  EXPECT_EQ(r.observations[300].kind, "context_sync");
  EXPECT_EQ(r.observations[300].ops_completed, 2);
  // Launch, sync, launch, sync...: the 300 rounds are one serialization run.
  EXPECT_EQ(hazards(r), (Strs{"sync_after_every_launch op1 other300 syncs s0 s0"}));
}
