-- _kern_gpu_times: per kernel name, the GPU times CUPTI measured for its
-- launches (gpu_times, call_table 'kernel_launches'): g_d the sorted
-- durations (the median is the mean of the middle two), g_mean, and g_sd
-- the population standard deviation as the local report computes it,
-- sqrt(max(E[d^2] - E[d]^2, 0)). A database without gpu_times reads
-- _kern_gpu_times_none instead (fleet_reports.cpp).
SELECT ifNull(kernel, '') AS kernel, arraySort(groupArray(duration_ns)) AS g_d, toFloat64(avg(duration_ns)) AS g_mean,
       sqrt(greatest(avg(toFloat64(duration_ns) * duration_ns) - g_mean * g_mean, 0.)) AS g_sd
FROM gpu_times WHERE call_table = 'kernel_launches' AND process_id > 0 AND {{_where}} GROUP BY kernel
