-- ioctls: driver ioctls per process, device and request number.
-- Columns: pid, process (comm), device (major:minor), cmd (hex), calls,
--   failures (ret < 0), total_us / avg_us / max_us (latency, microseconds).
SELECT p.tgid                                        AS pid,
       p.comm                                        AS process,
       i.dev_major || ':' || i.dev_minor             AS device,
       printf('0x%08x', i.cmd)                       AS cmd,
       count(*)                                      AS calls,
       sum(i.ret < 0)                                AS failures,
       round(sum(i.latency_ns) / 1e3, 3)             AS total_us,
       round(avg(i.latency_ns) / 1e3, 3)             AS avg_us,
       round(max(i.latency_ns) / 1e3, 3)             AS max_us
FROM ioctls i
JOIN processes p ON p.id = i.process_id
GROUP BY i.process_id, i.dev_major, i.dev_minor, i.cmd
ORDER BY calls DESC, pid, cmd;
