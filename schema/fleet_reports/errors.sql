-- errors: every failed API call (_failed) and ioctl, in time order; time_s
-- after the segment's start; a shipped stack has no id (stack_id NULL) and
-- the stack is its innermost four frames (_stack_head). An ioctl's call is
-- its request with the RM control or allocation class it carried, by name
-- or as printf('0x%08x') / printf('0x%x') write them (hex() of an unsigned
-- integer gives whole bytes, upper case), or 'ioctl MAJOR:MINOR 0xCMD'.
-- Columns: time_s, pid, process, tid, layer (api, ioctl), call, result,
--   status, stack_id, stack.
-- Filters (the filter table): host, pid, process, since, until.
SELECT {{_time_s}} AS time_s, x_pid AS pid, process, x_tid AS tid, layer, call, x_result AS result,
       x_status AS status, CAST(NULL AS Nullable(Int64)) AS stack_id, x_stack AS stack
FROM (SELECT host_id, segment, ts_ns, toInt64(pid) AS x_pid, process, toInt64(tid) AS x_tid, 'api' AS layer,
             api AS call, result AS x_result, CAST(NULL AS Nullable(String)) AS x_status, {{_stack_head}} AS x_stack
      FROM api_calls WHERE {{_failed}} AND {{_where}}
      UNION ALL
      SELECT host_id, segment, ts_ns, toInt64(pid), process, toInt64(tid), 'ioctl',
             ifNull(concat(request, multiIf(
                      isNotNull(control),
                      concat(' ', ifNull(control_name, concat('0x', lower(concat(substring('00000000', 1,
                        greatest(8 - length(hex(toUInt32(assumeNotNull(control)))), 0)),
                        hex(toUInt32(assumeNotNull(control)))))))),
                      isNotNull(object_class),
                      concat(' ', ifNull(class_name, concat('0x', if(assumeNotNull(object_class) = 0, '0',
                        replaceRegexpOne(lower(hex(toUInt64(assumeNotNull(object_class)))), '^0+', ''))))),
                      '')),
                    concat('ioctl ', toString(dev_major), ':', toString(dev_minor), ' ',
                           concat('0x', lower(concat(substring('00000000', 1, greatest(8 - length(hex(toUInt32(cmd))), 0)),
                                                     hex(toUInt32(cmd))))))),
             if(ret < 0, toNullable(ret), status), status_name, {{_stack_head}}
      FROM ioctls WHERE ifNull(failed, ret < 0) AND {{_where}})
ANY LEFT JOIN {{_segment_starts}} USING (host_id, segment)
ORDER BY ts_ns, layer, tid, host_id
