-- launches: per process (host, segment, process), API and kernel, the
-- launches, the streams they went to and the first and last of them in
-- seconds after the segment's start. The time filters apply too (the local
-- report takes none: a fleet's launches are too many to read whole).
-- Columns: pid, process, api, kernel, launches, streams, first_s, last_s.
-- Filters (the filter table): host, pid, process, since, until.
SELECT x_pid AS pid, x_process AS process, api, kernel, x_n AS launches, x_streams AS streams, x_first AS first_s,
       x_last AS last_s
FROM (SELECT host_id, segment, process_id, api, kernel, toInt64(any(pid)) AS x_pid, any(process) AS x_process,
             toInt64(count()) AS x_n, toInt64(uniqExact(stream)) AS x_streams,
             if(s_start = 0, CAST(NULL AS Nullable(Float64)), toNullable(toFloat64(min(ts_ns) - s_start) / 1e9)) AS x_first,
             if(s_start = 0, CAST(NULL AS Nullable(Float64)), toNullable(toFloat64(max(ts_ns) - s_start) / 1e9)) AS x_last
      FROM (SELECT * FROM launches WHERE {{_where}}) ANY LEFT JOIN {{_segment_starts}} USING (host_id, segment)
      GROUP BY host_id, segment, process_id, api, kernel, s_start)
ORDER BY launches DESC, pid, kernel, api, host_id, segment, process_id
