-- sync_sum: host time blocked in synchronizations, per process, API and what
-- was waited on (a stream, an event, the context).
-- Columns: pid, process, api, target, stream (stream_names' label: legacy,
--   per-thread, stream#N; NULL unless target is stream), event (the event's
--   or Level Zero fence's handle; NULL unless target is event or fence),
--   syncs, blocked_ns, avg_ns, max_ns, failed.
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
-- The labels once (a correlated lookup computed the view again per row).
sn AS MATERIALIZED (SELECT process_id, stream, label FROM stream_names)
SELECT p.tgid                                                AS pid,
       (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       s.api                                                 AS api,
       s.target                                              AS target,
       CASE WHEN s.target = 'stream' THEN sn.label END        AS stream,
       CASE WHEN s.target IN ('event', 'fence') THEN s.event END AS event,
       count(*)                                              AS syncs,
       coalesce(sum(s.blocked_ns), 0)                        AS blocked_ns,
       round(avg(s.blocked_ns), 1)                           AS avg_ns,
       max(s.blocked_ns)                                     AS max_ns,
       sum(s.result IS NOT NULL AND s.result != 0)           AS failed
FROM syncs s JOIN processes p ON p.id = s.process_id
     LEFT JOIN sn ON s.target = 'stream' AND sn.process_id = s.process_id AND sn.stream = s.stream, c
WHERE (:pid IS NULL OR s.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR s.ts_mono_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR s.ts_mono_ns <= c.t0 + :until_s * 1e9)
GROUP BY s.process_id, s.api, s.target, CASE s.target WHEN 'stream' THEN s.stream WHEN 'event' THEN s.event WHEN 'fence' THEN s.event END
ORDER BY blocked_ns DESC, pid, api, target, CASE s.target WHEN 'stream' THEN s.stream WHEN 'event' THEN s.event WHEN 'fence' THEN s.event END;
