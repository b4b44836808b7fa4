-- api_sum: per CUDA driver API, the calls and the host time spent inside them
-- (nsys stats cuda_api_sum). Launch paths are probed at entry only: they
-- count in calls but have no time (timed_calls = 0).
-- Columns: api, calls, timed_calls, total_ns, avg_ns, median_ns, min_ns,
--   max_ns, stddev_ns (sample), time_pct (share of all timed host time).
-- Filters (NULL when not given; gpuobs report --pid/--process/--since/--until):
--   :pid, :process (comm), :since_s / :until_s (seconds after capture start).
-- Launches are counted from the writer's launch_agg unless a time filter is set.
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
sel AS (SELECT id FROM processes WHERE (:pid IS NULL OR tgid = :pid) AND (:process IS NULL OR comm = :process)),
calls AS (
  SELECT a.api, a.duration_ns AS d FROM api_calls_timed a, c
  WHERE a.process_id IN sel
    AND (:since_s IS NULL OR a.ts_mono_ns >= c.t0 + :since_s * 1e9)
    AND (:until_s IS NULL OR a.ts_mono_ns <= c.t0 + :until_s * 1e9)),
launch_calls AS (
  SELECT api, launches AS n FROM launch_agg WHERE :since_s IS NULL AND :until_s IS NULL AND process_id IN sel
  UNION ALL
  SELECT k.api, 1 FROM kernel_launches_between((SELECT t0 FROM c) + :since_s * 1e9, (SELECT t0 FROM c) + :until_s * 1e9) k, c
  WHERE NOT (:since_s IS NULL AND :until_s IS NULL) AND k.process_id IN sel
    AND (:since_s IS NULL OR k.ts_mono_ns >= c.t0 + :since_s * 1e9)
    AND (:until_s IS NULL OR k.ts_mono_ns <= c.t0 + :until_s * 1e9)),
ranked AS (
  SELECT api, d, row_number() OVER (PARTITION BY api ORDER BY d) AS rn, count(*) OVER (PARTITION BY api) AS n
  FROM calls WHERE d IS NOT NULL),
med AS (SELECT api, avg(d) AS median_ns FROM ranked WHERE rn IN ((n + 1) / 2, (n + 2) / 2) GROUP BY api),
-- Two passes: the mean first, then the squared deviations (one pass loses
-- every digit when durations are large and close together).
mean AS (SELECT api, avg(d) AS m FROM calls WHERE d IS NOT NULL GROUP BY api),
dev AS (SELECT calls.api, sum((d - mean.m) * (d - mean.m)) AS ss FROM calls JOIN mean ON mean.api = calls.api
        WHERE d IS NOT NULL GROUP BY calls.api),
total AS (SELECT total(d) AS t FROM calls)
SELECT calls.api                                  AS api,
       count(*)                                   AS calls,
       count(d)                                   AS timed_calls,
       sum(d)                                     AS total_ns,
       round(avg(d), 1)                           AS avg_ns,
       med.median_ns                              AS median_ns,
       min(d)                                     AS min_ns,
       max(d)                                     AS max_ns,
       CASE WHEN count(d) > 1 THEN round(sqrt(dev.ss / (count(d) - 1)), 1) END
                                                  AS stddev_ns,
       CASE WHEN total.t > 0 THEN round(100.0 * total(d) / total.t, 2) ELSE 0.0 END AS time_pct
FROM calls LEFT JOIN med ON med.api = calls.api LEFT JOIN dev ON dev.api = calls.api, total
GROUP BY calls.api
UNION ALL
SELECT api, sum(n), 0, NULL, NULL, NULL, NULL, NULL, NULL, 0.0 FROM launch_calls GROUP BY api
ORDER BY total_ns DESC, calls DESC, api;
