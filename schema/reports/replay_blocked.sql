-- replay_blocked: host time blocked waiting for the GPU, per thread and kind
-- of observation, from `gpuobs replay FILE` (run it first: the tables are
-- empty until then; docs/replay.md).
-- Columns: pid, tid, kind (stream_sync, event_sync, context_sync, sync_copy,
--   stream_query, event_query), target (the queue's kind and handle, or the
--   event), calls, blocked_ns, ops_proven (ops whose completion these calls proved
--   first), avg_ns.
-- Filters: :pid, :process, :since_s, :until_s.
WITH c AS (SELECT start_mono_ns AS t0 FROM capture)
SELECT p.tgid                                       AS pid,
       o.tid                                        AS tid,
       o.kind                                       AS kind,
       CASE WHEN o.queue_id IS NOT NULL THEN
              CASE q.kind WHEN 'legacy' THEN 'legacy' WHEN 'per_thread' THEN 'per-thread tid ' || q.tid
                   ELSE coalesce((SELECT label FROM stream_names sn WHERE sn.process_id = q.process_id
                                  AND sn.stream = q.handle), 'stream') || ' ' || printf('0x%x', q.handle) END
            WHEN o.event != 0 THEN 'event ' || printf('0x%x', o.event)
            ELSE 'context' END                      AS target,
       count(*)                                     AS calls,
       sum(o.blocked_ns)                            AS blocked_ns,
       sum(o.ops_completed)                         AS ops_proven,
       round(avg(o.blocked_ns), 1)                  AS avg_ns
FROM replay_observations o JOIN processes p ON p.id = o.process_id
     LEFT JOIN replay_queues q ON q.id = o.queue_id, c
WHERE (:pid IS NULL OR p.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR o.start_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR o.start_ns <= c.t0 + :until_s * 1e9)
GROUP BY p.tgid, o.tid, o.kind, target
ORDER BY blocked_ns DESC, pid, tid, kind, target;
