-- _copy_aggregates: copy_sum's and memset_sum's aggregates over
-- _copies_timed's rows: x_n (successful calls), x_bytes, x_avg, x_min,
-- x_max, x_host_ns, x_failed, x_failed_bytes, and from the GPU times g_n
-- (calls with one), g_ns, g_avg, g_gbps. The NULL-skipping averages are
-- spelled out: 18.16's NULL logic and its avg of no rows (nan) differ from
-- SQLite's. A failed call adds 0, as in the local report: bytes is NULL
-- only when every call succeeded without a size. An alias in ClickHouse
-- names the expression everywhere in the query, so the aggregates are
-- computed under other names (x_*) and renamed outside: `sum(...) AS bytes`
-- would otherwise turn the column bytes inside the other aggregates into
-- itself.
toInt64(countIf({{_ok}})) AS x_n,
sum(if({{_ok}}, bytes, 0)) AS x_bytes,
if(countIf({{_sized}}) = 0, CAST(NULL AS Nullable(Float64)),
   toNullable(toFloat64(sumIf(ifNull(bytes, 0), {{_sized}}) / countIf({{_sized}})))) AS x_avg,
if(countIf({{_sized}}) = 0, CAST(NULL AS Nullable(Int64)), toNullable(minIf(assumeNotNull(bytes), {{_sized}}))) AS x_min,
if(countIf({{_sized}}) = 0, CAST(NULL AS Nullable(Int64)), toNullable(maxIf(assumeNotNull(bytes), {{_sized}}))) AS x_max,
toInt64(sumIf(ifNull(duration_ns, 0), {{_ok}})) AS x_host_ns,
toInt64(countIf(NOT {{_ok}})) AS x_failed,
toInt64(sumIf(ifNull(bytes, 0), NOT {{_ok}})) AS x_failed_bytes,
toInt64(sum(g_has)) AS g_n,
if(g_n = 0, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(sum(g_d)))) AS g_ns,
if(g_n = 0, CAST(NULL AS Nullable(Float64)), toNullable(toFloat64(sum(g_d) / g_n))) AS g_avg,
if(g_n = 0 OR sum(g_d) = 0 OR countIf(g_has = 1 AND isNotNull(bytes)) = 0, CAST(NULL AS Nullable(Float64)),
   toNullable(toFloat64(sumIf(ifNull(bytes, 0), g_has = 1) / sum(g_d)))) AS g_gbps
