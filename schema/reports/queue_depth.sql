-- queue_depth: per GPU queue, how many ops were pending on it (enqueued and
-- not yet proven complete) over time, from `gpuobs replay FILE`'s depth
-- samples (run it first; docs/replay.md "Depth"). Completion is what the
-- host observed, so depth is an upper bound on what the GPU still had queued.
-- Columns: pid, process, queue (kind and handle, like replay_blocked's
--   target), span_ns (first enqueue to when the queue last drained, or the
--   replay's end while ops stay unproven), mean_depth (time-weighted),
--   p50_depth, p95_depth (time-weighted: the least depth the queue was at or
--   below for 50% / 95% of the span), max_depth, empty_ns (time at depth 0
--   inside the span), empty_pct.
-- Filters: :pid, :process, :since_s, :until_s (the span is clipped to that window).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
w AS (SELECT coalesce(c.t0 + :since_s * 1e9, -9e18) AS lo, coalesce(c.t0 + :until_s * 1e9, 9e18) AS hi FROM c),
s AS (
  SELECT d.queue_id, d.ts_ns, d.depth, lead(d.ts_ns) OVER (PARTITION BY d.queue_id ORDER BY d.ts_ns) AS next_ts
  FROM replay_depth d JOIN replay_queues q ON q.id = d.queue_id JOIN processes p ON p.id = q.process_id
  WHERE (:pid IS NULL OR p.tgid = :pid) AND (:process IS NULL OR p.comm = :process)),
iv AS (
  SELECT s.queue_id, s.depth, max(s.ts_ns, w.lo) AS a,
         min(CASE WHEN s.next_ts IS NOT NULL THEN s.next_ts WHEN s.depth > 0 THEN r.end_ns ELSE s.ts_ns END, w.hi) AS b
  FROM s, w, replay_runs r),
dd AS (SELECT queue_id, depth, sum(b - a) AS t FROM iv WHERE b > a GROUP BY queue_id, depth),
cum AS (
  SELECT queue_id, depth, t, sum(t) OVER (PARTITION BY queue_id ORDER BY depth) AS upto,
         sum(t) OVER (PARTITION BY queue_id) AS total
  FROM dd)
SELECT q.tgid                                                AS pid,
       (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       CASE q.kind WHEN 'legacy' THEN 'legacy' WHEN 'per_thread' THEN 'per-thread tid ' || q.tid
            ELSE coalesce((SELECT label FROM stream_names sn WHERE sn.process_id = q.process_id
                           AND sn.stream = q.handle), 'stream') || ' ' || printf('0x%x', q.handle) END AS queue,
       CAST(max(total) AS INTEGER)                           AS span_ns,
       round(1.0 * sum(depth * t) / max(total), 3)           AS mean_depth,
       min(CASE WHEN upto * 2 >= total THEN depth END)       AS p50_depth,
       min(CASE WHEN upto * 100 >= total * 95 THEN depth END) AS p95_depth,
       max(depth)                                            AS max_depth,
       CAST(sum(CASE WHEN depth = 0 THEN t ELSE 0 END) AS INTEGER) AS empty_ns,
       round(100.0 * sum(CASE WHEN depth = 0 THEN t ELSE 0 END) / max(total), 2) AS empty_pct
FROM cum JOIN replay_queues q ON q.id = cum.queue_id JOIN processes p ON p.id = q.process_id
GROUP BY cum.queue_id
ORDER BY pid, cum.queue_id;
