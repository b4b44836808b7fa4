-- mem: memory per process and kind (device, pitch, managed, host, async,
-- pool, physical, virtual): allocations and frees, peak and final live bytes
-- during the capture, and allocations never freed (each one, with its stack:
-- the leaks report).
-- Columns: pid, process, kind, allocs, alloc_bytes, frees, freed_bytes,
--   peak_live_bytes, end_live_bytes, leaks, leaked_bytes.
-- Filters: :pid, :process (:since_s/:until_s do not apply: live bytes need
--   the whole history).
SELECT p.tgid AS pid, (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process, t.kind AS kind,
       sum(t.op IN ('alloc', 'create'))                          AS allocs,
       sum(CASE WHEN t.op IN ('alloc', 'create') THEN t.bytes END) AS alloc_bytes,
       sum(t.op IN ('free', 'release'))                          AS frees,
       coalesce(sum(CASE WHEN t.op IN ('free', 'release') THEN t.bytes END), 0) AS freed_bytes,
       max(t.live_bytes)                                         AS peak_live_bytes,
       (SELECT live_bytes FROM memory_timeline e WHERE e.process_id = t.process_id AND e.kind = t.kind
        ORDER BY e.ts_mono_ns DESC LIMIT 1)                      AS end_live_bytes,
       (SELECT count(*) FROM leaks l WHERE l.process_id = t.process_id AND l.kind = t.kind) AS leaks,
       (SELECT coalesce(sum(bytes), 0) FROM leaks l WHERE l.process_id = t.process_id AND l.kind = t.kind) AS leaked_bytes
FROM memory_timeline t
JOIN processes p ON p.id = t.process_id
WHERE (:pid IS NULL OR p.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
GROUP BY t.process_id, t.kind
ORDER BY pid, kind, t.process_id;
