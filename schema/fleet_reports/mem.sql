-- mem: per process (host, segment, process_id) and memory kind, from the
-- successful allocations and frees with a size in time order: live bytes
-- as their running sum (arrayCumSum over the sorted (time, row id) pairs),
-- its peak and its last value; the leaks (_leak_rows) joined per process
-- and kind. As locally, the time filters do not apply (live bytes need the
-- whole history).
-- Columns: pid, process, kind, allocs, alloc_bytes, frees, freed_bytes,
--   peak_live_bytes, end_live_bytes, leaks, leaked_bytes.
-- Filters (the filter table): host, pid, process.
SELECT x_pid AS pid, x_process AS process, kind, x_allocs AS allocs, x_alloc_bytes AS alloc_bytes, x_frees AS frees,
       x_freed AS freed_bytes, x_peak AS peak_live_bytes, x_end AS end_live_bytes, toInt64(ifNull(l_n, 0)) AS leaks,
       toInt64(ifNull(l_bytes, 0)) AS leaked_bytes
FROM (SELECT host_id, segment, process_id, kind, any(pid) AS x_pid, any(process) AS x_process,
             toInt64(countIf(op IN ('alloc', 'create'))) AS x_allocs,
             if(x_allocs = 0, CAST(NULL AS Nullable(Int64)),
                toNullable(toInt64(sumIf(bytes, op IN ('alloc', 'create'))))) AS x_alloc_bytes,
             toInt64(countIf(op IN ('free', 'release'))) AS x_frees,
             toInt64(sumIf(bytes, op IN ('free', 'release'))) AS x_freed,
             arrayCumSum(arrayMap(t -> t.3, arraySort(groupArray((ts_ns, op_id, toInt64(multiIf(
               op IN ('alloc', 'create'), assumeNotNull(bytes), op IN ('free', 'release'), -assumeNotNull(bytes), 0)))))))
               AS x_live,
             arrayReduce('max', x_live) AS x_peak, x_live[length(x_live)] AS x_end
      FROM memory_ops
      WHERE (isNull(result) OR result = 0) AND op IN ('alloc', 'free', 'create', 'release') AND isNotNull(bytes)
        AND {{_who}}
      GROUP BY host_id, segment, process_id, kind)
ANY LEFT JOIN (SELECT host_id, segment, process_id, kind, count() AS l_n, sum(ifNull(bytes, 0)) AS l_bytes
               FROM ({{_leak_rows}}) GROUP BY host_id, segment, process_id, kind)
USING (host_id, segment, process_id, kind)
ORDER BY pid, kind, host_id, segment, process_id
