-- Launch aggregates, kept by the writer in the same transaction as the
-- launches themselves: one row per (process, API, function, kernel name,
-- stream, stack, second of the capture). Reports that count launches read
-- these instead of every launch row (10,000,000 launches are a few thousand
-- rows here); with a time filter they read kernel_launches.
CREATE TABLE launch_agg (
  process_id   INTEGER NOT NULL,
  api          TEXT NOT NULL,
  function     INTEGER NOT NULL,
  kernel_name  TEXT NOT NULL,       -- '' when unknown (kernel_launches.kernel_name IS NULL)
  stream       INTEGER NOT NULL,
  stack_id     INTEGER NOT NULL,    -- 0 when the launch has no stack
  bucket_s     INTEGER NOT NULL,    -- whole seconds after capture.start_mono_ns
  launches     INTEGER NOT NULL,
  grid_sum     INTEGER NOT NULL,    -- blocks (grid_x * grid_y * grid_z) summed over the launches
  grid_min     INTEGER NOT NULL,
  grid_max     INTEGER NOT NULL,
  block_sum    INTEGER NOT NULL,    -- threads per block, summed
  block_min    INTEGER NOT NULL,
  block_max    INTEGER NOT NULL,
  shmem_sum    INTEGER NOT NULL,
  cooperative  INTEGER NOT NULL,    -- cooperative launches
  first_ns     INTEGER NOT NULL,
  last_ns      INTEGER NOT NULL,
  PRIMARY KEY (process_id, api, function, kernel_name, stream, stack_id, bucket_s)
) WITHOUT ROWID;

-- Every API call but the launches (those are in kernel_launches and, summed,
-- in launch_agg): the calls that have a result and a duration.
CREATE VIEW api_calls_timed AS
  SELECT 'memory' AS family, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id FROM gpu_modules;
