-- launches: kernel launches per process, API symbol and kernel.
-- Columns: pid, process (comm), api, kernel (demangled name, or
--   "(unknown: handle 0x...)" when no lookup of that handle was seen), launches,
--   streams (distinct), first_s / last_s (seconds since capture start).
-- Reads the writer's launch_agg (schema/migrations/005): no launch row is scanned.
-- Filters: :pid, :process.
SELECT p.tgid                                        AS pid,
       (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       l.api                                         AS api,
       CASE WHEN l.kernel_name != '' THEN l.kernel_name ELSE printf('(unknown: handle 0x%x)', l.function) END AS kernel,
       sum(l.launches)                               AS launches,
       count(DISTINCT l.stream)                      AS streams,
       round((min(l.first_ns) - c.start_mono_ns) / 1e9, 6) AS first_s,
       round((max(l.last_ns) - c.start_mono_ns) / 1e9, 6)  AS last_s
FROM launch_agg l
JOIN processes p ON p.id = l.process_id
CROSS JOIN capture c
WHERE (:pid IS NULL OR p.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
-- The kernel by its position: a bare "kernel" here would name capture's
-- column of that name (the host's kernel release), not the alias, and fold
-- every kernel of an API into one row.
GROUP BY l.process_id, l.api, 4
ORDER BY launches DESC, pid, kernel, api, l.process_id;
