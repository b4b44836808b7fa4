-- proc_sum: per process that used the GPU, everything at a glance.
-- Columns: pid, process, api_calls (every probed driver call, launches
--   included), kernels, copy_bytes (successful copies), device_mem_peak
--   (bytes live at once: kinds device, pitch, async, pool, physical),
--   ioctls (GPU driver ioctls), errors (failed API calls, not counting NOT_READY
--   from stream/event queries, + failed ioctls),
--   first_s / last_s (first and last activity, seconds after capture start).
-- Filters: :pid, :process (:since_s/:until_s do not apply: it sums whole processes).
-- Launches are counted from the writer's launch_agg.
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
act AS (SELECT process_id, ts_mono_ns AS first_ns, ts_mono_ns AS last_ns FROM api_calls_timed
        UNION ALL SELECT process_id, ts_mono_ns, ts_mono_ns FROM ioctls
        UNION ALL SELECT process_id, first_ns, last_ns FROM launch_agg),
span AS (SELECT process_id, min(first_ns) AS first_ns, max(last_ns) AS last_ns FROM act GROUP BY process_id),
kern AS (SELECT process_id, sum(launches) AS n FROM launch_agg GROUP BY process_id)
SELECT p.tgid AS pid, (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       (SELECT count(*) FROM api_calls_timed a WHERE a.process_id = p.id) + coalesce(kern.n, 0)  AS api_calls,
       coalesce(kern.n, 0)                                                                       AS kernels,
       (SELECT coalesce(sum(x.bytes), 0) FROM copies x WHERE x.process_id = p.id AND x.kind = 'copy'
          AND (x.result IS NULL OR x.result = 0))                                               AS copy_bytes,
       (SELECT coalesce(max(live), 0) FROM (
          SELECT sum(CASE WHEN m.op IN ('alloc', 'create') THEN m.bytes ELSE -m.bytes END)
                   OVER (ORDER BY m.ts_mono_ns, m.id) AS live
          FROM memory_ops m WHERE m.process_id = p.id AND (m.result IS NULL OR m.result = 0)
            AND m.op IN ('alloc', 'free', 'create', 'release') AND m.bytes IS NOT NULL
            AND m.kind IN ('device', 'pitch', 'async', 'pool', 'physical')))                    AS device_mem_peak,
       (SELECT count(*) FROM ioctls i WHERE i.process_id = p.id)                                 AS ioctls,
       (SELECT count(*) FROM api_calls_timed a WHERE a.process_id = p.id AND a.result IS NOT NULL AND a.result != 0
          AND NOT (a.result = 600 AND a.api IN ('cuStreamQuery', 'cuStreamQuery_ptsz', 'cuEventQuery', 'hipStreamQuery',
                                                'hipStreamQuery_spt', 'hipEventQuery'))) +
       (SELECT count(*) FROM ioctls i WHERE i.process_id = p.id AND coalesce(i.failed, i.ret < 0)) AS errors,
       round((span.first_ns - c.t0) / 1e9, 6)                                                   AS first_s,
       round((span.last_ns - c.t0) / 1e9, 6)                                                    AS last_s
FROM processes p JOIN span ON span.process_id = p.id LEFT JOIN kern ON kern.process_id = p.id, c
WHERE (:pid IS NULL OR p.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
ORDER BY api_calls DESC, pid;
