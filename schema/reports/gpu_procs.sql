-- gpu_procs: who used the GPUs, seen from the drivers: every process that
-- issued GPU driver ioctls, what it created there and how much memory the
-- driver allocated for it. NVIDIA: devices (NV01_DEVICE_0 objects: a GPU
-- opened by an RM client), channel groups (TSGs, KEPLER_CHANNEL_GROUP_A:
-- a CUDA 13 context on an H100 creates 4) and channels (GPFIFO channel
-- objects: 20 per H100 context); AMD: queues (AMDKFD_IOC_CREATE_QUEUE). Driver memory is what RM / KFD allocated
-- (video memory: NVIDIA local memory classes, KFD VRAM; system memory the
-- GPU maps is sysmem), which includes the runtime's pools and internal
-- buffers, not only the application's cudaMalloc/hipMalloc (those: mem).
-- Address-space reservations (NV50_MEMORY_VIRTUAL) hold no memory and are
-- not counted.
-- Columns: pid, process, drivers, devices (major:minor used), first_s /
--   last_s (first and last ioctl, after capture start), ioctls, failed,
--   gpu_devices, channel_groups, channels, queues, mem_allocs, mem_alloc_bytes, mem_freed_bytes,
--   mem_peak_bytes (most live at once), mem_live_bytes (not freed by an ioctl
--   at the end; the driver frees the rest when the process closes its fds),
--   sysmem_alloc_bytes, sysmem_live_bytes; from the GPU metrics sampler
--   (NVML, schema 19), over the time NVML listed the process on a GPU:
--   gpus (ids), sm_util_pct_mean (time-weighted), sm_util_pct_max,
--   gpu_mem_max_bytes (its memory on the GPU as NVML counts it). A process
--   NVML listed that made no ioctl the capture saw still has a row (process
--   NULL when the capture never saw it: gpuobs record follows its command's
--   processes only).
-- Filters: :pid, :process.
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
io AS (SELECT process_id, group_concat(DISTINCT coalesce(driver, 'other')) AS drivers,
              group_concat(DISTINCT dev_major || ':' || dev_minor) AS devices,
              min(ts_mono_ns) AS first_ns, max(ts_mono_ns) AS last_ns, count(*) AS n,
              sum(coalesce(failed, ret < 0)) AS failed
       FROM ioctls GROUP BY process_id),
obj AS (SELECT process_id,
               sum(op = 'alloc' AND kind = 'device') AS devices,
               sum(op = 'alloc' AND kind = 'channel_group') AS channel_groups,
               sum(op = 'alloc' AND kind = 'channel') AS channels,
               sum(op = 'alloc' AND kind = 'queue') AS queues,
               sum(op = 'alloc' AND kind = 'memory') AS mem_allocs,
               sum(CASE WHEN op = 'alloc' AND kind = 'memory' THEN bytes ELSE 0 END) AS alloc_bytes,
               sum(CASE WHEN op = 'free' AND kind = 'memory' THEN bytes ELSE 0 END) AS freed_bytes,
               sum(CASE WHEN op = 'alloc' AND kind = 'sysmem' THEN bytes ELSE 0 END) AS sys_alloc,
               sum(CASE WHEN op = 'free' AND kind = 'sysmem' THEN bytes ELSE 0 END) AS sys_freed
        FROM driver_objects GROUP BY process_id),
peak AS (SELECT process_id, max(live_bytes) AS peak FROM driver_memory_timeline GROUP BY process_id),
-- Per process (a pid reused in a long daemon segment is two processes; a
-- process the capture never saw is keyed by its pid alone).
nv AS (SELECT pid, process_id, group_concat(DISTINCT gpu_id) AS gpus,
              sum(sm_util_pct * (until_mono_ns - ts_mono_ns)) * 1.0
                / nullif(sum(CASE WHEN sm_util_pct IS NOT NULL THEN until_mono_ns - ts_mono_ns END), 0) AS sm_mean,
              max(sm_util_pct) AS sm_max, max(memory_bytes) AS mem_max
       FROM gpu_process_metrics WHERE gone = 0 GROUP BY pid, process_id),
keys AS (SELECT p.tgid AS pid, io.process_id AS process_id FROM io JOIN processes p ON p.id = io.process_id
         UNION
         SELECT nv.pid, nv.process_id FROM nv)
SELECT k.pid                                                 AS pid,
       (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       io.drivers                                            AS drivers,
       io.devices                                            AS devices,
       round((io.first_ns - c.t0) / 1e9, 6)                  AS first_s,
       round((io.last_ns - c.t0) / 1e9, 6)                   AS last_s,
       coalesce(io.n, 0)                                     AS ioctls,
       coalesce(io.failed, 0)                                AS failed,
       coalesce(obj.devices, 0)                              AS gpu_devices,
       coalesce(obj.channel_groups, 0)                       AS channel_groups,
       coalesce(obj.channels, 0)                             AS channels,
       coalesce(obj.queues, 0)                               AS queues,
       coalesce(obj.mem_allocs, 0)                           AS mem_allocs,
       coalesce(obj.alloc_bytes, 0)                          AS mem_alloc_bytes,
       coalesce(obj.freed_bytes, 0)                          AS mem_freed_bytes,
       coalesce(peak.peak, 0)                                AS mem_peak_bytes,
       coalesce(obj.alloc_bytes, 0) - coalesce(obj.freed_bytes, 0) AS mem_live_bytes,
       coalesce(obj.sys_alloc, 0)                            AS sysmem_alloc_bytes,
       coalesce(obj.sys_alloc, 0) - coalesce(obj.sys_freed, 0) AS sysmem_live_bytes,
       nv.gpus                                               AS gpus,
       round(nv.sm_mean, 1)                                  AS sm_util_pct_mean,
       nv.sm_max                                             AS sm_util_pct_max,
       nv.mem_max                                            AS gpu_mem_max_bytes
FROM keys k LEFT JOIN processes p ON p.id = k.process_id
LEFT JOIN io ON io.process_id = k.process_id
LEFT JOIN obj ON obj.process_id = k.process_id
LEFT JOIN peak ON peak.process_id = k.process_id
LEFT JOIN nv ON nv.pid = k.pid AND nv.process_id IS k.process_id, c
WHERE (:pid IS NULL OR k.pid = :pid) AND (:process IS NULL OR p.comm = :process)
ORDER BY coalesce(io.n, 0) DESC, pid;
