-- errors: every failed API call (result != 0; NOT_READY (600, CUDA and HIP)
-- from stream/event queries is an answer, not a failure) and every failed GPU
-- driver ioctl (negative return, or the driver's own error status:
-- NV_STATUS, UVM rmStatus, a KFD wait that failed), in time order, with the
-- call's stack (innermost four frames; the whole stack: gpuobs stacks, or
-- the stack_symbols view).
-- Columns: time_s (after capture start), pid, process, tid, layer (api or
--   ioctl), call (API symbol; ioctl: driver request, RM control or class),
--   result (CUresult / hipError_t; ioctl: -errno or the driver status),
--   status (ioctl: the status's name), stack_id, stack.
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
e AS (
  SELECT ts_mono_ns, process_id, tgid, tid, 'api' AS layer, api AS call, result, NULL AS status, stack_id
  FROM api_calls WHERE result IS NOT NULL AND result != 0
    -- CUDA_ERROR_NOT_READY / hipErrorNotReady is a query's ordinary answer while work is pending
    AND NOT (result = 600 AND api IN ('cuStreamQuery', 'cuStreamQuery_ptsz', 'cuEventQuery', 'hipStreamQuery',
                                      'hipStreamQuery_spt', 'hipEventQuery'))
  UNION ALL
  SELECT ts_mono_ns, process_id, tgid, tid, 'ioctl',
         coalesce(request || CASE WHEN control IS NOT NULL THEN ' ' || coalesce(control_name, printf('0x%08x', control))
                                  WHEN object_class IS NOT NULL THEN ' ' || coalesce(class_name, printf('0x%x', object_class))
                                  ELSE '' END,
                  printf('ioctl %d:%d 0x%08x', dev_major, dev_minor, cmd)),
         CASE WHEN ret < 0 THEN ret ELSE status END, status_name, stack_id
  FROM ioctls WHERE coalesce(failed, ret < 0))
SELECT round((e.ts_mono_ns - c.t0) / 1e9, 6)                AS time_s,
       e.tgid                                                AS pid,
       (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       e.tid                                                 AS tid,
       e.layer                                               AS layer,
       e.call                                                AS call,
       e.result                                              AS result,
       e.status                                              AS status,
       e.stack_id                                            AS stack_id,
       (SELECT h.stack FROM stack_heads h WHERE h.stack_id = e.stack_id) AS stack
FROM e JOIN processes p ON p.id = e.process_id, c
WHERE (:pid IS NULL OR e.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR e.ts_mono_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR e.ts_mono_ns <= c.t0 + :until_s * 1e9)
ORDER BY e.ts_mono_ns, layer, e.tid;
