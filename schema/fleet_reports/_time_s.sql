-- _time_s: ts_ns in seconds after its segment's start (s_start, from
-- _segment_starts; rounded by SQLite afterwards: kRounded). NULL for rows of
-- a segment with no ledger row yet (a shipper that died in its first
-- table: the join gives 0, which would read as Unix time).
if(s_start = 0, CAST(NULL AS Nullable(Float64)), toNullable(toFloat64(ts_ns - s_start) / 1e9))
