-- _copies_timed: the filter's copies and memsets, each with its GPU time
-- (g_has 1, g_d ns: its gpu_times row, call_table 'copies', row_id = the
-- call's copy_id) or none (g_has 0, g_d 0). A database without gpu_times,
-- or whose copies lack copy_id (a column added since), reads
-- _copies_untimed instead (fleet_reports.cpp).
SELECT * FROM (SELECT * FROM copies WHERE {{_where}})
ANY LEFT JOIN (SELECT host_id, segment, row_id AS copy_id, toUInt8(1) AS g_has, duration_ns AS g_d
               FROM gpu_times WHERE call_table = 'copies') USING (host_id, segment, copy_id)
