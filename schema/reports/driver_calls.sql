-- driver_calls: the decoded driver requests in detail: per request, RM
-- control command or allocated class (NV_ESC_RM_ALLOC HOPPER_CHANNEL_GPFIFO_A,
-- NV_ESC_RM_CONTROL NV503C_CTRL_CMD_REGISTER_VIDMEM), how often, how long,
-- how many failed and with which statuses.
-- Columns: driver, request, detail (RM control name or number, allocated or
--   freed class), calls, total_ns, avg_ns, max_ns, failed, statuses (the
--   distinct non-OK status names).
-- Filters: :pid, :process, :since_s, :until_s (see api_sum.sql).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture)
SELECT coalesce(i.driver, 'other')                           AS driver,
       coalesce(i.request, printf('0x%08x', i.cmd))          AS request,
       CASE WHEN i.control IS NOT NULL THEN coalesce(i.control_name, printf('0x%08x', i.control))
            WHEN i.object_class IS NOT NULL THEN coalesce(i.class_name, printf('0x%x', i.object_class))
            ELSE '' END                                      AS detail,
       count(*)                                              AS calls,
       sum(i.latency_ns)                                     AS total_ns,
       round(avg(i.latency_ns), 1)                           AS avg_ns,
       max(i.latency_ns)                                     AS max_ns,
       sum(coalesce(i.failed, i.ret < 0))                    AS failed,
       group_concat(DISTINCT CASE WHEN i.status != 0 THEN i.status_name END) AS statuses
FROM ioctls i JOIN processes p ON p.id = i.process_id, c
WHERE (:pid IS NULL OR i.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
  AND (:since_s IS NULL OR i.ts_mono_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR i.ts_mono_ns <= c.t0 + :until_s * 1e9)
GROUP BY 1, 2, 3
ORDER BY calls DESC, driver, request, detail;
