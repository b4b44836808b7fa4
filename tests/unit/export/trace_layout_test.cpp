// The trace layout the Perfetto, Chrome and HTML exports share
// (export/trace_layout.h), built from hand-made replay results: how stream
// windows are packed into lanes, and what is drawn for operations never
// proven complete.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "export/perfetto_writer.h"
#include "export/timeline_source.h"
#include "export/trace_layout.h"
#include "perfetto_decode.h"
#include "replay/replay.h"

using namespace gpuobs;

namespace {

// A stream never synchronized: its 100 launches are one marker on one lane,
// not 32 lanes of windows drawn to the capture's end (issue 20).
TEST(ExportLayout, OperationsNeverProvenCompleteAreOneMarkerPerStream) {
  exporter::Timeline t;
  t.processes = {{1, 42, "p"}};
  t.start_ns = 0, t.end_ns = 1000000;
  replay::Result r;
  r.end_ns = 1000000;
  r.queues = {{1, 1, 42, "created", 0x10, {}, false, {}, {}, 100, 100}};
  for (int i = 0; i < 100; ++i) {
    replay::Op o;
    o.id = i + 1, o.queue_id = 1, o.seq = i + 1, o.kind = i % 4 ? "launch" : "copy", o.name = "k", o.api = "a";
    o.enqueue_ns = o.earliest_start_ns = 1000 + i;
    r.ops.push_back(o);
  }
  r.deps = {{50, 10, "event"}};  // both inside the marker: no flow from it to itself
  exporter::TraceLayout L = exporter::build_layout(std::move(t), r);
  size_t lanes = 0;
  for (auto& tr : L.tracks) lanes += tr.kind == exporter::TrackKind::lane;
  EXPECT_EQ(lanes, 1u);
  ASSERT_EQ(L.slices.size(), 1u);
  const exporter::Slice& m = L.slices[0];
  EXPECT_EQ(L.strings[m.name], "100 operations never proven complete");
  EXPECT_EQ(m.start_ns, 1000);
  EXPECT_EQ(m.end_ns, 1000000);
  std::map<std::string, std::string> args;
  for (auto& a : m.args) args[a.key] = a.is_string ? L.strings[static_cast<size_t>(a.value)] : std::to_string(a.value);
  EXPECT_EQ(args["operations"], "100");
  EXPECT_EQ(args["kinds"], "copy 25, launch 75");
  EXPECT_EQ(args["op_ids"].substr(0, 9), "1, 2, 3, ");
  EXPECT_NE(args["op_ids"].find("... (80 more)"), std::string::npos) << args["op_ids"];
  EXPECT_TRUE(m.flows_out.empty());
}

// Many streams whose lanes are made while the track list grows: every lane
// keeps its stream's name, and windows that overlap never share a lane.
TEST(ExportLayout, LanesOfManyStreams) {
  exporter::Timeline t;
  t.processes = {{1, 100, "p"}};
  replay::Result r;
  r.end_ns = 1000;
  for (int64_t q = 1; q <= 64; ++q) {
    r.queues.push_back({q, 1, 100, "created", uint64_t(0x1000 + q), {}, false, {}, {}, 3, 3});
    for (int64_t k = 0; k < 3; ++k) {
      replay::Op o;
      o.id = int64_t(r.ops.size()) + 1, o.queue_id = q, o.seq = k + 1, o.kind = "launch", o.name = "k";
      o.api = "cuLaunchKernel", o.source_table = "kernel_launches", o.source_id = o.id;
      o.earliest_start_ns = 10 * k, o.latest_end_ns = 100 + 10 * k;  // all three overlap
      r.ops.push_back(o);
    }
  }
  exporter::TraceLayout L = exporter::build_layout(std::move(t), r);
  size_t lanes = 0;
  std::map<uint64_t, int> slices_per_lane;
  for (const exporter::Track& tr : L.tracks) {
    if (tr.kind != exporter::TrackKind::lane) continue;
    ++lanes;
    EXPECT_EQ(tr.name, L.tracks[tr.parent - 1].name);
    EXPECT_EQ(tr.name.rfind("Stream 0x10", 0), 0u) << tr.name;
  }
  EXPECT_EQ(lanes, 64u * 3);
  for (const exporter::Slice& s : L.slices) ++slices_per_lane[s.track];
  EXPECT_EQ(slices_per_lane.size(), 64u * 3);
  for (auto& [lane, n] : slices_per_lane) EXPECT_EQ(n, 1) << lane;
}

}  // namespace

namespace {

// NCCL calls: each on its thread and again on its rank's track under its
// communicator (one per hash across processes; one per process when the hash
// is unknown), ranks in rank order, a second lane only for overlapping calls
// of one rank, and the collective chained across ranks in arrival order.
TEST(ExportLayout, CommunicatorTracksHoldEachRanksCallsAndChainCollectives) {
  exporter::Timeline t;
  t.processes = {{1, 101, "r0"}, {2, 102, "r1"}, {3, 103, "solo"}};
  t.start_ns = 0, t.end_ns = 10000;
  uint32_t op = static_cast<uint32_t>(t.strings.size());
  t.strings.push_back("all_reduce");
  uint32_t api = static_cast<uint32_t>(t.strings.size());
  t.strings.push_back("ncclAllReduce");
  auto call = [&](int64_t process, uint32_t tid, int64_t ts, int64_t dur, exporter::NcclCallInfo n) {
    exporter::HostCall c;
    c.ts_ns = ts, c.dur_ns = dur, c.process_id = process, c.tid = tid, c.table = exporter::kNcclTable;
    c.row_id = static_cast<int64_t>(t.calls.size()) + 1, c.name = api;
    n.op = op;
    t.nccl.push_back(n);
    c.nccl = static_cast<uint32_t>(t.nccl.size());
    t.calls.push_back(c);
  };
  const uint64_t hash = 0xabcdef;
  // seq 1: rank 1 first, rank 0 300 ns later; seq 2: rank 0 first. Rank 0
  // has two threads whose calls overlap at seq 2.
  call(2, 20, 100, 500, {hash, 7, 1, 1, 2, 4096, 0});
  call(1, 10, 400, 300, {hash, 5, 1, 0, 2, 4096, 0});
  call(1, 10, 1000, 300, {hash, 5, 2, 0, 2, 4096, 0});
  call(1, 11, 1100, 100, {hash, 5, 3, 0, 2, 4096, 0});
  call(2, 20, 1200, 100, {hash, 7, 2, 1, 2, 4096, 0});
  call(2, 20, 1400, 100, {hash, 7, 3, 1, 2, 4096, 0});
  // A process's own communicator, rank unknown.
  call(3, 30, 2000, 100, {0, 9, 1, -1, 0, {}, 0});
  exporter::TraceLayout L = exporter::build_layout(std::move(t), replay::Result{});

  std::map<uint64_t, const exporter::Track*> comms;
  std::vector<const exporter::Track*> ranks;
  for (auto& tr : L.tracks) {
    if (tr.kind == exporter::TrackKind::communicator) comms[tr.uuid] = &tr;
    if (tr.kind == exporter::TrackKind::rank) ranks.push_back(&tr);
  }
  ASSERT_EQ(comms.size(), 2u);
  const exporter::Track* shared = comms.begin()->second;
  EXPECT_EQ(shared->name, "NCCL comm 0000000000abcdef (2 ranks)");
  EXPECT_GE(shared->pid, exporter::kCommPidBase);
  EXPECT_EQ(std::next(comms.begin())->second->name, "NCCL comm local #9");
  // rank 1, rank 0, rank 0's second lane, the solo process.
  ASSERT_EQ(ranks.size(), 4u);
  EXPECT_EQ(ranks[0]->name, "rank 1 · pid 102 r1");
  EXPECT_EQ(ranks[0]->tid, 2u);
  EXPECT_EQ(ranks[0]->order, 1);
  EXPECT_EQ(ranks[1]->name, "rank 0 · pid 101 r0");
  EXPECT_EQ(ranks[1]->tid, 1u);
  EXPECT_EQ(ranks[2]->name, ranks[1]->name);
  EXPECT_GE(ranks[2]->tid, exporter::kRankTidBase);
  EXPECT_EQ(ranks[2]->order, 0);
  EXPECT_EQ(ranks[3]->name, "pid 103 solo");
  EXPECT_EQ(ranks[3]->parent, std::next(comms.begin())->first);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ranks[i]->parent, shared->uuid);

  // Every call twice: on its thread, and on a rank track.
  size_t on_ranks = 0, flows = 0;
  std::map<std::pair<int64_t, int64_t>, std::map<std::string, int64_t>> by_seq_rank;
  for (auto& s : L.slices) {
    bool rank_track = L.tracks[s.track - 1].kind == exporter::TrackKind::rank;
    on_ranks += rank_track;
    if (!rank_track) continue;
    flows += s.flows_out.size();
    std::map<std::string, int64_t> args;
    for (auto& a : s.args)
      if (!a.is_string) args[a.key] = a.value;
    if (!args.count("seq") || !args.count("rank")) continue;  // the solo process's rank is unknown
    args["flows_in"] = static_cast<int64_t>(s.flows_in.size());
    by_seq_rank[{args["seq"], args["rank"]}] = args;
  }
  EXPECT_EQ(on_ranks, 7u);
  EXPECT_EQ(L.slices.size(), 14u);
  EXPECT_EQ(flows, 3u);  // seq 1, 2 and 3, each from one rank to the other
  EXPECT_EQ((by_seq_rank[{1, 1}]["arrival"]), 1);
  EXPECT_EQ((by_seq_rank[{1, 0}]["arrival"]), 2);
  EXPECT_EQ((by_seq_rank[{1, 0}]["after_first_ns"]), 300);
  EXPECT_EQ((by_seq_rank[{1, 0}]["flows_in"]), 1);
  EXPECT_EQ((by_seq_rank[{2, 0}]["arrival"]), 1);
  EXPECT_EQ((by_seq_rank[{2, 1}]["after_first_ns"]), 200);
  EXPECT_EQ((by_seq_rank[{1, 0}]["bytes"]), 4096);
  EXPECT_EQ((by_seq_rank[{1, 0}]["nranks"]), 2);

  // In Perfetto: the communicator is a process whose children the UI orders
  // by rank; each rank's slices and the flows between them decode back.
  std::ostringstream out;
  ASSERT_TRUE(exporter::write_perfetto(L, out).ok());
  gpuobs::testing::Decoded d = gpuobs::testing::decode_perfetto(out.str());
  const auto& comm = d.tracks.at(shared->uuid);
  EXPECT_EQ(comm.process().process_name(), shared->name);
  EXPECT_EQ(comm.child_ordering(), gpuobs::perfetto::TrackDescriptor::EXPLICIT);
  const auto& r1 = d.tracks.at(ranks[0]->uuid);
  EXPECT_EQ(r1.parent_uuid(), shared->uuid);
  EXPECT_EQ(r1.sibling_order_rank(), 1);
  EXPECT_EQ(r1.name(), "rank 1 · pid 102 r1");
  size_t rank_slices = 0;
  for (auto& sl : d.slices) rank_slices += sl.track == ranks[0]->uuid || sl.track == ranks[1]->uuid;
  EXPECT_EQ(rank_slices, 5u);
  size_t flows_decoded = 0;
  for (auto& [id, from] : d.flow_out) flows_decoded += id >= exporter::kCollectiveFlowBase && d.flow_in.count(id);
  EXPECT_EQ(flows_decoded, 3u);
}

}  // namespace
