-- kern_sum: per kernel name, its launches and launch geometry over the
-- fleet's shipped launches, and the GPU times CUPTI measured for them
-- (gpu_times; NULL where the database has none, as for a capture recorded
-- without --gpu-time). The local report's columns (schema/reports/kern_sum.sql).
-- Columns: kernel, launches, processes, streams, grid_min / grid_max /
--   grid_avg (blocks per launch), block_min / block_max / block_avg
--   (threads per block), shared_mem_avg (bytes), cooperative (launches);
--   gpu_launches, gpu_total_ns, gpu_avg_ns, gpu_med_ns, gpu_min_ns,
--   gpu_max_ns, gpu_stddev_ns. A process is (host, segment, process).
-- Filters (the filter table): host, pid, process, since, until.
SELECT kernel, launches, processes, streams, grid_min, grid_max, grid_avg, block_min, block_max, block_avg,
       shared_mem_avg, cooperative,
       if(length(g_d) = 0, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(length(g_d)))) AS gpu_launches,
       if(length(g_d) = 0, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(arraySum(g_d)))) AS gpu_total_ns,
       if(length(g_d) = 0, CAST(NULL AS Nullable(Float64)), toNullable(toFloat64(g_mean))) AS gpu_avg_ns,
       if(length(g_d) = 0, CAST(NULL AS Nullable(Float64)),
          toNullable((g_d[intDiv(length(g_d) + 1, 2)] + g_d[intDiv(length(g_d) + 2, 2)]) / 2)) AS gpu_med_ns,
       if(length(g_d) = 0, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(g_d[1]))) AS gpu_min_ns,
       if(length(g_d) = 0, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(g_d[length(g_d)]))) AS gpu_max_ns,
       if(length(g_d) = 0, CAST(NULL AS Nullable(Float64)), toNullable(toFloat64(g_sd))) AS gpu_stddev_ns
FROM (SELECT kernel, toInt64(count()) AS launches, toInt64(uniqExact(host_id, segment, process_id)) AS processes,
             toInt64(uniqExact(host_id, segment, process_id, stream)) AS streams,
             toInt64(min(toUInt64(grid_x) * grid_y * grid_z)) AS grid_min,
             toInt64(max(toUInt64(grid_x) * grid_y * grid_z)) AS grid_max,
             toFloat64(sum(toUInt64(grid_x) * grid_y * grid_z) / count()) AS grid_avg,
             toInt64(min(toUInt64(block_x) * block_y * block_z)) AS block_min,
             toInt64(max(toUInt64(block_x) * block_y * block_z)) AS block_max,
             toFloat64(sum(toUInt64(block_x) * block_y * block_z) / count()) AS block_avg,
             toFloat64(sum(shared_mem) / count()) AS shared_mem_avg, toInt64(sum(cooperative)) AS cooperative
      FROM launches WHERE {{_where}} GROUP BY kernel)
ANY LEFT JOIN ({{_kern_gpu_times}}) USING (kernel)
ORDER BY ifNull(gpu_total_ns, 0) DESC, launches DESC, kernel
