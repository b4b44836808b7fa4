-- calls: per process (host, segment, process) and API, the timed calls
-- with their failures and time, then the launches (entry only: counted, no
-- time).
-- Columns: pid, process, family ('launch' for launches), api, calls,
--   failures, total_ns, avg_ns.
-- Filters (the filter table): host, pid, process, since, until.
SELECT x_pid AS pid, x_process AS process, x_family AS family, api, x_calls AS calls, x_failures AS failures,
       x_total AS total_ns, x_avg AS avg_ns
FROM (SELECT host_id, segment, process_id, api, toInt64(any(pid)) AS x_pid, any(process) AS x_process,
             any(family) AS x_family, toInt64(count()) AS x_calls, toInt64(countIf({{_failed}})) AS x_failures,
             toInt64(ifNull(sum(duration_ns), 0)) AS x_total,
             if(count(duration_ns) = 0, 0., toFloat64(sum(duration_ns) / count(duration_ns))) AS x_avg
      FROM api_calls WHERE {{_where}} GROUP BY host_id, segment, process_id, api
      UNION ALL
      SELECT host_id, segment, process_id, api, toInt64(any(pid)), any(process), 'launch', toInt64(count()),
             toInt64(0), toInt64(0), 0.
      FROM launches WHERE {{_where}} GROUP BY host_id, segment, process_id, api)
ORDER BY calls DESC, pid, api, host_id, segment, process_id
