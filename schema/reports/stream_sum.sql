-- stream_sum: per process and stream, the work queued on it: kernels, async
-- copies and memsets (bytes), event records and waits, host functions and
-- graph launches (successful calls). Stream handles: 0 = default (legacy
-- unless compiled per-thread), 1 = CU_STREAM_LEGACY, 2 = CU_STREAM_PER_THREAD.
-- Columns: pid, process, stream, ops, kernels, copies, memsets, bytes,
--   events_recorded, event_waits, host_funcs, graph_launches.
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
ops AS (
  SELECT process_id, tgid, stream, 'kernel' AS what, 0 AS bytes, ts_mono_ns FROM kernel_launches
  UNION ALL SELECT process_id, tgid, stream, kind, bytes, ts_mono_ns FROM copies
    WHERE async = 1 AND (result IS NULL OR result = 0)
  UNION ALL SELECT process_id, tgid, stream, op, 0, ts_mono_ns FROM stream_ops
    WHERE op IN ('event_record', 'wait_event', 'host_func', 'graph_launch') AND (result IS NULL OR result = 0))
SELECT p.tgid AS pid, p.comm AS process, o.stream AS stream,
       count(*)                          AS ops,
       sum(o.what = 'kernel')            AS kernels,
       sum(o.what = 'copy')              AS copies,
       sum(o.what = 'memset')            AS memsets,
       sum(o.bytes)                      AS bytes,
       sum(o.what = 'event_record')      AS events_recorded,
       sum(o.what = 'wait_event')        AS event_waits,
       sum(o.what = 'host_func')         AS host_funcs,
       sum(o.what = 'graph_launch')      AS graph_launches
FROM ops o JOIN processes p ON p.id = o.process_id, c
WHERE (:pid IS NULL OR o.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR o.ts_mono_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR o.ts_mono_ns <= c.t0 + :until_s * 1e9)
GROUP BY o.process_id, o.stream
ORDER BY ops DESC, pid, stream;
