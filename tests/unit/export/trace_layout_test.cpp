// The trace layout the Perfetto, Chrome and HTML exports share
// (export/trace_layout.h), built from hand-made replay results: how stream
// windows are packed into lanes, and what is drawn for operations never
// proven complete.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "export/timeline_source.h"
#include "export/trace_layout.h"
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
