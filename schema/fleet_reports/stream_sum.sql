-- stream_sum: per process (host, segment, process) and stream, the work
-- queued on it: kernels, successful async copies and memsets (bytes), and
-- the stream operations that order it; a stream named as the local report
-- names it (_stream_labels).
-- Columns: pid, process, stream, ops, kernels, copies, memsets, bytes,
--   events_recorded, event_waits, host_funcs, graph_launches, handle.
-- Filters (the filter table): host, pid, process, since, until (the stream
--   labels: host, pid and process only).
SELECT x_pid AS pid, x_process AS process,
       if(isNull(o_stream), CAST(NULL AS Nullable(String)), toNullable({{_stream_label}})) AS stream, x_ops AS ops,
       x_kernels AS kernels, x_copies AS copies, x_memsets AS memsets, x_bytes AS bytes, x_er AS events_recorded,
       x_ew AS event_waits, x_hf AS host_funcs, x_gl AS graph_launches, o_stream AS handle
FROM (SELECT host_id, segment, process_id, o_stream, ifNull(o_stream, toUInt64(0)) AS l_stream,
             toInt64(any(pid)) AS x_pid, any(process) AS x_process, toInt64(count()) AS x_ops,
             toInt64(countIf(o_what = 'kernel')) AS x_kernels, toInt64(countIf(o_what = 'copy')) AS x_copies,
             toInt64(countIf(o_what = 'memset')) AS x_memsets, sum(o_bytes) AS x_bytes,
             toInt64(countIf(o_what = 'event_record')) AS x_er, toInt64(countIf(o_what = 'wait_event')) AS x_ew,
             toInt64(countIf(o_what = 'host_func')) AS x_hf, toInt64(countIf(o_what = 'graph_launch')) AS x_gl
      FROM (SELECT host_id, segment, process_id, pid, process, toNullable(stream) AS o_stream, 'kernel' AS o_what,
                   toNullable(toInt64(0)) AS o_bytes
            FROM launches WHERE {{_where}}
            UNION ALL
            SELECT host_id, segment, process_id, pid, process, stream, kind, bytes FROM copies
            WHERE ifNull(async, 0) = 1 AND ifNull(result, 0) = 0 AND {{_where}}
            UNION ALL
            SELECT host_id, segment, process_id, pid, process, stream, op, toNullable(toInt64(0)) FROM stream_ops
            WHERE op IN ('event_record', 'wait_event', 'host_func', 'graph_launch') AND ifNull(result, 0) = 0
              AND {{_where}})
      GROUP BY host_id, segment, process_id, o_stream)
ANY LEFT JOIN {{_stream_labels}} USING (host_id, segment, process_id, l_stream)
ORDER BY ops DESC, pid, handle NULLS FIRST, host_id, segment, process_id
