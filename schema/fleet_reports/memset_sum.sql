-- memset_sum: per API and mode (async, sync), the successful memsets, their
-- bytes and host time, the failed ones, and the GPU time CUPTI measured for
-- them (through copies.copy_id: _copies_timed).
-- Columns: api, mode, memsets, bytes, avg_bytes, host_ns, failed,
--   failed_bytes, gpu_memsets, gpu_ns.
-- Filters (the filter table): host, pid, process, since, until.
SELECT api, if(ifNull(async, 0) = 1, 'async', 'sync') AS mode, x_n AS memsets, x_bytes AS bytes, x_avg AS avg_bytes,
       x_host_ns AS host_ns, x_failed AS failed, x_failed_bytes AS failed_bytes, g_n AS gpu_memsets, g_ns AS gpu_ns
FROM (SELECT api, async, {{_copy_aggregates}}
      FROM ({{_copies_timed}}) WHERE kind = 'memset' GROUP BY api, async)
ORDER BY bytes DESC NULLS LAST, api, mode
