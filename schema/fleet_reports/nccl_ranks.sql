-- nccl_ranks: per communicator and rank across hosts (a rank is (host,
-- pid) in its communicator), its collectives, how many it entered last
-- (by 1 ms or more, with another rank in), by how much, the time it waited
-- for the others, and the site of its late calls. A collective's arrival
-- order is over every rank that entered it in the window, whichever hosts
-- the filter asks for (as nccl_sum). The site is that of the stack the late
-- calls came from most often, from the sites the shipper computed per stack
-- (nccl_calls.call_site and python_site, as the local report finds them):
-- the stack with the most late calls, the lowest stack id on a tie
-- (stack_key: the capture's stack id), NULL where that stack has none. (As
-- a tuple: argMax skips a Nullable argument's NULLs, which would pass the
-- site to a lesser stack.) An empty stack is none.
-- Columns: comm, rank, tgid, process, collectives, late, late_ns, waited_ns,
--   call_site, python_site.
-- Filters (the filter table): host, pid, process, since, until (the arrival
--   order: since and until only).
SELECT y_comm AS comm, y_rank AS rank, y_tgid AS tgid, x_process AS process, x_n AS collectives, x_late AS late,
       x_late_ns AS late_ns, x_waited AS waited_ns, x_call AS call_site, x_py AS python_site
FROM (SELECT *, if(comm_hash = 0, '(unknown)', {{_comm}}) AS y_comm,
             if(rank < 0, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(rank))) AS y_rank, toInt64(pid) AS y_tgid,
             if(x_site_late = 0, CAST(NULL AS Nullable(String)), tupleElement(x_site, 1)) AS x_call,
             if(x_site_late = 0, CAST(NULL AS Nullable(String)), tupleElement(x_site, 2)) AS x_py
      FROM (SELECT comm_hash, rank, host_id, pid, any(s_process) AS x_process, toInt64(sum(s_n)) AS x_n,
                   toInt64(sum(s_late)) AS x_late, toInt64(sum(s_late_ns)) AS x_late_ns,
                   toInt64(sum(s_waited)) AS x_waited, max(if(isNotNull(stack_key), s_late, 0)) AS x_site_late,
                   argMax((s_call, s_py), (if(isNotNull(stack_key), s_late, 0), -ifNull(stack_key, 0))) AS x_site
            FROM (SELECT comm_hash, rank, host_id, pid, stack_key, any(process) AS s_process, any(call_site) AS s_call,
                         any(python_site) AS s_py, count() AS s_n, countIf(a_late > 0) AS s_late,
                         sum(a_late) AS s_late_ns, sum(i_last - ts_ns) AS s_waited
                  FROM (SELECT *, if(i_seen > 1 AND ts_ns = i_last AND i_last - i_first >= 1000000,
                                     i_last - i_first, 0) AS a_late
                        FROM (SELECT * FROM nccl_calls WHERE seq > 0 AND comm_hash != 0 AND {{_where}})
                        ANY INNER JOIN (SELECT comm_hash, seq, min(ts_ns) AS i_first, max(ts_ns) AS i_last,
                                               uniqExact(host_id, pid) AS i_seen
                                        FROM nccl_calls WHERE seq > 0 AND comm_hash != 0 AND {{_time}}
                                        GROUP BY comm_hash, seq) USING (comm_hash, seq))
                  GROUP BY comm_hash, rank, host_id, pid, stack_key)
            GROUP BY comm_hash, rank, host_id, pid))
ORDER BY late DESC, late_ns DESC, comm, rank NULLS FIRST, host_id
