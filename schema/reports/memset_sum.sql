-- memset_sum: memsets by API and kind (sync or async), successful calls only.
-- Columns: api, mode, memsets, bytes, avg_bytes, host_ns, failed,
--   failed_bytes (what the failed calls asked to set); with
--   --gpu-time (schema 20): gpu_memsets, gpu_ns (their time on the GPU).
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture)
SELECT x.api                                                 AS api,
       CASE x.async WHEN 1 THEN 'async' ELSE 'sync' END      AS mode,
       sum(x.result IS NULL OR x.result = 0)                 AS memsets,
       sum(CASE WHEN x.result IS NULL OR x.result = 0 THEN x.bytes ELSE 0 END) AS bytes,
       round(avg(CASE WHEN x.result IS NULL OR x.result = 0 THEN x.bytes END), 1) AS avg_bytes,
       coalesce(sum(CASE WHEN x.result IS NULL OR x.result = 0 THEN x.duration_ns END), 0) AS host_ns,
       sum(x.result IS NOT NULL AND x.result != 0)           AS failed,
       coalesce(sum(CASE WHEN x.result IS NOT NULL AND x.result != 0 THEN x.bytes END), 0) AS failed_bytes,
       count(g.duration_ns)                                  AS gpu_memsets,
       sum(g.duration_ns)                                    AS gpu_ns
FROM copies x JOIN processes p ON p.id = x.process_id
LEFT JOIN gpu_time_rows g ON g.call_table = 1 AND g.row_id = x.id, c
WHERE x.kind = 'memset'
  AND (:pid IS NULL OR x.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR x.ts_mono_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR x.ts_mono_ns <= c.t0 + :until_s * 1e9)
GROUP BY x.api, x.async
ORDER BY bytes DESC, api, mode;
