-- ioctl_sum: GPU driver ioctls per driver and request: count, latency,
-- failures. Requests are named by the driver decoders (NV_ESC_RM_ALLOC,
-- UVM_MAP_EXTERNAL_ALLOCATION, AMDKFD_IOC_WAIT_EVENTS); RM controls are
-- counted under NV_ESC_RM_CONTROL (their commands: driver_calls). A
-- request no decoder knows shows as its number.
-- Columns: driver (nvidia, nvidia-uvm, kfd, i915, xe, amdgpu, drm, other), request, calls,
--   total_ns, avg_ns, max_ns (latency: syscall entry to exit, so the time
--   a blocking call waited), failed (negative return or an error status).
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture)
SELECT coalesce(i.driver, 'other')                           AS driver,
       coalesce(i.request, printf('0x%08x', i.cmd))          AS request,
       count(*)                                              AS calls,
       sum(i.latency_ns)                                     AS total_ns,
       round(avg(i.latency_ns), 1)                           AS avg_ns,
       max(i.latency_ns)                                     AS max_ns,
       sum(coalesce(i.failed, i.ret < 0))                    AS failed
FROM ioctls i JOIN processes p ON p.id = i.process_id, c
WHERE (:pid IS NULL OR i.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR i.ts_mono_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR i.ts_mono_ns <= c.t0 + :until_s * 1e9)
GROUP BY 1, 2
ORDER BY calls DESC, driver, request;
