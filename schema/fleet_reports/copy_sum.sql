-- copy_sum: per direction and mode (async, sync), the successful copies,
-- their bytes and host time, the failed ones, and the GPU time CUPTI
-- measured for them (through copies.copy_id: _copies_timed). Grouped by the
-- async flag itself, as the local report is (NULL and 0 are two 'sync'
-- rows there); SQLite sorts NULL first.
-- Columns: direction, mode, copies, bytes, avg_bytes, min_bytes, max_bytes,
--   host_ns, failed, failed_bytes, gpu_copies, gpu_ns, gpu_avg_ns, gpu_gbps.
-- Filters (the filter table): host, pid, process, since, until.
SELECT direction, if(ifNull(async, 0) = 1, 'async', 'sync') AS mode, x_n AS copies, x_bytes AS bytes,
       x_avg AS avg_bytes, x_min AS min_bytes, x_max AS max_bytes, x_host_ns AS host_ns, x_failed AS failed,
       x_failed_bytes AS failed_bytes, g_n AS gpu_copies, g_ns AS gpu_ns, g_avg AS gpu_avg_ns, g_gbps AS gpu_gbps
FROM (SELECT direction, async, {{_copy_aggregates}}
      FROM ({{_copies_timed}}) WHERE kind = 'copy' GROUP BY direction, async)
ORDER BY bytes DESC NULLS LAST, direction NULLS FIRST, mode
