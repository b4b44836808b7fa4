-- stream_sum: per process and stream, the work queued on it: kernels, async
-- copies and memsets (bytes), event records and waits, host functions and
-- graph launches (successful calls).
-- Columns: pid, process, stream (stream_names' label: legacy for handles 0
--   and 1, per-thread for 2, stream#N in the order of first use), ops,
--   kernels, copies, memsets, bytes, events_recorded, event_waits,
--   host_funcs, graph_launches, handle (the stream's handle in this run).
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql). Kernels come
-- from the writer's launch_agg unless a time filter is set.
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
sel AS (SELECT id FROM processes WHERE (:pid IS NULL OR tgid = :pid) AND (:process IS NULL OR comm = :process)),
sn AS MATERIALIZED (SELECT process_id, stream, label FROM stream_names),
win AS (SELECT CASE WHEN :since_s IS NULL THEN -9e18 ELSE t0 + :since_s * 1e9 END AS lo,
               CASE WHEN :until_s IS NULL THEN 9e18 ELSE t0 + :until_s * 1e9 END AS hi FROM c),
ops AS (
  SELECT process_id, stream, 'kernel' AS what, 0 AS bytes, launches AS n FROM launch_agg
    WHERE :since_s IS NULL AND :until_s IS NULL AND process_id IN sel
  UNION ALL SELECT process_id, stream, 'kernel', 0, 1 FROM kernel_launches_between((SELECT lo FROM win), (SELECT hi FROM win)), win
    WHERE NOT (:since_s IS NULL AND :until_s IS NULL) AND process_id IN sel AND ts_mono_ns BETWEEN lo AND hi
  UNION ALL SELECT process_id, stream, kind, bytes, 1 FROM copies, win
    WHERE async = 1 AND (result IS NULL OR result = 0) AND process_id IN sel AND ts_mono_ns BETWEEN lo AND hi
  UNION ALL SELECT process_id, stream, op, 0, 1 FROM stream_ops, win
    WHERE op IN ('event_record', 'wait_event', 'host_func', 'graph_launch') AND (result IS NULL OR result = 0)
      AND process_id IN sel AND ts_mono_ns BETWEEN lo AND hi)
SELECT p.tgid AS pid, (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       sn.label                                          AS stream,
       sum(o.n)                                          AS ops,
       sum(CASE WHEN o.what = 'kernel' THEN o.n ELSE 0 END) AS kernels,
       sum(o.what = 'copy')                              AS copies,
       sum(o.what = 'memset')                            AS memsets,
       sum(o.bytes)                                      AS bytes,
       sum(o.what = 'event_record')                      AS events_recorded,
       sum(o.what = 'wait_event')                        AS event_waits,
       sum(o.what = 'host_func')                         AS host_funcs,
       sum(o.what = 'graph_launch')                      AS graph_launches,
       o.stream                                          AS handle
FROM ops o JOIN processes p ON p.id = o.process_id
     LEFT JOIN sn ON sn.process_id = o.process_id AND sn.stream = o.stream
GROUP BY o.process_id, o.stream
ORDER BY ops DESC, pid, o.stream, o.process_id;
