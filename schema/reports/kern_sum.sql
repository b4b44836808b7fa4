-- kern_sum: per kernel (demangled name, or the function handle when the name
-- was looked up before the capture), its launches and launch geometry, and,
-- for a capture recorded with --gpu-time, the time its launches ran on the
-- GPU as CUPTI measured it (nsys stats cuda_gpu_kern_sum).
-- Columns: kernel, launches, processes, streams, grid_min / grid_max /
--   grid_avg (blocks per launch), block_min / block_max / block_avg
--   (threads per block), shared_mem_avg (bytes), cooperative (launches);
--   gpu_launches (launches with a measured GPU time; NULL without
--   --gpu-time), gpu_total_ns, gpu_avg_ns, gpu_med_ns, gpu_min_ns,
--   gpu_max_ns, gpu_stddev_ns.
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql). Without a
-- time filter it reads the writer's launch_agg; with one, the launches.
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
sel AS (SELECT id FROM processes WHERE (:pid IS NULL OR tgid = :pid) AND (:process IS NULL OR comm = :process)),
l AS (
  SELECT process_id, function, kernel_name, stream, launches, grid_sum, grid_min, grid_max,
         block_sum, block_min, block_max, shmem_sum, cooperative
  FROM launch_agg WHERE :since_s IS NULL AND :until_s IS NULL AND process_id IN sel
  UNION ALL
  SELECT k.process_id, k.function, coalesce(k.kernel_name, ''), k.stream, 1,
         k.grid_x * k.grid_y * k.grid_z, k.grid_x * k.grid_y * k.grid_z, k.grid_x * k.grid_y * k.grid_z,
         k.block_x * k.block_y * k.block_z, k.block_x * k.block_y * k.block_z, k.block_x * k.block_y * k.block_z,
         k.shared_mem_bytes, k.cooperative != 0
  FROM kernel_launches_between((SELECT t0 FROM c) + :since_s * 1e9, (SELECT t0 FROM c) + :until_s * 1e9) k, c
  WHERE NOT (:since_s IS NULL AND :until_s IS NULL) AND k.process_id IN sel
    AND (:since_s IS NULL OR k.ts_mono_ns >= c.t0 + :since_s * 1e9)
    AND (:until_s IS NULL OR k.ts_mono_ns <= c.t0 + :until_s * 1e9)),
-- GPU times (schema 20): per launch, keyed by the kernel as this report names it.
g AS (
  SELECT t.kernel AS kernel, t.duration_ns AS d
  FROM gpu_times t, c
  WHERE t.call_table = 'kernel_launches' AND t.process_id IN sel
    AND (:since_s IS NULL OR t.start_mono_ns >= c.t0 + :since_s * 1e9)
    AND (:until_s IS NULL OR t.start_mono_ns <= c.t0 + :until_s * 1e9)),
gr AS (SELECT kernel, d, row_number() OVER (PARTITION BY kernel ORDER BY d) AS rn,
              count(*) OVER (PARTITION BY kernel) AS n FROM g),
gs AS (
  SELECT kernel, count(*) AS n, sum(d) AS total, avg(d) AS mean,
         avg(CASE WHEN rn IN ((n + 1) / 2, (n + 2) / 2) THEN d END) AS med,
         min(d) AS lo, max(d) AS hi, sqrt(max(avg(d * d) - avg(d) * avg(d), 0)) AS sd
  FROM gr GROUP BY kernel),
k AS (
SELECT CASE WHEN kernel_name != '' THEN kernel_name ELSE printf('(unknown: handle 0x%x)', function) END AS kernel,
       sum(launches)                                         AS launches,
       count(DISTINCT process_id)                            AS processes,
       count(DISTINCT process_id || ':' || stream)           AS streams,
       min(grid_min)                                         AS grid_min,
       max(grid_max)                                         AS grid_max,
       round(sum(grid_sum) * 1.0 / sum(launches), 1)         AS grid_avg,
       min(block_min)                                        AS block_min,
       max(block_max)                                        AS block_max,
       round(sum(block_sum) * 1.0 / sum(launches), 1)        AS block_avg,
       round(sum(shmem_sum) * 1.0 / sum(launches), 1)        AS shared_mem_avg,
       sum(cooperative)                                      AS cooperative
FROM l
GROUP BY kernel)
SELECT k.*, gs.n AS gpu_launches, gs.total AS gpu_total_ns, round(gs.mean, 1) AS gpu_avg_ns,
       gs.med AS gpu_med_ns, gs.lo AS gpu_min_ns, gs.hi AS gpu_max_ns, round(gs.sd, 1) AS gpu_stddev_ns
FROM k LEFT JOIN gs ON gs.kernel = k.kernel
ORDER BY coalesce(gs.total, 0) DESC, k.launches DESC, k.kernel;
