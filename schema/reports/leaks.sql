-- leaks: every successful allocation never freed during the capture, largest
-- first, with where it was allocated (innermost four frames of its stack).
-- Columns: time_s (after capture start), pid, process, api, kind, address,
--   bytes, stack_id, stack.
-- Filters: :pid, :process, :since_s, :until_s (on the allocation's time).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture)
SELECT round((l.ts_mono_ns - c.t0) / 1e9, 6)                AS time_s,
       l.tgid                                                AS pid,
       (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       l.api                                                 AS api,
       l.kind                                                AS kind,
       l.address                                             AS address,
       l.bytes                                               AS bytes,
       l.stack_id                                            AS stack_id,
       (SELECT h.stack FROM stack_heads h WHERE h.stack_id = l.stack_id) AS stack
FROM leaks l JOIN processes p ON p.id = l.process_id, c
WHERE (:pid IS NULL OR l.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR l.ts_mono_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR l.ts_mono_ns <= c.t0 + :until_s * 1e9)
ORDER BY l.bytes DESC, l.ts_mono_ns, l.id;
