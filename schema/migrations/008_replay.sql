-- Schema version 8: the replay tables (`gpuobs replay`, docs/replay.md).
-- Written only by `gpuobs replay FILE`, which replaces all their rows in one
-- transaction; empty until then. Every time is CLOCK_MONOTONIC ns like the
-- capture's. GPU-side times are never measured: an operation's window is what
-- the host's own observations allow. Ids are 1-based and deterministic: the
-- same capture always gives byte-identical tables.

-- One row per replay: what was replayed (no wall-clock time, so re-runs are identical).
CREATE TABLE replay_runs (
  id            INTEGER PRIMARY KEY CHECK (id = 1),
  model_version INTEGER NOT NULL,  -- docs/replay.md model revision (1)
  queues        INTEGER NOT NULL,
  ops           INTEGER NOT NULL,
  deps          INTEGER NOT NULL,
  observations  INTEGER NOT NULL,
  hazards       INTEGER NOT NULL,
  unproven_ops  INTEGER NOT NULL,  -- ops no observation proved complete
  end_ns        INTEGER NOT NULL   -- capture end (or its last call's return): where open windows end
);

-- GPU queues: (process, stream handle), the legacy default stream, or one thread's per-thread default stream.
CREATE TABLE replay_queues (
  id           INTEGER PRIMARY KEY,             -- in order of first use
  process_id   INTEGER NOT NULL REFERENCES processes (id),
  tgid         INTEGER NOT NULL,
  kind         TEXT NOT NULL,                   -- legacy, per_thread, created, unknown (used, never seen created)
  handle       INTEGER NOT NULL,                -- CUstream / hipStream_t value; 0 for the default streams
  tid          INTEGER,                         -- per_thread: the owning thread
  non_blocking INTEGER NOT NULL,                -- 1: created with CU_STREAM_NON_BLOCKING (no implicit legacy sync)
  created_ns   INTEGER,                         -- stream_create entry
  destroyed_ns INTEGER,                         -- stream_destroy entry
  ops          INTEGER NOT NULL,
  max_depth    INTEGER NOT NULL                 -- most ops that may have been pending at once
);
CREATE INDEX replay_queues_process ON replay_queues (process_id);

-- Operations enqueued on a queue, in the replay's total order.
CREATE TABLE replay_ops (
  id                INTEGER PRIMARY KEY,
  queue_id          INTEGER NOT NULL REFERENCES replay_queues (id),
  seq               INTEGER NOT NULL,          -- 1-based position in its queue
  kind              TEXT NOT NULL,             -- launch, copy, memset, event_record, wait_event, host_func, graph_launch, alloc_async, free_async
  name              TEXT NOT NULL,             -- kernel name if known, else the API symbol
  api               TEXT NOT NULL,             -- the API symbol that enqueued it
  source_table      TEXT NOT NULL,             -- kernel_launches, copies, memory_ops, stream_ops
  source_id         INTEGER NOT NULL,          -- row id in source_table
  tid               INTEGER NOT NULL,          -- enqueuing thread
  stack_id          INTEGER NOT NULL,          -- stacks.id; 0: none
  enqueue_ns        INTEGER NOT NULL,          -- the API call's entry
  earliest_start_ns INTEGER NOT NULL,          -- lower bound: enqueue, queue predecessor, dependencies
  latest_end_ns     INTEGER,                   -- upper bound: the first observation proving it complete; NULL: never proven
  bound_by          INTEGER,                   -- replay_observations.id that set latest_end_ns
  dst               INTEGER NOT NULL,          -- copies/memsets: destination address; alloc/free_async: the address
  src               INTEGER NOT NULL,          -- copies: source address
  bytes             INTEGER NOT NULL,          -- bytes named at dst (and src)
  direction         TEXT NOT NULL,             -- copies: HtoD, DtoH, DtoD, ...; '' otherwise
  event             INTEGER NOT NULL           -- event_record / wait_event: the event handle; 0 otherwise
);
CREATE INDEX replay_ops_queue ON replay_ops (queue_id, seq);
CREATE INDEX replay_ops_source ON replay_ops (source_table, source_id);

-- Cross-queue ordering edges: op_id cannot start before on_op_id completed.
CREATE TABLE replay_deps (
  op_id    INTEGER NOT NULL REFERENCES replay_ops (id),
  on_op_id INTEGER NOT NULL REFERENCES replay_ops (id),
  kind     TEXT NOT NULL                       -- event (record -> wait), legacy (implicit legacy default stream sync)
);
CREATE INDEX replay_deps_op ON replay_deps (op_id);
CREATE INDEX replay_deps_on ON replay_deps (on_op_id);

-- Host observations of completion: syncs returning, queries answering success, synchronous copies.
CREATE TABLE replay_observations (
  id            INTEGER PRIMARY KEY,           -- in order of the call's entry
  process_id    INTEGER NOT NULL REFERENCES processes (id),
  tid           INTEGER NOT NULL,
  kind          TEXT NOT NULL,                 -- stream_sync, event_sync, context_sync, stream_query, event_query, sync_copy
  api           TEXT NOT NULL,
  source_table  TEXT NOT NULL,                 -- syncs, stream_ops, copies
  source_id     INTEGER NOT NULL,
  start_ns      INTEGER NOT NULL,              -- call entry
  end_ns        INTEGER NOT NULL,              -- call return: when completion is known
  queue_id      INTEGER REFERENCES replay_queues (id),  -- the queue observed (stream sync/query, sync copy)
  event         INTEGER NOT NULL,              -- the event observed; 0 otherwise
  ops_completed INTEGER NOT NULL,              -- ops whose latest_end_ns this observation set
  blocked_ns    INTEGER NOT NULL,              -- host time inside the call (0 for queries)
  stack_id      INTEGER NOT NULL
);
CREATE INDEX replay_observations_thread ON replay_observations (process_id, tid);

-- Queue depth after each change (+1 enqueue, -1 proven complete); changes at one instant folded.
CREATE TABLE replay_depth (
  queue_id INTEGER NOT NULL REFERENCES replay_queues (id),
  ts_ns    INTEGER NOT NULL,
  depth    INTEGER NOT NULL
);
CREATE INDEX replay_depth_queue ON replay_depth (queue_id, ts_ns);

-- Hazards in how the host drove its queues (docs/replay.md lists the six kinds).
CREATE TABLE replay_hazards (
  id             INTEGER PRIMARY KEY,          -- in time order
  kind           TEXT NOT NULL,                -- wait_unrecorded_event, destroyed_stream, free_while_queued,
                                               -- pageable_async_copy, sync_after_every_launch, unordered_cross_stream
  process_id     INTEGER NOT NULL REFERENCES processes (id),
  op_id          INTEGER REFERENCES replay_ops (id),  -- the operation at fault, when it is one
  other_op_id    INTEGER REFERENCES replay_ops (id),  -- the conflicting operation
  source_table   TEXT NOT NULL,                -- the API call at fault
  source_id      INTEGER NOT NULL,
  api            TEXT NOT NULL,                -- that call's API symbol (also for hazards with no op)
  ts_ns          INTEGER NOT NULL,
  stack_id       INTEGER NOT NULL,             -- the call at fault's stack; 0: none
  other_stack_id INTEGER NOT NULL,
  detail         TEXT NOT NULL                 -- one sentence a user can act on
);
CREATE INDEX replay_hazards_kind ON replay_hazards (kind, ts_ns);
