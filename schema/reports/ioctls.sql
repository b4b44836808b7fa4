-- ioctls: driver ioctls per process, device and request.
-- Columns: pid, process (comm), device (major:minor), driver, request (name,
--   or the number when no decoder knows it), calls, failures (negative
--   return or an error status), total_ns / avg_ns / max_ns (latency; ns in
--   every report, gpuobs report --timeunit converts them).
SELECT p.tgid                                        AS pid,
       (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       i.dev_major || ':' || i.dev_minor             AS device,
       coalesce(i.driver, 'other')                   AS driver,
       coalesce(i.request, printf('0x%08x', i.cmd))  AS request,
       count(*)                                      AS calls,
       sum(coalesce(i.failed, i.ret < 0))            AS failures,
       sum(i.latency_ns)                             AS total_ns,
       round(avg(i.latency_ns), 1)                   AS avg_ns,
       max(i.latency_ns)                             AS max_ns
FROM ioctls i
JOIN processes p ON p.id = i.process_id
GROUP BY i.process_id, i.dev_major, i.dev_minor, 4, 5
ORDER BY calls DESC, pid, request;
