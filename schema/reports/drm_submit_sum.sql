-- drm_submit_sum: GPU work submitted through DRM nodes, per process, driver
-- and engine: i915 GEM_EXECBUFFER2(_WR), xe EXEC, amdgpu CS, graphics and
-- compute alike (Mesa's ANV/Iris/RADV/radeonsi and compute runtimes all
-- submit here). The engine is what the call names: i915's ring selector
-- (render, bsd, blt, vebox, or engine[N] of a context's engine map), the
-- ip types of an amdgpu CS's IBs (GFX, COMPUTE, DMA, VCN_*...; GFX+COMPUTE
-- for a gang submission), and for xe the class of the exec queue, from the
-- EXEC_QUEUE_CREATE that returned its id on the same file (exec_queue N
-- when that call was not captured or failed).
-- Columns: process, pid, driver (i915, xe, amdgpu), engine, submissions,
--   failed, avg_ns, max_ns (latency: syscall entry to exit, the CPU cost of
--   submitting, not the GPU time), batches (batch buffers: 1 per i915
--   execbuffer, xe num_batch_buffer, amdgpu IB chunks), buffers (i915
--   buffer_count: the objects the batch uses; NULL for xe and amdgpu),
--   chunks (amdgpu num_chunks; NULL otherwise), incomplete (calls whose
--   arguments were not all captured: args_complete = 0).
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
s AS (
  SELECT i.*, p.comm,
         CASE WHEN i.request = 'DRM_IOCTL_XE_EXEC' THEN
                coalesce((SELECT json_extract(q.args, '$.engine') FROM ioctls q
                          WHERE q.tgid = i.tgid AND q.fd = i.fd AND q.driver = 'xe'
                            AND q.request = 'DRM_IOCTL_XE_EXEC_QUEUE_CREATE' AND q.failed = 0
                            AND json_extract(q.args, '$.exec_queue_id') = json_extract(i.args, '$.exec_queue_id')
                            AND q.ts_mono_ns <= i.ts_mono_ns
                          ORDER BY q.ts_mono_ns DESC LIMIT 1),
                         'exec_queue ' || json_extract(i.args, '$.exec_queue_id'))
              ELSE coalesce(json_extract(i.args, '$.engine'), 'unknown') END AS engine
  FROM ioctls i JOIN processes p ON p.id = i.process_id, c
  WHERE i.request IN ('DRM_IOCTL_I915_GEM_EXECBUFFER2', 'DRM_IOCTL_I915_GEM_EXECBUFFER2_WR', 'DRM_IOCTL_XE_EXEC',
                      'DRM_IOCTL_AMDGPU_CS')
    AND (:pid IS NULL OR i.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
    AND (:since_s IS NULL OR i.ts_mono_ns >= c.t0 + :since_s * 1e9)
    AND (:until_s IS NULL OR i.ts_mono_ns <= c.t0 + :until_s * 1e9))
SELECT comm                                                  AS process,
       tgid                                                  AS pid,
       driver,
       engine,
       count(*)                                              AS submissions,
       sum(coalesce(failed, ret < 0))                        AS failed,
       round(avg(latency_ns), 1)                             AS avg_ns,
       max(latency_ns)                                       AS max_ns,
       sum(CASE driver WHEN 'i915' THEN 1
                       WHEN 'xe' THEN json_extract(args, '$.num_batch_buffer')
                       ELSE json_extract(args, '$.ibs') END)  AS batches,
       sum(json_extract(args, '$.buffer_count'))             AS buffers,
       sum(json_extract(args, '$.num_chunks'))               AS chunks,
       sum(args_complete = 0)                                AS incomplete
FROM s
GROUP BY comm, tgid, driver, engine
ORDER BY pid, driver, submissions DESC, engine;
