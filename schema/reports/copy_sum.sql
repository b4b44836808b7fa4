-- copy_sum: memory copies by direction and kind (sync or async), successful
-- calls only (nsys stats cuda_gpu_mem_size_sum, with the host time instead
-- of GPU time). Directions: HtoD, DtoH, DtoD, HtoH, peer, AtoD..., default
-- (unified addressing: the driver decides).
-- Columns: direction, mode (sync/async), copies, bytes, avg_bytes, min_bytes,
--   max_bytes, host_ns (time inside the calls), failed (calls that failed),
--   failed_bytes (what the failed calls asked to copy: copies + failed is
--   every call of the copies table, bytes + failed_bytes its bytes; a
--   driver that fails every call, like the toolkit's stub libcuda, shows
--   0 bytes and all of them here);
--   with --gpu-time (schema 20): gpu_copies (copies with a measured GPU
--   time), gpu_ns (their time on the GPU), gpu_avg_ns, gpu_gbps (their
--   bytes over their GPU time, GB/s).
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture)
SELECT x.direction                                           AS direction,
       CASE x.async WHEN 1 THEN 'async' ELSE 'sync' END      AS mode,
       sum(x.result IS NULL OR x.result = 0)                 AS copies,
       sum(CASE WHEN x.result IS NULL OR x.result = 0 THEN x.bytes ELSE 0 END) AS bytes,
       round(avg(CASE WHEN x.result IS NULL OR x.result = 0 THEN x.bytes END), 1) AS avg_bytes,
       min(CASE WHEN x.result IS NULL OR x.result = 0 THEN x.bytes END) AS min_bytes,
       max(CASE WHEN x.result IS NULL OR x.result = 0 THEN x.bytes END) AS max_bytes,
       coalesce(sum(CASE WHEN x.result IS NULL OR x.result = 0 THEN x.duration_ns END), 0) AS host_ns,
       sum(x.result IS NOT NULL AND x.result != 0)           AS failed,
       coalesce(sum(CASE WHEN x.result IS NOT NULL AND x.result != 0 THEN x.bytes END), 0) AS failed_bytes,
       count(g.duration_ns)                                  AS gpu_copies,
       sum(g.duration_ns)                                    AS gpu_ns,
       round(avg(g.duration_ns), 1)                          AS gpu_avg_ns,
       round(sum(CASE WHEN g.duration_ns IS NOT NULL THEN x.bytes END) * 1.0 / sum(g.duration_ns), 3) AS gpu_gbps
FROM copies x JOIN processes p ON p.id = x.process_id
LEFT JOIN gpu_time_rows g ON g.call_table = 1 AND g.row_id = x.id, c
WHERE x.kind = 'copy'
  AND (:pid IS NULL OR x.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR x.ts_mono_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR x.ts_mono_ns <= c.t0 + :until_s * 1e9)
GROUP BY x.direction, x.async
ORDER BY bytes DESC, direction, mode;
