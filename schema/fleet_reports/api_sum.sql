-- api_sum: per API, its calls with their duration statistics over the
-- fleet's shipped timed calls, then the launch APIs (entry only: counted,
-- no time). The local report's columns (schema/reports/api_sum.sql); the
-- median is the mean of the middle two sorted durations (18.16 has no
-- window functions); groupArray skips NULL durations.
-- Columns: api, calls, timed_calls, total_ns, avg_ns, median_ns, min_ns,
--   max_ns, stddev_ns (sample), time_pct (of all timed calls' time).
-- Filters (the filter table): host, pid, process, since, until.
SELECT api, calls, timed_calls, total_ns, avg_ns, median_ns, min_ns, max_ns, stddev_ns, time_pct
FROM (SELECT api, toInt64(c) AS calls, toInt64(length(s)) AS timed_calls,
             if(length(s) < 1, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(arraySum(s)))) AS total_ns,
             if(length(s) < 1, CAST(NULL AS Nullable(Float64)),
                toNullable(toFloat64((arraySum(s) / length(s))))) AS avg_ns,
             if(length(s) < 1, CAST(NULL AS Nullable(Float64)),
                toNullable((s[intDiv(length(s) + 1, 2)] + s[intDiv(length(s) + 2, 2)]) / 2)) AS median_ns,
             if(length(s) < 1, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(s[1]))) AS min_ns,
             if(length(s) < 1, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(s[length(s)]))) AS max_ns,
             if(length(s) < 2, CAST(NULL AS Nullable(Float64)),
                toNullable(toFloat64(sqrt(arraySum(arrayMap(x -> (x - (arraySum(s) / length(s))) * (x - (arraySum(s) / length(s))), s))
                                          / (length(s) - 1))))) AS stddev_ns,
             if(t > 0, toFloat64(100. * arraySum(s) / t), 0.) AS time_pct
      FROM (SELECT api, count() AS c, arraySort(groupArray(duration_ns)) AS s FROM api_calls WHERE {{_where}} GROUP BY api)
      CROSS JOIN (SELECT toFloat64(sum(duration_ns)) AS t FROM api_calls WHERE {{_where}})
      UNION ALL
      SELECT api, toInt64(count()), toInt64(0), CAST(NULL AS Nullable(Int64)), CAST(NULL AS Nullable(Float64)),
             CAST(NULL AS Nullable(Float64)), CAST(NULL AS Nullable(Int64)), CAST(NULL AS Nullable(Int64)),
             CAST(NULL AS Nullable(Float64)), 0.
      FROM launches WHERE {{_where}} GROUP BY api)
ORDER BY total_ns DESC NULLS LAST, calls DESC, api
