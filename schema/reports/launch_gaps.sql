-- launch_gaps: per GPU queue, the time between consecutive kernel launches
-- enqueued on it (how fast the host fed the queue), from `gpuobs replay FILE`
-- (run it first; docs/replay.md "Idle time"), and, with `record --gpu-time`,
-- how many kernels ran shorter than the host took to launch the next one
-- (launch-bound).
-- Columns: pid, process, queue (kind and handle, like replay_blocked's
--   target), launches, intervals (consecutive pairs), gap_p50_ns,
--   gap_p95_ns, gap_p99_ns (nearest rank), gap_max_ns, gap_total_ns,
--   longest_gap_stack (the launch before the longest gap: innermost
--   frames), measured_launches (with a GPU time), short_launches (measured
--   GPU duration below the queue's gap_p50_ns: the GPU finished before the
--   host could submit the next), short_pct (of measured_launches); the last
--   two NULL without GPU times or intervals.
-- Filters: :pid, :process, :since_s, :until_s (launches enqueued in that window).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
l AS (
  SELECT o.id, o.queue_id, o.seq, o.enqueue_ns, o.stack_id, o.source_id,
         lead(o.enqueue_ns) OVER (PARTITION BY o.queue_id ORDER BY o.seq) - o.enqueue_ns AS gap_after
  FROM replay_ops o JOIN replay_queues q ON q.id = o.queue_id JOIN processes p ON p.id = q.process_id, c
  WHERE o.kind = 'launch' AND (:pid IS NULL OR p.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
    AND (:since_s IS NULL OR o.enqueue_ns >= c.t0 + :since_s * 1e9)
    AND (:until_s IS NULL OR o.enqueue_ns <= c.t0 + :until_s * 1e9)),
ranked AS (
  SELECT queue_id, id, stack_id, gap_after AS gap,
         row_number() OVER (PARTITION BY queue_id ORDER BY gap_after, id) AS rn,
         row_number() OVER (PARTITION BY queue_id ORDER BY gap_after DESC, id) AS longest,
         count(*) OVER (PARTITION BY queue_id) AS n
  FROM l WHERE gap_after IS NOT NULL),
dist AS (
  SELECT queue_id, max(n) AS intervals,
         max(CASE WHEN rn = (n + 1) / 2 THEN gap END)       AS p50,
         max(CASE WHEN rn = (95 * n + 99) / 100 THEN gap END) AS p95,
         max(CASE WHEN rn = (99 * n + 99) / 100 THEN gap END) AS p99,
         max(gap) AS mx, sum(gap) AS total,
         max(CASE WHEN longest = 1 THEN stack_id END) AS longest_stack
  FROM ranked GROUP BY queue_id),
gpu AS (
  SELECT l.queue_id, count(*) AS measured, sum(t.duration_ns < d.p50) AS short
  FROM l JOIN gpu_time_rows t ON t.call_table = 0 AND t.row_id = l.source_id
       LEFT JOIN dist d ON d.queue_id = l.queue_id
  GROUP BY l.queue_id)
SELECT q.tgid                                                AS pid,
       (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       CASE q.kind WHEN 'legacy' THEN 'legacy' WHEN 'per_thread' THEN 'per-thread tid ' || q.tid
            ELSE coalesce((SELECT label FROM stream_names sn WHERE sn.process_id = q.process_id
                           AND sn.stream = q.handle), 'stream') || ' ' || printf('0x%x', q.handle) END AS queue,
       count(*)                                              AS launches,
       coalesce(d.intervals, 0)                              AS intervals,
       d.p50                                                 AS gap_p50_ns,
       d.p95                                                 AS gap_p95_ns,
       d.p99                                                 AS gap_p99_ns,
       d.mx                                                  AS gap_max_ns,
       d.total                                               AS gap_total_ns,
       CASE WHEN d.longest_stack IS NOT NULL THEN
         coalesce((SELECT stack FROM stack_heads h WHERE h.stack_id = d.longest_stack), '(no stack)') END
                                                             AS longest_gap_stack,
       coalesce(g.measured, 0)                               AS measured_launches,
       CASE WHEN d.p50 IS NOT NULL THEN g.short END          AS short_launches,
       CASE WHEN d.p50 IS NOT NULL AND g.measured > 0 THEN round(100.0 * g.short / g.measured, 1) END AS short_pct
FROM l JOIN replay_queues q ON q.id = l.queue_id JOIN processes p ON p.id = q.process_id
     LEFT JOIN dist d ON d.queue_id = l.queue_id LEFT JOIN gpu g ON g.queue_id = l.queue_id
GROUP BY l.queue_id
ORDER BY gap_total_ns DESC, pid, l.queue_id;
