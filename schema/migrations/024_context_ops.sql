-- Schema version 24: the CUDA driver's set-up calls (issue 37): cuInit,
-- cuDriverGetVersion, cuDeviceGet / GetCount / GetAttribute / TotalMem,
-- cuCtxCreate / Destroy and the primary context's retain, release, reset
-- and flags. One row per call, with the device, the context and what the
-- call returned through its pointer; in api_calls and api_calls_timed as
-- family 'context', so calls, api_sum and errors cover them.
CREATE TABLE context_op_rows (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  api_id INTEGER NOT NULL REFERENCES strings (id), result INTEGER, per_thread_stream INTEGER NOT NULL,
  op_id INTEGER NOT NULL REFERENCES strings (id),
  device INTEGER, context INTEGER, flags INTEGER, ordinal INTEGER, attribute INTEGER, value INTEGER,
  stack_id INTEGER REFERENCES stacks (id), vendor_id INTEGER NOT NULL REFERENCES strings (id)
);
CREATE INDEX context_ops_process ON context_op_rows (process_id, ts_mono_ns);

CREATE VIEW context_ops AS
  SELECT r.id AS id, r.ts_mono_ns AS ts_mono_ns, r.duration_ns AS duration_ns, r.process_id AS process_id,
         r.tgid AS tgid, r.tid AS tid, (SELECT text FROM strings WHERE id = r.api_id) AS api, r.result AS result,
         (SELECT text FROM strings WHERE id = r.op_id) AS op, r.device AS device, r.context AS context,
         r.flags AS flags, r.ordinal AS ordinal, r.attribute AS attribute, r.value AS value,
         r.stack_id AS stack_id, (SELECT text FROM strings WHERE id = r.vendor_id) AS vendor
  FROM context_op_rows r;

DROP VIEW api_calls;
CREATE VIEW api_calls AS
  SELECT 'launch' AS family, ts_mono_ns, NULL AS duration_ns, process_id, tgid, tid, api, NULL AS result, stack_id, vendor FROM kernel_launches
  UNION ALL SELECT 'memory', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM gpu_modules
  UNION ALL SELECT 'collective', ts_mono_ns, duration_ns, process_id, tgid, tid, api, NULLIF(result, 7), stack_id, 'nccl' FROM nccl_calls
  UNION ALL SELECT 'context', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM context_ops;

DROP VIEW api_calls_timed;
CREATE VIEW api_calls_timed AS
  SELECT 'memory' AS family, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM gpu_modules
  UNION ALL SELECT 'collective', ts_mono_ns, duration_ns, process_id, tgid, tid, api, NULLIF(result, 7), stack_id, 'nccl' FROM nccl_calls
  UNION ALL SELECT 'context', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM context_ops;
