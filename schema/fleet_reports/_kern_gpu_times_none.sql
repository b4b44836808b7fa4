-- _kern_gpu_times_none: _kern_gpu_times without a gpu_times table: no
-- rows, so every kernel's GPU columns are NULL, as for a capture recorded
-- without --gpu-time.
SELECT '' AS kernel, emptyArrayInt64() AS g_d, 0. AS g_mean, 0. AS g_sd WHERE 0
