-- sync_sum: per process, API, target and handle, the synchronizations and
-- the time they blocked; a process is (host, segment, process_id), a
-- stream named as the local report names it (_stream_labels).
-- Columns: pid, process, api, target, stream (for a stream target), event
--   (an event's or fence's handle), syncs, blocked_ns, avg_ns, max_ns,
--   failed.
-- Filters (the filter table): host, pid, process, since, until (the stream
--   labels: host, pid and process only).
SELECT x_pid AS pid, x_process AS process, api, target,
       if(target = 'stream', toNullable({{_stream_label}}), CAST(NULL AS Nullable(String))) AS stream,
       if(target IN ('event', 'fence'), handle, CAST(NULL AS Nullable(UInt64))) AS event, x_syncs AS syncs,
       x_blocked AS blocked_ns, x_avg AS avg_ns, x_max AS max_ns, x_failed AS failed
FROM (SELECT host_id, segment, process_id, any(pid) AS x_pid, any(process) AS x_process, api, target, handle,
             ifNull(handle, toUInt64(0)) AS l_stream, toInt64(count()) AS x_syncs,
             toInt64(ifNull(sum(blocked_ns), 0)) AS x_blocked,
             if(count(blocked_ns) = 0, CAST(NULL AS Nullable(Float64)),
                toNullable(toFloat64(sum(blocked_ns) / count(blocked_ns)))) AS x_avg,
             max(blocked_ns) AS x_max, toInt64(countIf(NOT {{_ok}})) AS x_failed
      FROM (SELECT *, multiIf(target = 'stream', stream, target IN ('event', 'fence'), event,
                              CAST(NULL AS Nullable(UInt64))) AS handle
            FROM syncs WHERE {{_where}})
      GROUP BY host_id, segment, process_id, api, target, handle)
ANY LEFT JOIN {{_stream_labels}} USING (host_id, segment, process_id, l_stream)
ORDER BY blocked_ns DESC, pid, api, target NULLS FIRST, handle NULLS FIRST, host_id
