-- capture: what was captured, as key/value rows (metadata, then counters).
-- state: 'complete', or 'incomplete (reason)' for a capture cut short; its
-- counters are then those of its last commit (last_commit_s).
-- kernel_launches is counted from launch_agg (the same number, without
-- reading every launch). Columns: key, value.
SELECT 'gpuobs_version' AS key, gpuobs_version AS value FROM capture
UNION ALL SELECT 'abi_version', abi_version FROM capture
UNION ALL SELECT 'mode', mode FROM capture
UNION ALL SELECT 'command', command FROM capture
UNION ALL SELECT 'host', host FROM capture
UNION ALL SELECT 'kernel', kernel FROM capture
UNION ALL SELECT 'nvidia_driver', coalesce(nvidia_driver, '(not loaded)') FROM capture
UNION ALL SELECT 'start_utc', strftime('%Y-%m-%dT%H:%M:%fZ', (start_mono_ns + clock_offset_ns) / 1e9, 'unixepoch') FROM capture
UNION ALL SELECT 'state', coalesce(state, 'unknown (written before schema version 11)') FROM capture
UNION ALL SELECT 'duration_s', round((end_mono_ns - start_mono_ns) / 1e9, 3) FROM capture
UNION ALL SELECT 'last_commit_s', round((committed_mono_ns - start_mono_ns) / 1e9, 3) FROM capture
UNION ALL SELECT 'exit_status', exit_status FROM capture
UNION ALL SELECT 'ring_buffer_bytes', ring_buffer_bytes FROM capture
UNION ALL SELECT 'stack_depth', coalesce(stack_depth, 'unknown (written before schema version 15)') FROM capture
UNION ALL SELECT 'unwind', coalesce(unwind, 'unknown (written before schema version 15)') FROM capture
UNION ALL SELECT 'stack_copy_bytes', coalesce(stack_copy_bytes, 'unknown (written before schema version 15)') FROM capture
UNION ALL SELECT 'processes', count(*) FROM processes
UNION ALL SELECT 'kernel_launches', coalesce(sum(launches), 0) FROM launch_agg
UNION ALL SELECT 'ioctls', count(*) FROM ioctls
UNION ALL SELECT * FROM (SELECT 'counter.' || name, value FROM counters ORDER BY source, name);
