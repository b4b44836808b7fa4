-- nccl_sum: per communicator and collective across hosts, its calls,
-- bytes and host time, and the skew between the ranks' entries into each
-- instance (matched by communicator and sequence number). A collective's
-- skew is over every rank that entered it in the window, whichever hosts
-- and processes the filter asks for; ranks are (host, pid).
-- Columns: comm (16 hex digits, '(unknown)' for hash 0), op, ranks, nranks,
--   calls, bytes, host_ns, avg_host_ns, matched (instances seen by more
--   than one rank), skew_p50_ns, skew_p95_ns, skew_max_ns.
-- Filters (the filter table): host, pid, process, since, until (the skew's
--   instances: since and until only).
SELECT if(comm_hash = 0, '(unknown)', {{_comm}}) AS comm, op, toInt64(uniqExact(host_id, pid)) AS ranks,
       if(max(nranks) > 0, toNullable(toInt64(max(nranks))), CAST(NULL AS Nullable(Int64))) AS nranks,
       toInt64(count()) AS calls, sum(bytes) AS bytes, sum(duration_ns) AS host_ns,
       toFloat64(avg(duration_ns)) AS avg_host_ns, toInt64(any(m_n)) AS matched,
       if(any(m_n) = 0, CAST(NULL AS Nullable(Int64)), toNullable(any(m_p50))) AS skew_p50_ns,
       if(any(m_n) = 0, CAST(NULL AS Nullable(Int64)), toNullable(any(m_p95))) AS skew_p95_ns,
       if(any(m_n) = 0, CAST(NULL AS Nullable(Int64)), toNullable(any(m_mx))) AS skew_max_ns
FROM (SELECT * FROM nccl_calls WHERE {{_where}} AND {{_nccl_collective}})
ANY LEFT JOIN (SELECT comm_hash, op, length(k) AS m_n, k[intDiv(length(k) + 1, 2)] AS m_p50,
                      k[intDiv(95 * length(k) + 99, 100)] AS m_p95, k[length(k)] AS m_mx
               FROM (SELECT comm_hash, op, arraySort(groupArrayIf(skew, seen > 1)) AS k
                     FROM (SELECT comm_hash, op, seq, max(ts_ns) - min(ts_ns) AS skew, uniqExact(host_id, pid) AS seen
                           FROM nccl_calls
                           WHERE {{_time}} AND {{_nccl_collective}} AND seq > 0 AND comm_hash != 0
                             AND comm_hash GLOBAL IN (SELECT comm_hash FROM nccl_calls
                                                      WHERE {{_where}} AND {{_nccl_collective}})
                           GROUP BY comm_hash, op, seq)
                     GROUP BY comm_hash, op)) USING (comm_hash, op)
GROUP BY comm_hash, op
ORDER BY host_ns DESC, calls DESC, comm, op
