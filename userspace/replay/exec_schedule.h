// The schedule `gpuobs replay --schedule-out` writes (issue 41, docs/replay.md
// "Schedule"): what a capture's host threads submitted to which streams, in
// the captured order, with the host time between calls and each operation's
// GPU work, ready to be re-executed with synthetic work of the same length or
// read by a simulator. Built from the replay's model (queues, ops, event
// dependencies, observations) and the capture's GPU times where present.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "replay/replay_input.h"
#include "replay/replay_model.h"
#include "store/db.h"

namespace gpuobs::replay {

enum class StepKind : uint8_t {
  kernel,        // a launch: synthetic work of gpu_ns
  graph,         // a graph launch: one piece of work of gpu_ns (its measured span)
  host_func,     // a host function on a stream: gpu_ns of stream time
  copy,          // bytes in direction (async or not)
  memset,        // bytes
  event_record,  // event on stream
  event_wait,    // stream waits for event
  stream_sync,   // the host waits for stream
  event_sync,    // the host waits for event
  context_sync,  // the host waits for every stream of its process
};
const char* to_string(StepKind k);

// Where a step's gpu_ns came from.
enum class DurationSource : uint8_t {
  none,       // not GPU work (records, waits, syncs), or a copy/memset: its bytes are the work
  measured,   // record --gpu-time (gpu_times)
  window,     // shared out of the span a blocking observation proved (docs/replay.md "Schedule")
  same_name,  // the median of this kernel name's measured or window durations
  fallback,   // nothing known: kFallbackKernelNs
};
const char* to_string(DurationSource s);
inline constexpr int64_t kFallbackKernelNs = 5000;

struct ExecStream {
  int32_t id = 0;  // 0-based, in replay queue order
  int64_t queue_id = 0;
  int64_t process_id = 0;
  uint32_t tgid = 0;
  std::string kind;   // legacy, per_thread, created, unknown (replay Queue::kind)
  std::string label;  // stream#N, or empty for the default streams
  bool non_blocking = false;
  int32_t priority = 0;  // cuStreamCreateWithPriority's (0: default)
};

struct ExecThread {
  int32_t id = 0;  // 0-based, in order of first step
  int64_t process_id = 0;
  uint32_t tid = 0;
};

struct ExecStep {
  int64_t index = 0;  // 0-based issue order over the schedule
  StepKind kind = StepKind::kernel;
  int32_t thread = 0;
  int32_t stream = -1;  // ExecStream id; -1: context_sync, event_sync
  int32_t event = -1;   // records, waits, event syncs: 0-based event id
  int64_t at_ns = 0;    // the call's entry, from the schedule's start
  int64_t host_ns = 0;  // the call's own host time
  int64_t gap_ns = 0;   // host time since its thread's previous step returned (speed and edits applied)
  int64_t gpu_ns = 0;   // kernels, graphs, host functions: the work's length
  DurationSource gpu_from = DurationSource::none;
  uint64_t bytes = 0;     // copies, memsets
  std::string direction;  // copies: HtoD, DtoH, DtoD, ...
  bool async = false;     // copies
  std::string name;       // kernel name, else the API symbol
  int64_t op_id = 0;      // the replay op (0: a sync)
  int64_t observation_id = 0;
  std::vector<int64_t> after;  // steps (index) on other streams it waits for (event waits, legacy sync)
};

struct Schedule {
  std::vector<ExecStream> streams;
  std::vector<ExecThread> threads;
  std::vector<ExecStep> steps;
  int32_t events = 0;
  int64_t start_ns = 0;                    // CLOCK_MONOTONIC of the first step's entry in the capture
  int64_t end_ns = 0;                      // the last step's end as the capture shows it (proof or measured end)
  std::map<std::string, int64_t> skipped;  // replay ops not scheduled, by kind (alloc_async, ...)
  int64_t dropped_syncs = 0;
  // The host-time edits applied to the gaps, for whoever replays `at_ns`
  // (a thread's first call): without host gaps it starts at once, with a
  // speed factor at at_ns / speed.
  bool no_host_gaps = false;
  double speed = 1.0;
};

// "What if" edits and the part of the capture to schedule.
struct ScheduleOptions {
  std::optional<uint32_t> pid;                     // one process (its tgid); none: all
  std::optional<int64_t> from_ns, to_ns;           // window: steps entered in [from, to) ns after capture start
  double speed = 1.0;                              // host gaps divided by this (2: a host twice as fast)
  bool no_host_gaps = false;                       // every gap 0: the host as fast as its calls
  bool drop_syncs = false;                         // every host sync removed
  std::vector<int64_t> drop_observations;          // these syncs (replay observation ids) removed
  std::vector<std::pair<int64_t, int64_t>> merge;  // (from queue, into queue): from's steps go to into
  int64_t capture_start_ns = 0;                    // what the window is relative to (set from the capture)
};

// Pure: from a replay's input and result (and stream priorities by
// (process id, handle)). The same input gives the same schedule.
gpuobs::Result<Schedule> build_schedule(const detail::Input& in, const replay::Result& r,
                                        const std::map<std::pair<int64_t, uint64_t>, int32_t>& priorities,
                                        const ScheduleOptions& opts);

// What a schedule is built from: the capture read and replayed once, so
// that several schedules of one capture (the edited one, the original one)
// and the replay itself (replay --execute's comparison) cost one replay.
struct ScheduleSource {
  detail::Input input;
  replay::Result replay;
  std::map<std::pair<int64_t, uint64_t>, int32_t> priorities;  // (process id, stream handle) -> priority
  int64_t capture_start_ns = 0;                                // what ScheduleOptions' window is relative to
};
gpuobs::Result<ScheduleSource> load_schedule_source(Db& capture);
gpuobs::Result<Schedule> build_schedule(const ScheduleSource& src, const ScheduleOptions& opts);

// Reads the capture, replays it and builds its schedule.
gpuobs::Result<Schedule> build_schedule(Db& capture, const ScheduleOptions& opts);

// The schedule as JSON (docs/replay.md "Schedule" gives the fields).
std::string schedule_json(const Schedule& s);

}  // namespace gpuobs::replay
