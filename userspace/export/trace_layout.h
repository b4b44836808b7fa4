// The tracks, slices, flows and counters of a timeline export, laid out once
// and written by both the Perfetto and the Chrome JSON writers (so the two
// files show the same thing). Built from the capture's host calls and the
// replay's queues.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "export/timeline_source.h"
#include "replay/replay_model.h"

namespace gpuobs::exporter {

// gpu: a GPU the metrics sampler found (drawn like a process, pid
// kGpuPidBase + its id); gpu_counter: one of its metrics. communicator: an
// NCCL communicator (drawn like a process, pid kCommPidBase + its ordinal);
// rank: one rank's calls on it (tid: rank + 1, or kRankTidBase + n when the
// rank is unknown or a second lane is needed).
enum class TrackKind : uint8_t {
  process,
  thread,
  stream,
  lane,
  memory_counter,
  depth_counter,
  gpu,
  gpu_counter,
  communicator,
  rank,
  ring  // one lane of a GPU ring's jobs (schema 26), under the device's gpu track
};
inline constexpr uint32_t kGpuPidBase = 1u << 29;
inline constexpr uint32_t kCommPidBase = kGpuPidBase + (1u << 28);
inline constexpr uint32_t kRankTidBase = 1u << 20;
// A device whose GPU scheduler ran jobs: drawn like a process (pid
// kGpuJobPidBase + its ordinal), a track per ring lane under it (tid: the
// ring's ordinal * 64 + lane + 1).
inline constexpr uint32_t kGpuJobPidBase = kGpuPidBase + (1u << 27);

struct Track {
  uint64_t uuid = 0;    // 1-based index into TraceLayout::tracks
  uint64_t parent = 0;  // 0: top level
  TrackKind kind = TrackKind::process;
  std::string name;
  uint32_t pid = 0, tid = 0;  // tid: threads and ranks only
  int32_t order = 0;          // ranks: their place under the communicator
};

// One argument of a slice: an integer or an interned string.
struct Arg {
  const char* key;
  bool is_string;
  int64_t value;  // the integer, or the index into TraceLayout::strings
};

struct Slice {
  uint64_t track = 0;
  int64_t start_ns = 0, end_ns = 0;
  bool instant = false;  // an entry-only call: a zero-duration instant
  uint32_t name = 0;     // index into TraceLayout::strings
  std::vector<Arg> args;
  std::vector<uint64_t> flows_out, flows_in;  // flow ids this slice starts / ends
  uint8_t flow_rank = 0;                      // 0: host call; an operation: 1 + the highest rank of its flow sources
};

struct CounterPoint {
  uint64_t track = 0;
  int64_t ts_ns = 0;
  int64_t value = 0;
  double real = 0;  // gpu_counter tracks: the metric's value (percentages have fractions)
};

struct TraceLayout {
  std::vector<std::string> strings;  // [0] = ""
  std::vector<Track> tracks;         // uuid i+1 at index i
  std::vector<Slice> slices;         // ordered by (start, longer first, creation)
  std::vector<CounterPoint> counters;
  int64_t start_ns = 0, end_ns = 0;
};

// Flow ids: a launch (any enqueuing call) to its operation is the operation's
// id; an event record to the wait that depends on it is kDependencyFlowBase +
// the dependency's index in replay::Result::deps.
inline constexpr uint64_t kDependencyFlowBase = uint64_t{1} << 40;
// The same NCCL collective in its ranks (communicator hash and sequence
// number), chained on the communicator's rank tracks in the order the ranks
// entered it: kCollectiveFlowBase + n.
inline constexpr uint64_t kCollectiveFlowBase = uint64_t{1} << 41;

TraceLayout build_layout(Timeline timeline, const replay::Result& replay);

// The order slices and counters are written in: by time; at one instant,
// ends (innermost first), then counters, then begins and instants: a flow's
// source before its destination (flow_rank), then outermost first. Perfetto
// needs the ends first so that a slice starting where another ends on the
// same track is not nested in it, and a flow's source first because it reads
// the direction from the order (a wait's window often starts exactly when the
// record it waits for does).
struct TraceEvent {
  enum Phase : uint8_t { end = 0, counter = 1, instant = 2, begin = 3 };
  int64_t ts_ns;
  Phase phase;
  uint32_t index;  // into slices or counters
};
std::vector<TraceEvent> ordered_events(const TraceLayout& layout);

}  // namespace gpuobs::exporter
