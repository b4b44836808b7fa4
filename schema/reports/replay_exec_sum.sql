-- replay_exec_sum: the capture's schedule re-executed on a GPU (`gpuobs replay
-- FILE --execute`; empty until then; docs/replay.md "Execute"), each stream's
-- GPU busy time in the original and re-executed, and the end-to-end time, as
-- the median over the runs, with the median and the worst error.
-- Columns: stream (the stream's label, legacy or per-thread; "end to end" for
--   the whole schedule), priority, runs, orig_ns, exec_ns (the median over the
--   runs: busy time, or for the end-to-end row the first step's entry to the
--   last step's end), error_pct (median of (exec - orig) / orig), worst_pct (the
--   run farthest from the original), orig_ops, exec_ops (work operations of the
--   stream, each side; the end-to-end row: kernel and graph launches), edits
--   (the what-if edits the runs applied). Streams with no work on either side
--   are left out.
-- Filters: none.
WITH per_stream AS (
  SELECT s.stream AS sid,
         CASE s.kind WHEN 'legacy' THEN 'legacy' WHEN 'per_thread' THEN 'per-thread'
              ELSE coalesce(nullif(s.label, ''), 'stream') END AS stream,
         s.priority, s.run, s.orig_busy_ns AS orig_ns, s.exec_busy_ns AS exec_ns, s.busy_error AS err,
         s.orig_work_ops AS orig_ops, s.exec_work_ops AS exec_ops
  FROM replay_exec_streams s
  WHERE s.orig_work_ops > 0 OR s.exec_work_ops > 0  -- a stream created and never used (PyTorch's pool) is noise
  UNION ALL
  SELECT -1, 'end to end', NULL, r.run, r.orig_e2e_ns, r.exec_e2e_ns, r.e2e_error, r.orig_launches, r.exec_launches
  FROM replay_exec_runs r
),
ranked AS (
  SELECT *, row_number() OVER (PARTITION BY sid ORDER BY exec_ns) AS by_ns,
            row_number() OVER (PARTITION BY sid ORDER BY err) AS by_err,
            row_number() OVER (PARTITION BY sid ORDER BY abs(err) DESC) AS by_worst,
            count(*) OVER (PARTITION BY sid) AS n
  FROM per_stream
)
SELECT stream,
       max(priority)                                                   AS priority,
       max(n)                                                          AS runs,
       max(orig_ns)                                                    AS orig_ns,
       CAST(avg(CASE WHEN by_ns IN ((n + 1) / 2, n / 2 + 1) THEN exec_ns END) AS INTEGER) AS exec_ns,
       round(100.0 * avg(CASE WHEN by_err IN ((n + 1) / 2, n / 2 + 1) THEN err END), 1) AS error_pct,
       round(100.0 * max(CASE WHEN by_worst = 1 THEN err END), 1)      AS worst_pct,
       max(orig_ops)                                                   AS orig_ops,
       max(CASE WHEN by_ns IN ((n + 1) / 2, n / 2 + 1) THEN exec_ops END) AS exec_ops,
       (SELECT edits FROM replay_exec_runs ORDER BY run LIMIT 1)       AS edits
FROM ranked
GROUP BY sid
ORDER BY sid = -1, sid;
