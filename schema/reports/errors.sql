-- errors: every failed driver API call (result != 0; CUDA_ERROR_NOT_READY from
-- cuStreamQuery/cuEventQuery is an answer, not a failure) and failed GPU ioctl
-- (negative return), in time order, with the call's stack (innermost four
-- frames; the whole stack: gpuobs stacks, or the stack_symbols view).
-- Columns: time_s (after capture start), pid, process, tid, layer (api or
--   ioctl), call, result (CUresult, or -errno), stack_id, stack.
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
e AS (
  SELECT ts_mono_ns, process_id, tgid, tid, 'api' AS layer, api AS call, result, stack_id
  FROM api_calls WHERE result IS NOT NULL AND result != 0
    -- CUDA_ERROR_NOT_READY is a query's ordinary answer while work is pending
    AND NOT (result = 600 AND api IN ('cuStreamQuery', 'cuStreamQuery_ptsz', 'cuEventQuery'))
  UNION ALL
  SELECT ts_mono_ns, process_id, tgid, tid, 'ioctl', printf('ioctl %d:%d 0x%08x', dev_major, dev_minor, cmd), ret, stack_id
  FROM ioctls WHERE ret < 0)
SELECT round((e.ts_mono_ns - c.t0) / 1e9, 6)                AS time_s,
       e.tgid                                                AS pid,
       p.comm                                                AS process,
       e.tid                                                 AS tid,
       e.layer                                               AS layer,
       e.call                                                AS call,
       e.result                                              AS result,
       e.stack_id                                            AS stack_id,
       (SELECT h.stack FROM stack_heads h WHERE h.stack_id = e.stack_id) AS stack
FROM e JOIN processes p ON p.id = e.process_id, c
WHERE (:pid IS NULL OR e.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR e.ts_mono_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR e.ts_mono_ns <= c.t0 + :until_s * 1e9)
ORDER BY e.ts_mono_ns, layer;
