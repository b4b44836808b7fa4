-- leaks: every successful allocation never freed in its segment
-- (_leak_rows), largest first; time_s after the start of the allocation's
-- segment; a shipped stack has no id (stack_id NULL), and the stack is its
-- innermost four frames (_stack_head).
-- Columns: time_s, pid, process, api, kind, address, bytes, stack_id, stack.
-- Filters (the filter table): host, pid, process, since, until (on the
--   allocation's time).
SELECT {{_time_s}} AS time_s, x_pid AS pid, process, api, kind, address, bytes, x_stack_id AS stack_id,
       x_stack AS stack
FROM (SELECT host_id, segment, ts_ns, op_id, toInt64(pid) AS x_pid, process, api, kind, address, bytes,
             CAST(NULL AS Nullable(Int64)) AS x_stack_id, {{_stack_head}} AS x_stack
      FROM (SELECT * FROM ({{_leak_rows}}) WHERE {{_time}}))
ANY LEFT JOIN {{_segment_starts}} USING (host_id, segment)
ORDER BY bytes DESC, ts_ns, host_id, op_id
