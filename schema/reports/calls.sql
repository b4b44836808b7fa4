-- calls: every captured CUDA driver API call, per process, family and symbol.
-- Columns: pid, process, family, api, calls, failures (result != 0),
--   total_ms / avg_us (host time inside the call; calls probed at entry only,
--   the launch paths, have no duration and count 0 here).
SELECT p.tgid                                             AS pid,
       p.comm                                             AS process,
       a.family                                           AS family,
       a.api                                              AS api,
       count(*)                                           AS calls,
       sum(a.result IS NOT NULL AND a.result != 0)        AS failures,
       round(coalesce(sum(a.duration_ns), 0) / 1e6, 3)    AS total_ms,
       round(coalesce(avg(a.duration_ns), 0) / 1e3, 3)    AS avg_us
FROM api_calls a
JOIN processes p ON p.id = a.process_id
GROUP BY a.process_id, a.api
ORDER BY calls DESC, pid, api;
