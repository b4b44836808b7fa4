-- calls: every captured CUDA driver API call, per process, family and symbol.
-- Columns: pid, process, family, api, calls, failures (result != 0, but for
--   CUDA_ERROR_NOT_READY from stream/event queries),
--   total_ns / avg_ns (host time inside the call; calls probed at entry only,
--   the launch paths, have no duration and count 0 here). Durations are in ns
--   in every report (gpuobs report --timeunit converts them).
-- Launches are counted from the writer's launch_agg. Filters: :pid, :process.
SELECT p.tgid AS pid, (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process, x.family, x.api, x.calls, x.failures, x.total_ns, x.avg_ns
FROM (
  SELECT a.process_id, a.family, a.api,
         count(*)                                           AS calls,
         sum(a.result IS NOT NULL AND a.result != 0
             AND NOT (a.result = 600 AND a.api IN ('cuStreamQuery', 'cuStreamQuery_ptsz', 'cuEventQuery', 'hipStreamQuery',
                                                 'hipStreamQuery_spt', 'hipEventQuery'))) AS failures,
         coalesce(sum(a.duration_ns), 0)                    AS total_ns,
         round(coalesce(avg(a.duration_ns), 0), 1)          AS avg_ns
  FROM api_calls_timed a GROUP BY a.process_id, a.api
  UNION ALL
  SELECT process_id, 'launch', api, sum(launches), 0, 0, 0.0 FROM launch_agg GROUP BY process_id, api
) x JOIN processes p ON p.id = x.process_id
WHERE (:pid IS NULL OR p.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
ORDER BY x.calls DESC, pid, x.api, x.process_id;
