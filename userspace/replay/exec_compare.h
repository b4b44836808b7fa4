// A re-execution compared with its original (issue 41, docs/replay.md
// "Execute"): the executor's capture replayed like the original's, its
// streams found by the handles the executor reports, and per stream the GPU
// busy time, the idle split and the launch gaps side by side, with the error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "replay/exec_schedule.h"
#include "replay/replay_model.h"
#include "store/db.h"

namespace gpuobs::replay {

// What gpuobs_replay_exec --report writes, one line per executor process.
struct ExecPart {
  int64_t process_id = 0;      // the original's processes.id it replayed
  uint32_t pid = 0;            // the executor process
  int64_t t0_mono_ns = 0;      // the schedule's start
  int64_t issued_mono_ns = 0;  // its last step issued: the executor's own final wait comes after
  int64_t end_mono_ns = 0;
  std::string calibration;  // default, events, given (gpuobs passed a fit)
  double ns_per_cycle = 0, fixed_ns = 0;
  struct Stream {
    int32_t id = 0;
    uint64_t handle = 0;
    uint32_t tid = 0;
  };
  std::vector<Stream> streams;
};
gpuobs::Result<std::vector<ExecPart>> read_exec_report(const std::string& path);

// One side's view of a stream within a window: busy where its work ran (the
// measured GPU intervals with --gpu-time, else the replay's windows), idle
// where none did, split by cause.
struct StreamUse {
  std::optional<int64_t> queue_id;  // none: the stream has no queue on this side
  int64_t work_ops = 0, measured_ops = 0;
  int64_t busy_ns = 0, idle_ns = 0;
  int64_t host_wait_ns = 0, sync_wait_ns = 0, dependency_wait_ns = 0, other_ns = 0;
};

struct StreamCompare {
  int32_t stream = 0;  // schedule stream id
  std::string kind, label;
  int32_t priority = 0;
  StreamUse orig, exec;
  double busy_error() const;  // (exec - orig) / orig; 0 when both are 0
};

struct ExecCompare {
  int64_t steps = 0;
  int64_t orig_e2e_ns = 0, exec_e2e_ns = 0;  // first step's entry to the last step's end
  int64_t orig_gap_p50_ns = 0, exec_gap_p50_ns = 0, orig_gap_p90_ns = 0, exec_gap_p90_ns = 0;  // kernel launch gaps
  int64_t orig_launches = 0, exec_launches = 0;
  StreamUse orig_total, exec_total;  // summed over the compared streams
  std::vector<StreamCompare> streams;
  double e2e_error() const;
};

// The window of a side: [from, to) CLOCK_MONOTONIC ns.
struct Window {
  int64_t from_ns = 0, to_ns = 0;
};

// One side's use of a queue in a window, from its replay.
StreamUse stream_use(const replay::Result& r, int64_t queue_id, Window w);

// Pure: `orig` is the original's schedule (the part re-executed, no edits),
// `exec` the executor capture's schedule from the executor's start, with each
// side's replay; `parts` say which executor queue replays which stream.
ExecCompare compare_execution(const Schedule& orig, const replay::Result& orig_replay, const Schedule& exec,
                              const replay::Result& exec_replay, const std::vector<ExecPart>& parts);

// The comparison tables (schema/migrations/027_replay_exec.sql), one run.
struct ExecRun {
  int64_t run = 0;  // 1-based within this --execute
  std::string exec_capture, edits;
  std::string calibration;  // cupti, events, default
  double ns_per_cycle = 0, fixed_ns = 0;
  ExecCompare cmp;
};
// The spin kernel's length as CUPTI measured it in a calibration run:
// (cycles, GPU ns) per kernel. Fits ns = fixed + cycles * rate through each
// cycle count's median (a stray sample moves nothing); none when the
// samples cannot give a positive rate.
struct SpinFit {
  double fixed_ns = 0, ns_per_cycle = 0;
};
std::optional<SpinFit> fit_spin_kernel(const std::vector<std::pair<uint64_t, int64_t>>& samples);

// Replaces the tables' rows with these runs in one transaction.
Status write_exec_runs(Db& capture, const std::vector<ExecRun>& runs);

}  // namespace gpuobs::replay
