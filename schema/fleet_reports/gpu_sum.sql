-- gpu_sum: per GPU of a segment (host, segment, gpu_id) and metric, the
-- time-weighted statistics of the shipped samples (_gpu_samples),
-- percentiles from the values sorted with their running time (arrayCumSum:
-- 18.16 has no window functions), and per throttle reason the time it held
-- the clocks down. Metrics in the catalogue's order (their id in the
-- capture), reasons by bit: both from the catalogue table gpuobs sends with
-- the query (metric_names, throttle_bits, throttle_names).
-- Columns: gpu, name, metric (throttle:REASON for a reason), unit, seconds,
--   mean, p50, p95, min, max.
-- Filters (the filter table): host, since, until (cut the samples).
SELECT toInt64(gpu_id) AS gpu, x_name AS name, x_metric AS metric, x_unit AS unit, x_seconds AS seconds, x_mean AS mean,
       x_p50 AS p50, x_p95 AS p95, x_min AS min, x_max AS max
FROM (SELECT host_id, segment, gpu_id, x_name, x_metric, x_unit, x_seconds, x_mean, x_p50, x_p95,
             toNullable(x_lo) AS x_min, toNullable(x_hi) AS x_max, 0 AS x_part, x_ord
      FROM (SELECT host_id, segment, gpu_id, any(gpu_name) AS x_name, metric AS x_metric, any(unit) AS x_unit,
                   sum(dur) AS x_total, toFloat64(x_total) / 1e9 AS x_seconds, sum(value * dur) / x_total AS x_mean,
                   arraySort(x -> x.1, groupArray((value, dur))) AS x_sorted,
                   arrayCumSum(arrayMap(x -> x.2, x_sorted)) AS x_cum,
                   -- (At this level: 18.16 drops a subquery column that only a lambda uses.)
                   toNullable(x_sorted[arrayFirstIndex(c -> c >= 0.5 * x_total, x_cum)].1) AS x_p50,
                   toNullable(x_sorted[arrayFirstIndex(c -> c >= 0.95 * x_total, x_cum)].1) AS x_p95,
                   min(value) AS x_lo, max(value) AS x_hi,
                   toInt64(indexOf((SELECT metric_names FROM catalogue), metric)) AS x_ord
            FROM {{_gpu_samples}}
            WHERE metric != 'clocks_event_reasons' GROUP BY host_id, segment, gpu_id, metric)
      UNION ALL
      SELECT host_id, segment, gpu_id, x_name, concat('throttle:', r_name), '%', toFloat64(r_active) / 1e9,
             100. * r_active / x_total, CAST(NULL AS Nullable(Float64)), CAST(NULL AS Nullable(Float64)),
             CAST(NULL AS Nullable(Float64)), CAST(NULL AS Nullable(Float64)), 1, r_bit
      FROM (SELECT host_id, segment, gpu_id, any(gpu_name) AS x_name, sum(dur) AS x_total,
                   groupArray((toInt64(value), dur)) AS x_vd
            FROM {{_gpu_samples}}
            WHERE metric = 'clocks_event_reasons' GROUP BY host_id, segment, gpu_id)
      ARRAY JOIN (SELECT throttle_bits FROM catalogue) AS r_bit, (SELECT throttle_names FROM catalogue) AS r_name
      WHERE (arraySum(arrayMap(x -> if(bitAnd(x.1, r_bit) != 0, x.2, 0), x_vd)) AS r_active) > 0)
ORDER BY host_id, segment, gpu_id, x_part, x_ord
