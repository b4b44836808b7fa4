-- api_sum: per CUDA driver API, the calls and the host time spent inside them
-- (nsys stats cuda_api_sum). Launch paths are probed at entry only: they
-- count in calls but have no time (timed_calls = 0).
-- Columns: api, calls, timed_calls, total_ns, avg_ns, median_ns, min_ns,
--   max_ns, stddev_ns (sample), time_pct (share of all timed host time).
-- Filters (NULL when not given; gpuobs report --pid/--process/--since/--until):
--   :pid, :process (comm), :since_s / :until_s (seconds after capture start).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
calls AS (
  SELECT a.api, a.duration_ns AS d
  FROM api_calls a JOIN processes p ON p.id = a.process_id, c
  WHERE (:pid IS NULL OR a.tgid = :pid) AND (:process IS NULL OR p.comm = :process)
    AND (:since_s IS NULL OR a.ts_mono_ns >= c.t0 + :since_s * 1e9)
    AND (:until_s IS NULL OR a.ts_mono_ns <= c.t0 + :until_s * 1e9)),
ranked AS (
  SELECT api, d, row_number() OVER (PARTITION BY api ORDER BY d) AS rn, count(*) OVER (PARTITION BY api) AS n
  FROM calls WHERE d IS NOT NULL),
med AS (SELECT api, avg(d) AS median_ns FROM ranked WHERE rn IN ((n + 1) / 2, (n + 2) / 2) GROUP BY api),
total AS (SELECT total(d) AS t FROM calls)
SELECT calls.api                                  AS api,
       count(*)                                   AS calls,
       count(d)                                   AS timed_calls,
       sum(d)                                     AS total_ns,
       round(avg(d), 1)                           AS avg_ns,
       med.median_ns                              AS median_ns,
       min(d)                                     AS min_ns,
       max(d)                                     AS max_ns,
       CASE WHEN count(d) > 1 THEN round(sqrt(max(total(d * 1.0 * d) - total(d) * total(d) / count(d), 0) / (count(d) - 1)), 1) END
                                                  AS stddev_ns,
       CASE WHEN total.t > 0 THEN round(100.0 * total(d) / total.t, 2) ELSE 0.0 END AS time_pct
FROM calls LEFT JOIN med ON med.api = calls.api, total
GROUP BY calls.api
ORDER BY total(d) DESC, calls DESC, api;
