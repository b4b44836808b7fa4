-- nccl_stalls: every stall of every segment, one row per rank, the
-- missing ranks first; detected_s after the segment's start.
-- Columns: stall, detected_s, comm, seq, op, kind, waited_ns, rank, tgid,
--   state, last_seq, last_api, call_site, python_site.
-- Filters (the filter table): host, pid (the rank's process), since, until
--   (the time of detection); not process: the rows name a rank's pid.
SELECT stall_id AS stall, {{_time_s}} AS detected_s, {{_comm}} AS comm, seq, op, kind, waited_ns, rank,
       toInt64(pid) AS tgid, state, last_seq, last_api, call_site, python_site
FROM (SELECT * FROM nccl_stalls WHERE {{_host}} AND {{_pid}} AND {{_time}})
ANY LEFT JOIN {{_segment_starts}} USING (host_id, segment)
ORDER BY host_id, segment, stall, state != 'missing', rank
