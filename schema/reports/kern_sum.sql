-- kern_sum: per kernel (demangled name, or the function handle when the name
-- was looked up before the capture), its launches and launch geometry
-- (nsys stats cuda_gpu_kern_sum without GPU times: gpuobs sees the host side).
-- Columns: kernel, launches, processes, streams, grid_min / grid_max /
--   grid_avg (blocks per launch), block_min / block_max / block_avg
--   (threads per block), shared_mem_avg (bytes), cooperative (launches).
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture)
SELECT coalesce(k.kernel_name, printf('(unknown: handle 0x%x)', k.function)) AS kernel,
       count(*)                                              AS launches,
       count(DISTINCT k.process_id)                          AS processes,
       count(DISTINCT k.process_id || ':' || k.stream)       AS streams,
       min(k.grid_x * k.grid_y * k.grid_z)                   AS grid_min,
       max(k.grid_x * k.grid_y * k.grid_z)                   AS grid_max,
       round(avg(k.grid_x * k.grid_y * k.grid_z), 1)         AS grid_avg,
       min(k.block_x * k.block_y * k.block_z)                AS block_min,
       max(k.block_x * k.block_y * k.block_z)                AS block_max,
       round(avg(k.block_x * k.block_y * k.block_z), 1)      AS block_avg,
       round(avg(k.shared_mem_bytes), 1)                     AS shared_mem_avg,
       sum(k.cooperative != 0)                               AS cooperative
FROM kernel_launches k JOIN processes p ON p.id = k.process_id, c
WHERE (:pid IS NULL OR k.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR k.ts_mono_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR k.ts_mono_ns <= c.t0 + :until_s * 1e9)
GROUP BY kernel
ORDER BY launches DESC, kernel;
