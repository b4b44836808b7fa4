-- Schema version 27: a capture's schedule re-executed on a GPU and compared
-- with the original (issue 41, docs/replay.md "Execute"). `gpuobs replay
-- --execute` writes these into the original capture, replacing what an
-- earlier --execute wrote; report replay_exec_sum reads them. Every time is
-- ns; each side is measured from its own capture's replay (busy: measured GPU
-- intervals with --gpu-time, else the replay's windows) within its window
-- (the schedule's first entry to its last end).

-- One row per re-execution.
CREATE TABLE replay_exec_runs (
  run                     INTEGER PRIMARY KEY,  -- 1-based within the --execute
  exec_capture            TEXT,     -- the executor's own capture file
  edits                   TEXT,     -- the what-if edits applied ("" none): "no-host-gaps", "speed=2", ...
  calibration             TEXT,     -- how the spin kernel's ns became cycles: cupti (fitted to its GPU times
                                    -- in a calibration run), events (timed at start), default (not timed)
  ns_per_cycle            REAL,     -- the spin kernel's ns per SM cycle
  fixed_ns                REAL,     -- the length of a 0-cycle spin kernel
  steps                   INTEGER,  -- steps of the original's schedule (the part re-executed)
  orig_launches           INTEGER,  -- kernel and graph steps, each side
  exec_launches           INTEGER,
  orig_e2e_ns             INTEGER,  -- first step's entry to the last step's end
  exec_e2e_ns             INTEGER,
  e2e_error               REAL,     -- (exec - orig) / orig
  orig_gap_p50_ns         INTEGER,  -- host gap before a launch: median and 90th percentile, each side
  exec_gap_p50_ns         INTEGER,
  orig_gap_p90_ns         INTEGER,
  exec_gap_p90_ns         INTEGER,
  orig_busy_ns            INTEGER,  -- summed over the compared streams, then the idle split
  orig_idle_ns            INTEGER,
  orig_host_wait_ns       INTEGER,
  orig_sync_wait_ns       INTEGER,
  orig_dependency_wait_ns INTEGER,
  orig_other_ns           INTEGER,
  exec_busy_ns            INTEGER,
  exec_idle_ns            INTEGER,
  exec_host_wait_ns       INTEGER,
  exec_sync_wait_ns       INTEGER,
  exec_dependency_wait_ns INTEGER,
  exec_other_ns           INTEGER
);

-- One row per (re-execution, schedule stream).
CREATE TABLE replay_exec_streams (
  run                     INTEGER REFERENCES replay_exec_runs (run),
  stream                  INTEGER,  -- the schedule's stream id
  kind                    TEXT,     -- legacy, per_thread, created, unknown
  label                   TEXT,     -- stream_names' label in the original
  priority                INTEGER,
  orig_queue              INTEGER,  -- replay_queues.id in the original
  exec_queue              INTEGER,  -- the executor capture's replay queue (NULL: it ran nothing there)
  orig_work_ops           INTEGER,
  exec_work_ops           INTEGER,
  orig_measured_ops       INTEGER,  -- of them, with a measured GPU time
  exec_measured_ops       INTEGER,
  orig_busy_ns            INTEGER,
  orig_idle_ns            INTEGER,
  orig_host_wait_ns       INTEGER,
  orig_sync_wait_ns       INTEGER,
  orig_dependency_wait_ns INTEGER,
  orig_other_ns           INTEGER,
  exec_busy_ns            INTEGER,
  exec_idle_ns            INTEGER,
  exec_host_wait_ns       INTEGER,
  exec_sync_wait_ns       INTEGER,
  exec_dependency_wait_ns INTEGER,
  exec_other_ns           INTEGER,
  busy_error              REAL,     -- (exec - orig) / orig busy
  PRIMARY KEY (run, stream)
);
