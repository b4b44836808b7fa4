-- ioctl_sum: per driver and request, the ioctls, their latency and
-- failures; a request no decoder named shows as its number,
-- printf('0x%08x') as SQLite writes it.
-- Columns: driver ('other' when none), request, calls, total_ns, avg_ns,
--   max_ns, failed.
-- Filters (the filter table): host, pid, process, since, until.
SELECT x_driver AS driver, x_request AS request, x_calls AS calls, x_total AS total_ns, x_avg AS avg_ns,
       x_max AS max_ns, x_failed AS failed
FROM (SELECT ifNull(driver, 'other') AS x_driver,
             ifNull(request, concat('0x', lower(concat(substring('00000000', 1, 8 - length(hex(cmd))), hex(cmd)))))
               AS x_request,
             toInt64(count()) AS x_calls, toInt64(sum(latency_ns)) AS x_total, toFloat64(avg(latency_ns)) AS x_avg,
             toInt64(max(latency_ns)) AS x_max, toInt64(sum(ifNull(failed, toUInt8(ret < 0)))) AS x_failed
      FROM ioctls WHERE {{_where}} GROUP BY x_driver, x_request)
ORDER BY calls DESC, driver, request
