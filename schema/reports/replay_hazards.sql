-- replay_hazards: what `gpuobs replay FILE` found wrong in how the host drove
-- its GPU queues (run it first: the tables are empty until then;
-- docs/replay.md lists the six kinds).
-- Columns: id, t_s (seconds since the capture started), pid, kind, op,
--   other_op, api (the call at fault), detail, stack (its innermost frames),
--   other_stack (the conflicting operation's).
-- Filters: :pid, :process, :since_s, :until_s.
WITH c AS (SELECT start_mono_ns AS t0 FROM capture)
SELECT h.id                                         AS id,
       round((h.ts_ns - c.t0) / 1e9, 6)             AS t_s,
       p.tgid                                       AS pid,
       h.kind                                       AS kind,
       h.op_id                                      AS op,
       h.other_op_id                                AS other_op,
       h.api                                        AS api,
       h.detail                                     AS detail,
       (SELECT stack FROM stack_heads s WHERE s.stack_id = h.stack_id)       AS stack,
       (SELECT stack FROM stack_heads s WHERE s.stack_id = h.other_stack_id) AS other_stack
FROM replay_hazards h JOIN processes p ON p.id = h.process_id, c
WHERE (:pid IS NULL OR p.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR h.ts_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR h.ts_ns <= c.t0 + :until_s * 1e9)
ORDER BY h.id;
