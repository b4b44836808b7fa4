// The replayed GPU state machine: what `gpuobs replay` derives from a capture
// and what the exporters draw. Every time here is CLOCK_MONOTONIC ns, like the
// capture. An operation's window is the interval the host's own observations
// allow (docs/replay.md); GPU times measured by CUPTI (schema 20) are used only
// for idle time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuobs::replay {

// One GPU queue: (process, stream handle), the process's legacy default
// stream, or one thread's per-thread default stream. The device is not known
// from the uprobes (no context tracking yet), so it is not part of the key.
struct Queue {
  int64_t id = 0;          // 1-based, in order of first use (deterministic)
  int64_t process_id = 0;  // processes.id
  uint32_t tgid = 0;
  std::string kind;  // "legacy" (handle 0/0x1), "per_thread" (handle 0x2 or _ptsz with 0), "created", "unknown" (never
                     // seen created)
  uint64_t handle = 0;          // CUstream / hipStream_t value (0 for the default streams)
  std::string label;            // stream_names' "stream#N" (created streams; empty for the defaults)
  std::optional<uint32_t> tid;  // per_thread: the owning thread
  bool non_blocking = false;    // created with CU_STREAM_NON_BLOCKING: no implicit sync with the legacy stream
  std::optional<int64_t> created_ns, destroyed_ns;
  int64_t ops = 0;
  int64_t max_depth = 0;  // most operations that may have been pending at once
};

// One operation enqueued on a queue.
struct Op {
  int64_t id = 0;  // 1-based, in enqueue order over the whole capture (ts, then source order)
  int64_t queue_id = 0;
  int64_t seq = 0;   // 1-based position in its queue
  std::string kind;  // launch, copy, memset, event_record, wait_event, host_func, graph_launch, alloc_async, free_async
  std::string name;  // kernel name if known, else the API symbol
  std::string api;   // the API symbol that enqueued it
  std::string source_table;       // kernel_launches, copies, stream_ops, memory_ops
  int64_t source_id = 0;          // row id in source_table
  uint32_t tid = 0;               // enqueuing thread
  int64_t stack_id = 0;           // 0: none
  int64_t enqueue_ns = 0;         // the API call's entry
  int64_t earliest_start_ns = 0;  // lower bound: enqueue, stream predecessor, dependencies
  std::optional<int64_t>
      latest_end_ns;                // upper bound: the first host observation proving completion; none: never proven
  std::optional<int64_t> bound_by;  // Observation::id that gave latest_end_ns
  // Memory the operation names (copies, memsets): [address, address+bytes).
  uint64_t dst = 0, src = 0, bytes = 0;
  std::string direction;  // copies: HtoD, DtoH, DtoD, ...
  uint64_t event = 0;     // event_record / wait_event: the event handle
};

// A cross-queue ordering edge the replay established.
struct Dependency {
  int64_t op_id = 0;     // the operation that must wait
  int64_t on_op_id = 0;  // the operation it waits for
  std::string kind;      // "event" (record -> wait), "legacy" (implicit legacy-default-stream sync)
};

// A host observation of completion: a synchronization returning, a query
// returning success, a synchronous copy that returns after completion.
struct Observation {
  int64_t id = 0;  // 1-based, in order of the call's entry
  int64_t process_id = 0;
  uint32_t tid = 0;
  std::string kind;  // stream_sync, event_sync, context_sync, stream_query, event_query, sync_copy
  std::string api;
  std::string source_table;  // syncs, stream_ops, copies
  int64_t source_id = 0;
  int64_t start_ns = 0;             // call entry
  int64_t end_ns = 0;               // call return: the time completion is known
  std::optional<int64_t> queue_id;  // stream observed (stream_sync/query, sync_copy)
  uint64_t event = 0;               // event observed
  int64_t ops_completed = 0;        // operations whose latest_end_ns this observation set
  int64_t blocked_ns = 0;           // host time inside the call (syncs; 0 for queries)
  int64_t stack_id = 0;
};

// Queue depth after a change: +1 at each enqueue, -1 when an observation
// proves an operation complete. Consecutive changes at one instant are folded.
struct DepthSample {
  int64_t queue_id = 0;
  int64_t ts_ns = 0;
  int64_t depth = 0;
};

struct Hazard {
  int64_t id = 0;
  // wait_unrecorded_event, destroyed_stream, free_while_queued, pageable_async_copy,
  // sync_after_every_launch, unordered_cross_stream
  std::string kind;
  int64_t process_id = 0;
  std::optional<int64_t> op_id;        // the operation at fault (when it is an operation)
  std::optional<int64_t> other_op_id;  // the conflicting operation
  std::string source_table;            // the API call at fault (any table)
  int64_t source_id = 0;
  std::string api;  // the call at fault's API symbol
  int64_t ts_ns = 0;
  int64_t stack_id = 0;  // the call at fault's stack
  int64_t other_stack_id = 0;
  std::string detail;  // one sentence a user can act on
};

// Idle time (docs/replay.md, "Idle time"): a work op (launch, copy, memset,
// host_func, graph_launch) is busy over its measured GPU interval (gpu_times,
// schema 20) or else its window [earliest_start_ns, latest_end_ns] (never
// proven: to Result::end_ns). A span is one queue's, or with no queue_id the
// process's (busy while any of its queues is).
struct IdleSpan {
  int64_t process_id = 0;
  std::optional<int64_t> queue_id;  // none: the process rollup
  int64_t start_ns = 0, end_ns = 0;
  int64_t work_ops = 0, measured_ops = 0;
  int64_t busy_ns = 0, idle_ns = 0, gaps = 0;
};

// A consecutive part of a gap with one cause.
struct IdlePiece {
  std::string kind;  // host_wait, sync_wait, dependency_wait, other
  int64_t start_ns = 0, end_ns = 0;
};

// A maximal part of a span covered by no busy interval: [start_ns, end_ns).
struct IdleGap {
  int64_t id = 0;
  int64_t process_id = 0;
  std::optional<int64_t> queue_id;  // none: a gap of the process rollup
  int64_t start_ns = 0, end_ns = 0;
  int64_t host_wait_ns = 0;        // next op not enqueued yet; its thread outside a blocking call
  int64_t sync_wait_ns = 0;        // next op not enqueued yet; its thread inside a sync or sync copy
  int64_t dependency_wait_ns = 0;  // enqueued, waiting for another queue (event wait, legacy sync)
  int64_t other_ns = 0;            // enqueued, no dependency: submission latency
  bool measured = false;           // both bounding ops measured
  int64_t prev_op_id = 0, next_op_id = 0;
  uint32_t tid = 0;               // next op's enqueuing thread
  int64_t before_stack_id = 0;    // that thread's last call (op or observation) entered before start_ns
  int64_t after_stack_id = 0;     // the next op's stack
  std::vector<IdlePiece> pieces;  // in time order, covering [start_ns, end_ns)
};

struct Result {
  std::vector<Queue> queues;
  std::vector<Op> ops;  // ordered by id
  std::vector<Dependency> deps;
  std::vector<Observation> observations;
  std::vector<DepthSample> depth;
  std::vector<Hazard> hazards;
  std::vector<IdleSpan> idle_spans;  // queues (by id), then processes (by id)
  std::vector<IdleGap> idle_gaps;    // ordered by id: queue gaps (by queue, time), then process gaps
  int64_t end_ns = 0;                // capture end (or last event): where open windows are drawn to
};

}  // namespace gpuobs::replay
