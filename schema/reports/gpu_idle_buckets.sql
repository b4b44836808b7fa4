-- gpu_idle_buckets: gpu_idle's per-process rollup (the GPU work of a process
-- is idle only while every one of its queues is) per second of the capture,
-- from `gpuobs replay FILE` (run it first; docs/replay.md "Idle time"): when
-- in the run the GPU waited, and on what. Estimated (no `record --gpu-time`)
-- idle time is a lower bound.
-- Columns: pid, process, t_s (the bucket: whole seconds since the capture
--   started), span_ns (the part of the process's span in the bucket),
--   busy_ns, idle_ns, idle_pct, host_wait_ns, sync_wait_ns,
--   dependency_wait_ns, other_ns.
-- Filters: :pid, :process, :since_s, :until_s (buckets are clipped to that
--   window).
WITH RECURSIVE c AS (SELECT start_mono_ns AS t0 FROM capture),
w AS (SELECT coalesce(c.t0 + :since_s * 1e9, -9e18) AS lo, coalesce(c.t0 + :until_s * 1e9, 9e18) AS hi FROM c),
procs AS (
  SELECT s.process_id, p.tgid, p.comm FROM replay_idle_spans s JOIN processes p ON p.id = s.process_id
  WHERE s.queue_id IS NULL AND (:pid IS NULL OR p.tgid = :pid) AND (:process IS NULL OR p.comm = :process)),
-- The process spans and their idle pieces, clipped to the window, then cut at
-- each second boundary (a row per piece and second it touches).
part(process_id, kind, a, b) AS (
  SELECT s.process_id, 'span', CAST(max(s.start_ns, w.lo) AS INTEGER), CAST(min(s.end_ns, w.hi) AS INTEGER)
  FROM replay_idle_spans s, w WHERE s.queue_id IS NULL AND s.process_id IN (SELECT process_id FROM procs)
  UNION ALL
  SELECT g.process_id, x.kind, CAST(max(x.start_ns, w.lo) AS INTEGER), CAST(min(x.end_ns, w.hi) AS INTEGER)
  FROM replay_idle_gaps g JOIN replay_idle_pieces x ON x.gap_id = g.id, w
  WHERE g.queue_id IS NULL AND g.process_id IN (SELECT process_id FROM procs)),
cut(process_id, kind, a, b) AS (
  SELECT process_id, kind, a, b FROM part WHERE b > a
  UNION ALL
  SELECT process_id, kind, c.t0 + ((a - c.t0) / 1000000000 + 1) * 1000000000, b FROM cut, c
  WHERE c.t0 + ((a - c.t0) / 1000000000 + 1) * 1000000000 < b),
sized AS (
  SELECT process_id, kind, (a - c.t0) / 1000000000 AS t_s,
         min(b, c.t0 + ((a - c.t0) / 1000000000 + 1) * 1000000000) - a AS ns
  FROM cut, c),
bucket AS (
  SELECT process_id, t_s,
         sum(CASE kind WHEN 'span' THEN ns ELSE 0 END)            AS span,
         sum(CASE WHEN kind != 'span' THEN ns ELSE 0 END)         AS idle,
         sum(CASE kind WHEN 'host_wait' THEN ns ELSE 0 END)       AS host,
         sum(CASE kind WHEN 'sync_wait' THEN ns ELSE 0 END)       AS sync,
         sum(CASE kind WHEN 'dependency_wait' THEN ns ELSE 0 END) AS dep,
         sum(CASE kind WHEN 'other' THEN ns ELSE 0 END)           AS other
  FROM sized GROUP BY process_id, t_s)
SELECT p.tgid                                                  AS pid,
       (SELECT name FROM process_names pn WHERE pn.id = p.process_id) AS process,
       b.t_s                                                   AS t_s,
       b.span                                                  AS span_ns,
       b.span - b.idle                                         AS busy_ns,
       b.idle                                                  AS idle_ns,
       CASE WHEN b.span > 0 THEN round(100.0 * b.idle / b.span, 2) END AS idle_pct,
       b.host                                                  AS host_wait_ns,
       b.sync                                                  AS sync_wait_ns,
       b.dep                                                   AS dependency_wait_ns,
       b.other                                                 AS other_ns
FROM bucket b JOIN procs p ON p.process_id = b.process_id
ORDER BY pid, b.process_id, t_s;
