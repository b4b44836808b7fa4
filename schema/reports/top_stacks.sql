-- top_stacks: the 50 call stacks behind the most launches, then the most API
-- calls; with the bytes they copied and allocated and the time they blocked.
-- Columns: stack_id, launches, calls (every API call, launches included),
--   bytes_copied, bytes_allocated, blocked_ns, depth, end_reason, stack
--   (innermost four frames; all of them: gpuobs stacks or stack_symbols).
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql). Launches come
-- from the writer's launch_agg unless a time filter is set.
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
sel AS (SELECT id FROM processes WHERE (:pid IS NULL OR tgid = :pid) AND (:process IS NULL OR comm = :process)),
win AS (SELECT CASE WHEN :since_s IS NULL THEN -9e18 ELSE t0 + :since_s * 1e9 END AS lo,
               CASE WHEN :until_s IS NULL THEN 9e18 ELSE t0 + :until_s * 1e9 END AS hi FROM c),
lc AS (SELECT stack_id, launches AS n FROM launch_agg WHERE :since_s IS NULL AND :until_s IS NULL
         AND stack_id != 0 AND process_id IN sel
       UNION ALL SELECT stack_id, 1 FROM kernel_launches_between((SELECT lo FROM win), (SELECT hi FROM win)), win WHERE NOT (:since_s IS NULL AND :until_s IS NULL)
         AND stack_id IS NOT NULL AND process_id IN sel AND ts_mono_ns BETWEEN lo AND hi),
oc AS (SELECT stack_id, 0 AS launches, 1 AS n FROM api_calls_timed, win
       WHERE stack_id IS NOT NULL AND process_id IN sel AND ts_mono_ns BETWEEN lo AND hi),
calls AS (SELECT stack_id, sum(n) AS n, sum(launches) AS launches FROM
            (SELECT stack_id, n AS launches, n FROM lc UNION ALL SELECT stack_id, launches, n FROM oc) GROUP BY 1),
cp AS (SELECT stack_id, sum(bytes) AS b FROM copies, win WHERE kind = 'copy' AND (result IS NULL OR result = 0)
       AND process_id IN sel AND ts_mono_ns BETWEEN lo AND hi GROUP BY 1),
al AS (SELECT stack_id, sum(bytes) AS b FROM memory_ops, win WHERE op IN ('alloc', 'create')
       AND (result IS NULL OR result = 0) AND process_id IN sel AND ts_mono_ns BETWEEN lo AND hi GROUP BY 1),
bl AS (SELECT stack_id, sum(blocked_ns) AS t FROM syncs, win WHERE process_id IN sel
       AND ts_mono_ns BETWEEN lo AND hi GROUP BY 1)
SELECT s.id                          AS stack_id,
       calls.launches                AS launches,
       calls.n                       AS calls,
       coalesce(cp.b, 0)             AS bytes_copied,
       coalesce(al.b, 0)             AS bytes_allocated,
       coalesce(bl.t, 0)             AS blocked_ns,
       s.depth                       AS depth,
       s.end_reason                  AS end_reason,
       (SELECT h.stack FROM stack_heads h WHERE h.stack_id = s.id) AS stack
FROM calls JOIN stacks s ON s.id = calls.stack_id
LEFT JOIN cp ON cp.stack_id = s.id LEFT JOIN al ON al.stack_id = s.id LEFT JOIN bl ON bl.stack_id = s.id
ORDER BY launches DESC, calls DESC, stack_id
LIMIT 50;
