-- _leak_rows: the successful allocations of memory_ops never freed in their
-- segment (no row of the segment names them in alloc_id), as the leaks
-- view, for the filter's host, pid and process. A free is in its
-- allocation's host, segment and process: the frees are looked for under
-- the same filters (not the time ones: a free after --until still frees),
-- so a one-host report does not gather the fleet's frees.
SELECT * FROM memory_ops
WHERE op IN ('alloc', 'create') AND (isNull(result) OR result = 0) AND {{_who}}
  AND (host_id, segment, op_id) GLOBAL NOT IN (SELECT host_id, segment, assumeNotNull(alloc_id) FROM memory_ops
                                               WHERE isNotNull(alloc_id) AND {{_who}})
