-- Schema version 20: GPU times measured by CUPTI (gpuobs record --gpu-time;
-- docs/gpu_time.md). The recorder injects a CUPTI activity library into the
-- command, reads its records after the command exits and joins each kernel,
-- copy and memset to the call gpuobs captured for it (by CUPTI's correlation
-- id through the driver API record: thread and entry time). One row per
-- joined call; what could not be joined is counted (counters gpu_time_*).

CREATE TABLE gpu_time_rows (
  call_table INTEGER NOT NULL,    -- 0: kernel_launches; 1: copies (a copy or a memset); 2: stream_ops (a graph launch)
  row_id INTEGER NOT NULL,        -- the call's id in that table
  process_id INTEGER,             -- → processes.id
  name_id INTEGER,                -- launches: the kernel as kern_sum names it (→ strings.id)
  start_ns INTEGER NOT NULL,      -- on the GPU, after capture.start_mono_ns
  duration_ns INTEGER NOT NULL,
  device INTEGER,                 -- CUDA device ordinal
  stream_id INTEGER,              -- CUPTI's stream id
  correlation_id INTEGER,         -- CUPTI's, per process
  activities INTEGER NOT NULL,    -- GPU operations of the call (1; a graph launch: its kernels, copies and memsets)
  by_order INTEGER NOT NULL,      -- 1: joined by call order (CUPTI's driver API record was missing)
  PRIMARY KEY (call_table, row_id)
) WITHOUT ROWID;

CREATE VIEW gpu_times AS
  SELECT CASE g.call_table WHEN 0 THEN 'kernel_launches' WHEN 1 THEN 'copies' ELSE 'stream_ops' END AS call_table,
         g.row_id AS row_id, g.process_id AS process_id,
         (SELECT text FROM strings WHERE id = g.name_id) AS kernel,
         g.start_ns + c.t0 AS start_mono_ns, g.start_ns + c.t0 + g.duration_ns AS end_mono_ns,
         g.duration_ns AS duration_ns, g.device AS device, g.stream_id AS stream_id,
         g.correlation_id AS correlation_id, g.activities AS activities,
         CASE g.by_order WHEN 1 THEN 'order' ELSE 'correlation' END AS joined_by
  FROM gpu_time_rows g, (SELECT coalesce((SELECT start_mono_ns FROM capture WHERE id = 1), 0) AS t0) c;
