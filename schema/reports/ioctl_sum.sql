-- ioctl_sum: GPU driver ioctls per device and request number: count, latency,
-- failures. (Names of NVIDIA RM/UVM and AMD KFD requests come with the driver
-- decoding of issue 4; here the request is its number and _IOC_NR.)
-- Columns: device (watched device name), cmd (hex), nr (_IOC_NR), calls,
--   total_ns, avg_ns, max_ns, failed (negative return).
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
dev AS (SELECT major, min(name) AS name FROM watched_devices GROUP BY major)
SELECT coalesce(dev.name, 'major ' || i.dev_major)           AS device,
       printf('0x%08x', i.cmd)                               AS cmd,
       i.cmd & 255                                           AS nr,
       count(*)                                              AS calls,
       sum(i.latency_ns)                                     AS total_ns,
       round(avg(i.latency_ns), 1)                           AS avg_ns,
       max(i.latency_ns)                                     AS max_ns,
       sum(i.ret < 0)                                        AS failed
FROM ioctls i JOIN processes p ON p.id = i.process_id LEFT JOIN dev ON dev.major = i.dev_major, c
WHERE (:pid IS NULL OR i.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR i.ts_mono_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR i.ts_mono_ns <= c.t0 + :until_s * 1e9)
GROUP BY device, i.cmd
ORDER BY calls DESC, device, cmd;
