// Joining CUPTI's GPU activity records (activity_file.h) to the calls gpuobs
// captured (docs/gpu_time.md, "The join"):
//  1. a kernel, copy or memset record -> the driver API record with its
//     correlation id (its thread and entry time) -> the unclaimed host call
//     of that process, thread and kind inside [entry - max_lead_ns, entry +
//     max_lag_ns] nearest the entry: the latest at or before it (the probe
//     fires before CUPTI's entry timestamp), else the first after it
//     (without a thread when CUPTI gave pthread ids only: a call of any thread);
//  2. records with no driver record (dropped, or DRIVER not enabled):
//     by call order between the nearest driver records below and above
//     their correlation id, when the host calls in that window match them
//     one for one.
// Every activity and every call is either joined or counted; nothing is dropped silently.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gpu_time/activity_file.h"

namespace gpuobs::gpu_time {

// graph: a CUDA graph launch (gpuobs's stream_ops row of op graph_launch).
enum class HostCallKind : uint8_t { launch, copy, memset, graph };

// One call gpuobs captured that puts work on the GPU.
struct HostCall {
  uint64_t row_id = 0;  // the caller's key, returned as is
  uint32_t tgid = 0;    // process: correlation ids are per process
  uint32_t tid = 0;
  uint64_t ts_ns = 0;  // CLOCK_MONOTONIC at the call's entry (the probe's time)
  HostCallKind kind = HostCallKind::launch;
  uint64_t stream = 0;  // CUstream handle; 0: default stream or not known
};

// The GPU time of one joined call.
struct GpuTime {
  uint64_t row_id = 0;
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC: the first activity's start ...
  uint64_t end_ns = 0;    // ... and the last one's end
  uint32_t device_id = 0;
  uint32_t stream_id = 0;  // CUPTI's stream id (of the first activity)
  uint32_t correlation_id = 0;
  uint32_t activities = 0;  // 1; more for a call that issued several (a graph launch)
  bool by_order = false;    // joined by call order, without a driver API record
};

struct JoinOptions {
  // How far the captured call's time may lie before / after the driver API
  // record's entry time. The probe fires before CUPTI's entry timestamp
  // (microseconds on the H100); the lag covers clock conversion error
  // (kGtClockCuptiPair) and cross-thread rounding.
  uint64_t max_lead_ns = 200'000;
  // After the entry: only clock rounding. On the H200 the probe came 0.8-3.8
  // us before CUPTI's driver entry, never after; a wider lag let a graph
  // launch (no launch row) take the next launch's row (review of issue 19).
  uint64_t max_lag_ns = 5'000;
};

struct JoinCounts {
  uint64_t joined_by_correlation = 0;  // activities joined through their driver API record
  uint64_t joined_by_order = 0;        // activities joined by call order (no driver record)
  uint64_t extra_activities = 0;       // of the joined: beyond the first of one call (the call's span covers them)
  // No captured call of that thread and kind near the API entry, or none in the window.
  uint64_t activities_without_row = 0;
  // Of all the activities: the work of CUDA graph launches (joined, when
  // joined, to the graph launch's call, never to a kernel launch).
  uint64_t graph_activities = 0;
  // Two candidate calls at the same time, or a window whose calls and activities differ in number.
  uint64_t activities_ambiguous = 0;
  uint64_t rows_without_activity = 0;  // calls of a process that has records, with no activity joined
  uint64_t rows_without_process = 0;   // calls of a process with no record in the file (not traced by CUPTI)
  uint64_t stream_conflicts = 0;       // a stream handle joined to two CUPTI stream ids in one process
};

struct JoinResult {
  std::vector<GpuTime> rows;  // sorted by row_id, one per joined call
  JoinCounts counts;
  const GpuTime* find(uint64_t row_id) const;  // nullptr when the call was not joined
};

// `activities` may be in any order and hold several processes; calls too.
JoinResult join_activities(std::span<const HostCall> calls, std::span<const Activity> activities,
                           const JoinOptions& options = {});

}  // namespace gpuobs::gpu_time
