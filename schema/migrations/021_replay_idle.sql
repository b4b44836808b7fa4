-- Schema version 21: where each GPU queue sat idle, and why (`gpuobs replay
-- FILE`, docs/replay.md "Idle time"). Written with the other replay tables
-- (one transaction, byte-identical on a re-run); empty until the replay runs.
-- Times are CLOCK_MONOTONIC ns. A queue's work ops (launch, copy, memset,
-- host_func, graph_launch) are busy over their measured GPU interval
-- (gpu_times, schema 20) or, without one, over their replay window
-- [earliest_start_ns, latest_end_ns] (an op never proven complete: to
-- replay_runs.end_ns). Rows with queue_id NULL are the process's rollup: its
-- GPU work is idle only while every one of its queues is.

-- One row per queue with work, and one per process (queue_id NULL).
CREATE TABLE replay_idle_spans (
  process_id   INTEGER NOT NULL REFERENCES processes (id),
  queue_id     INTEGER REFERENCES replay_queues (id),  -- NULL: every queue of the process
  start_ns     INTEGER NOT NULL,   -- the first work op's busy start
  end_ns       INTEGER NOT NULL,   -- the last busy end
  work_ops     INTEGER NOT NULL,
  measured_ops INTEGER NOT NULL,   -- work ops with a measured GPU interval
  busy_ns      INTEGER NOT NULL,   -- end_ns - start_ns - idle_ns
  idle_ns      INTEGER NOT NULL,   -- the gaps' total
  gaps         INTEGER NOT NULL
);
CREATE INDEX replay_idle_spans_queue ON replay_idle_spans (process_id, queue_id);

-- Idle gaps: maximal parts of a span covered by no busy interval, split by cause.
CREATE TABLE replay_idle_gaps (
  id                 INTEGER PRIMARY KEY,  -- queue gaps first (by queue, time), then process gaps
  process_id         INTEGER NOT NULL REFERENCES processes (id),
  queue_id           INTEGER REFERENCES replay_queues (id),  -- NULL: a gap of the process rollup
  start_ns           INTEGER NOT NULL,
  end_ns             INTEGER NOT NULL,
  host_wait_ns       INTEGER NOT NULL,  -- next op not submitted yet, its thread not in a blocking call
  sync_wait_ns       INTEGER NOT NULL,  -- next op not submitted yet, its thread blocked in a sync or sync copy
  dependency_wait_ns INTEGER NOT NULL,  -- submitted, waiting for another queue (event wait, legacy sync)
  other_ns           INTEGER NOT NULL,  -- submitted, no dependency: submission latency (measured times only)
  measured           INTEGER NOT NULL,  -- 1: both bounding ops have measured GPU times
  prev_op_id         INTEGER NOT NULL REFERENCES replay_ops (id),  -- the op whose end starts the gap
  next_op_id         INTEGER NOT NULL REFERENCES replay_ops (id),  -- the op whose start ends it
  tid                INTEGER NOT NULL,  -- the thread that enqueued next_op_id
  before_stack_id    INTEGER NOT NULL,  -- that thread's last call (op or observation) entered before the gap; 0: none
  after_stack_id     INTEGER NOT NULL   -- next_op_id's enqueue stack; 0: none
);
CREATE INDEX replay_idle_gaps_queue ON replay_idle_gaps (process_id, queue_id, start_ns);

-- Each gap as consecutive disjoint pieces of one cause (what time filters and
-- buckets clip; the pieces of a gap sum to its four *_ns columns).
CREATE TABLE replay_idle_pieces (
  gap_id   INTEGER NOT NULL REFERENCES replay_idle_gaps (id),
  kind     TEXT NOT NULL,              -- host_wait, sync_wait, dependency_wait, other
  start_ns INTEGER NOT NULL,
  end_ns   INTEGER NOT NULL
);
CREATE INDEX replay_idle_pieces_gap ON replay_idle_pieces (gap_id, start_ns);
