-- launches: kernel launches per process, API symbol and kernel.
-- Columns: pid, process (comm), api, kernel (demangled name, or
--   "(unknown: handle 0x...)" when no lookup of that handle was seen), launches,
--   streams (distinct), first_s / last_s (seconds since capture start).
SELECT p.tgid                                        AS pid,
       p.comm                                        AS process,
       l.api                                         AS api,
       coalesce(l.kernel_name, printf('(unknown: handle 0x%x)', l.function)) AS kernel,
       count(*)                                      AS launches,
       count(DISTINCT l.stream)                      AS streams,
       round((min(l.ts_mono_ns) - c.start_mono_ns) / 1e9, 6) AS first_s,
       round((max(l.ts_mono_ns) - c.start_mono_ns) / 1e9, 6) AS last_s
FROM kernel_launches l
JOIN processes p ON p.id = l.process_id
CROSS JOIN capture c
GROUP BY l.process_id, l.api, l.function
ORDER BY launches DESC, pid, kernel;
