-- replay_queues: the GPU queues `gpuobs replay FILE` rebuilt (run it first:
-- these tables are empty until then; docs/replay.md).
-- Columns: queue, pid, process, kind (legacy, per_thread, created, unknown),
--   stream (the label of stream_names, as every report, export and diff name it),
--   handle (hex), tid (per-thread streams), non_blocking, ops, max_depth (most ops
--   that may have been pending at once), never_proven (ops no host
--   observation proved complete), deps_in (cross-queue dependencies of its ops).
-- Filters: :pid, :process.
SELECT q.id                                        AS queue,
       q.tgid                                      AS pid,
       (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       q.kind                                      AS kind,
       CASE q.kind WHEN 'legacy' THEN 'legacy' WHEN 'per_thread' THEN 'per-thread'
            ELSE coalesce((SELECT label FROM stream_names sn WHERE sn.process_id = q.process_id AND sn.stream = q.handle),
                          'stream') END AS stream,
       printf('0x%x', q.handle)                    AS handle,
       q.tid                                       AS tid,
       q.non_blocking                              AS non_blocking,
       q.ops                                       AS ops,
       q.max_depth                                 AS max_depth,
       (SELECT count(*) FROM replay_ops o WHERE o.queue_id = q.id AND o.latest_end_ns IS NULL) AS never_proven,
       (SELECT count(*) FROM replay_deps d JOIN replay_ops o ON o.id = d.op_id WHERE o.queue_id = q.id) AS deps_in
FROM replay_queues q JOIN processes p ON p.id = q.process_id
WHERE (:pid IS NULL OR q.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
ORDER BY q.id;
