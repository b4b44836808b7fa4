-- gpu_idle: how long each GPU queue, and each process's GPU work as a whole,
-- sat idle between its first and its last work, and why, from `gpuobs replay
-- FILE` (run it first: the tables are empty until then; docs/replay.md "Idle
-- time"). A gap is host_wait while the host had not enqueued the next op and
-- its thread was not blocked, sync_wait while that thread was blocked in a
-- sync or a synchronous copy, dependency_wait once enqueued behind an event
-- wait or the legacy stream's implicit sync, other once enqueued with no
-- dependency (submission latency). Without `record --gpu-time` the busy
-- intervals are the replay's windows (upper bounds on execution): idle time
-- is then a lower bound.
-- Columns: pid, process, queue ('all': the process, idle only while every
--   one of its queues is; else the queue's kind and handle, like
--   replay_blocked's target), span_ns (first work's start to last work's
--   end), busy_ns, idle_ns, idle_pct, gaps, host_wait_ns, sync_wait_ns,
--   dependency_wait_ns, other_ns, measured (measured, estimated or mixed: the
--   work ops with GPU times), top_host_wait_stack (what the host was doing
--   just before the gaps with the most host_wait: the innermost frames).
-- Filters: :pid, :process, :since_s, :until_s (spans and gaps are clipped to
--   that window).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
w AS (SELECT coalesce(c.t0 + :since_s * 1e9, -9e18) AS lo, coalesce(c.t0 + :until_s * 1e9, 9e18) AS hi FROM c),
spans AS (
  SELECT s.process_id, s.queue_id, s.work_ops, s.measured_ops, p.tgid, p.comm,
         max(0, min(s.end_ns, w.hi) - max(s.start_ns, w.lo)) AS span
  FROM replay_idle_spans s JOIN processes p ON p.id = s.process_id, w
  WHERE (:pid IS NULL OR p.tgid = :pid) AND (:process IS NULL OR p.comm = :process)),
pieces AS (
  SELECT g.id AS gap_id, g.process_id, g.queue_id, g.before_stack_id, x.kind,
         max(0, min(x.end_ns, w.hi) - max(x.start_ns, w.lo)) AS ns
  FROM replay_idle_gaps g JOIN replay_idle_pieces x ON x.gap_id = g.id, w
  WHERE g.end_ns > w.lo AND g.start_ns < w.hi),
per_gap AS (
  SELECT gap_id, process_id, queue_id, before_stack_id, sum(ns) AS idle,
         sum(CASE kind WHEN 'host_wait' THEN ns ELSE 0 END)       AS host,
         sum(CASE kind WHEN 'sync_wait' THEN ns ELSE 0 END)       AS sync,
         sum(CASE kind WHEN 'dependency_wait' THEN ns ELSE 0 END) AS dep,
         sum(CASE kind WHEN 'other' THEN ns ELSE 0 END)           AS other
  FROM pieces GROUP BY gap_id),
per_span AS (
  SELECT process_id, queue_id, count(*) AS gaps, sum(idle) AS idle, sum(host) AS host, sum(sync) AS sync,
         sum(dep) AS dep, sum(other) AS other
  FROM per_gap WHERE idle > 0 GROUP BY process_id, queue_id),
top AS (
  SELECT process_id, queue_id, before_stack_id, sum(host) AS host,
         row_number() OVER (PARTITION BY process_id, queue_id ORDER BY sum(host) DESC, before_stack_id) AS rn
  FROM per_gap GROUP BY process_id, queue_id, before_stack_id)
SELECT s.tgid                                                        AS pid,
       (SELECT name FROM process_names pn WHERE pn.id = s.process_id) AS process,
       CASE WHEN s.queue_id IS NULL THEN 'all'
            ELSE CASE q.kind WHEN 'legacy' THEN 'legacy' WHEN 'per_thread' THEN 'per-thread tid ' || q.tid
                 ELSE coalesce((SELECT label FROM stream_names sn WHERE sn.process_id = q.process_id
                                AND sn.stream = q.handle), 'stream') || ' ' || printf('0x%x', q.handle) END END AS queue,
       CAST(s.span AS INTEGER)                                       AS span_ns,
       CAST(s.span - coalesce(g.idle, 0) AS INTEGER)                 AS busy_ns,
       CAST(coalesce(g.idle, 0) AS INTEGER)                          AS idle_ns,
       CASE WHEN s.span > 0 THEN round(100.0 * coalesce(g.idle, 0) / s.span, 2) END AS idle_pct,
       coalesce(g.gaps, 0)                                           AS gaps,
       CAST(coalesce(g.host, 0) AS INTEGER)                          AS host_wait_ns,
       CAST(coalesce(g.sync, 0) AS INTEGER)                          AS sync_wait_ns,
       CAST(coalesce(g.dep, 0) AS INTEGER)                           AS dependency_wait_ns,
       CAST(coalesce(g.other, 0) AS INTEGER)                         AS other_ns,
       CASE WHEN s.measured_ops = s.work_ops THEN 'measured' WHEN s.measured_ops = 0 THEN 'estimated'
            ELSE 'mixed' END                                         AS measured,
       CASE WHEN t.host > 0 THEN coalesce((SELECT stack FROM stack_heads h WHERE h.stack_id = t.before_stack_id),
                                          '(no stack)') END          AS top_host_wait_stack
FROM spans s LEFT JOIN replay_queues q ON q.id = s.queue_id
     LEFT JOIN per_span g ON g.process_id = s.process_id AND g.queue_id IS s.queue_id
     LEFT JOIN top t ON t.process_id = s.process_id AND t.queue_id IS s.queue_id AND t.rn = 1
WHERE s.span > 0 OR (:since_s IS NULL AND :until_s IS NULL)
ORDER BY pid, s.process_id, s.queue_id IS NOT NULL, s.queue_id;
