-- _stream_labels: stream_names (025_names.sql) on ClickHouse: per process
-- (host, segment, process) its streams other than 0, 1 and 2, numbered
-- "stream#N" in the order of first use (first operation, launch or async
-- copy; ties by handle), over the whole segment whatever the time filter,
-- as locally. ClickHouse 18.16 has no window functions: the order is a
-- sorted array's. Columns: host_id, segment, process_id, l_stream (UInt64),
-- l_label.
(SELECT host_id, segment, process_id, l_pair.2 AS l_stream, concat('stream#', toString(l_n)) AS l_label
 FROM (SELECT host_id, segment, process_id, arraySort(groupArray((s_first, s_stream))) AS l_order
       FROM (SELECT host_id, segment, process_id, s_stream, min(s_ts) AS s_first
             FROM (SELECT host_id, segment, process_id, stream AS s_stream, ts_ns AS s_ts FROM launches
                   WHERE stream > 2 AND {{_who}}
                   UNION ALL SELECT host_id, segment, process_id, assumeNotNull(stream), ts_ns FROM stream_ops
                   WHERE isNotNull(stream) AND assumeNotNull(stream) > 2 AND {{_who}}
                   UNION ALL SELECT host_id, segment, process_id, assumeNotNull(stream), ts_ns FROM copies
                   WHERE ifNull(async, 0) = 1 AND isNotNull(stream) AND assumeNotNull(stream) > 2 AND {{_who}})
             GROUP BY host_id, segment, process_id, s_stream)
       GROUP BY host_id, segment, process_id)
 ARRAY JOIN l_order AS l_pair, arrayEnumerate(l_order) AS l_n)
