// A Perfetto trace decoded back with the generated protobuf classes, for the
// export tests: tracks, counters, slices rebuilt from BEGIN/END pairs per
// track, flows, and the interning and clock flags every packet must carry.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "export/perfetto_writer.h"
#include "perfetto_trace_subset.pb.h"

namespace gpuobs::testing {

namespace pb = gpuobs::perfetto;

// A decoded Perfetto trace: tracks, and slices rebuilt from BEGIN/END pairs
// per track (an END without its BEGIN fails the test).
struct DecodedSlice {
  uint64_t track;
  int64_t start, end;
  bool instant;
  int depth;  // open slices on its track when it began
  std::string name;
  std::map<std::string, std::string> args;
};
struct Decoded {
  std::map<uint64_t, pb::TrackDescriptor> tracks;
  std::vector<DecodedSlice> slices;
  std::map<uint64_t, std::vector<std::pair<int64_t, int64_t>>> counters;      // track -> (ts, value)
  std::map<uint64_t, std::vector<std::pair<int64_t, double>>> real_counters;  // double_counter_value
  std::map<uint64_t, std::vector<size_t>> flow_out, flow_in;                  // flow id -> slice indices
  size_t packets = 0, first_flags = 0, other_flags_not_2 = 0, no_clock = 0;
};

inline Decoded decode_perfetto(const std::string& bytes) {
  Decoded d;
  pb::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(bytes));
  std::map<uint64_t, std::string> names, arg_names, values;
  std::map<uint64_t, std::vector<size_t>> open;  // track -> stack of slice indices
  bool first_event = true;
  for (const pb::TracePacket& p : trace.packet()) {
    ++d.packets;
    EXPECT_EQ(p.trusted_packet_sequence_id(), exporter::kPerfettoSequenceId);
    if (p.has_timestamp() && p.timestamp_clock_id() != 3) ++d.no_clock;
    for (auto& n : p.interned_data().event_names()) names[n.iid()] = n.name();
    for (auto& n : p.interned_data().debug_annotation_names()) arg_names[n.iid()] = n.name();
    for (auto& v : p.interned_data().debug_annotation_string_values()) values[v.iid()] = v.str();
    if (p.has_track_descriptor()) {
      d.tracks[p.track_descriptor().uuid()] = p.track_descriptor();
      continue;
    }
    if (!p.has_track_event()) continue;
    if (first_event) d.first_flags = p.sequence_flags(), first_event = false;
    else if (p.sequence_flags() != 2) ++d.other_flags_not_2;
    const pb::TrackEvent& e = p.track_event();
    int64_t ts = static_cast<int64_t>(p.timestamp());
    EXPECT_TRUE(d.tracks.count(e.track_uuid())) << "event before its track's descriptor";
    auto& stack = open[e.track_uuid()];
    switch (e.type()) {
      case pb::TrackEvent::TYPE_COUNTER:
        if (e.has_double_counter_value()) d.real_counters[e.track_uuid()].emplace_back(ts, e.double_counter_value());
        else d.counters[e.track_uuid()].emplace_back(ts, e.counter_value());
        break;
      case pb::TrackEvent::TYPE_SLICE_END:
        EXPECT_FALSE(stack.empty()) << "END without BEGIN on track " << e.track_uuid();
        if (stack.empty()) break;
        d.slices[stack.back()].end = ts;
        EXPECT_GE(ts, d.slices[stack.back()].start);
        stack.pop_back();
        break;
      case pb::TrackEvent::TYPE_SLICE_BEGIN:
      case pb::TrackEvent::TYPE_INSTANT: {
        DecodedSlice s{e.track_uuid(), ts, ts, e.type() == pb::TrackEvent::TYPE_INSTANT, int(stack.size()), {}, {}};
        EXPECT_TRUE(names.count(e.name_iid())) << "name iid " << e.name_iid() << " not interned before use";
        s.name = names[e.name_iid()];
        for (auto& a : e.debug_annotations()) {
          EXPECT_TRUE(arg_names.count(a.name_iid()));
          if (a.has_string_value_iid()) {  // braces: EXPECT_TRUE is an if/else inside
            EXPECT_TRUE(values.count(a.string_value_iid())) << "value not interned before use";
          }
          s.args[arg_names[a.name_iid()]] =
              a.has_string_value_iid() ? values[a.string_value_iid()] : std::to_string(a.int_value());
        }
        size_t i = d.slices.size();
        for (uint64_t f : e.flow_ids()) d.flow_out[f].push_back(i);
        for (uint64_t f : e.terminating_flow_ids()) {
          // Perfetto reads a flow's direction from the order: its source comes first.
          EXPECT_TRUE(d.flow_out.count(f)) << "flow " << f << " ends before it starts";
          d.flow_in[f].push_back(i);
        }
        d.slices.push_back(std::move(s));
        if (e.type() == pb::TrackEvent::TYPE_SLICE_BEGIN) stack.push_back(i);
        break;
      }
      default: ADD_FAILURE() << "unexpected event type " << e.type();
    }
  }
  for (auto& [track, stack] : open) EXPECT_TRUE(stack.empty()) << "BEGIN without END on track " << track;
  return d;
}

}  // namespace gpuobs::testing
