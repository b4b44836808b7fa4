-- kern_sum: per kernel (demangled name, or the function handle when the name
-- was looked up before the capture), its launches and launch geometry
-- (nsys stats cuda_gpu_kern_sum without GPU times: gpuobs sees the host side).
-- Columns: kernel, launches, processes, streams, grid_min / grid_max /
--   grid_avg (blocks per launch), block_min / block_max / block_avg
--   (threads per block), shared_mem_avg (bytes), cooperative (launches).
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
    AND (:until_s IS NULL OR k.ts_mono_ns <= c.t0 + :until_s * 1e9))
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
GROUP BY kernel
ORDER BY launches DESC, kernel;
