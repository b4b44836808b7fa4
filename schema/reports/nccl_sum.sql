-- nccl_sum: per NCCL/RCCL communicator and operation, the calls, the bytes,
-- the host time inside them and, for collectives, how far apart the ranks
-- arrived: a collective is matched across ranks (processes) by the
-- communicator's id and its sequence number on it; its skew is the last
-- rank's entry minus the first's. Host time is the enqueue: NCCL calls
-- return before the GPU has done the work.
-- Columns: comm (the communicator's id hash, hex), op, ranks (seen),
--   nranks, calls, bytes, host_ns, avg_host_ns, matched (collectives seen
--   in 2 or more ranks), skew_p50_ns, skew_p95_ns, skew_max_ns.
-- Filters (NULL when not given; gpuobs report --pid/--process/--since/--until):
--   :pid, :process (comm), :since_s / :until_s (seconds after capture start).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
sel AS (SELECT id FROM processes WHERE (:pid IS NULL OR tgid = :pid) AND (:process IS NULL OR comm = :process)),
every AS (
  SELECT n.* FROM nccl_calls n, c
  WHERE n.op NOT IN ('comm_init', 'comm_init_all', 'comm_split', 'comm_destroy',
                                             'comm_abort', 'comm_device', 'comm_rank', 'comm_count', 'group_start',
                                             'group_end')
    AND (:since_s IS NULL OR n.ts_mono_ns >= c.t0 + :since_s * 1e9)
    AND (:until_s IS NULL OR n.ts_mono_ns <= c.t0 + :until_s * 1e9)),
-- The rows of the processes asked for; a collective's skew is over every
-- rank, whichever are asked for (a split communicator's ranks have no rank
-- number: processes are counted).
calls AS (SELECT * FROM every WHERE process_id IN sel),
inst AS (
  SELECT comm_hash, op, seq, max(ts_mono_ns) - min(ts_mono_ns) AS skew, count(DISTINCT tgid) AS seen
  FROM every WHERE seq IS NOT NULL AND comm_hash IS NOT NULL
    AND comm_hash IN (SELECT comm_hash FROM calls)
  GROUP BY comm_hash, seq),
ranked AS (
  SELECT comm_hash, op, skew, row_number() OVER (PARTITION BY comm_hash, op ORDER BY skew) AS rn,
         count(*) OVER (PARTITION BY comm_hash, op) AS n
  FROM inst WHERE seen > 1),
skew AS (
  SELECT comm_hash, op, max(n) AS matched,
         max(CASE WHEN rn = (n + 1) / 2 THEN skew END) AS p50,
         max(CASE WHEN rn = (95 * n + 99) / 100 THEN skew END) AS p95,
         max(skew) AS mx
  FROM ranked GROUP BY comm_hash, op)
SELECT CASE WHEN calls.comm_hash IS NULL THEN '(unknown)' ELSE printf('%016x', calls.comm_hash) END AS comm,
       calls.op                        AS op,
       count(DISTINCT calls.tgid)      AS ranks,
       max(calls.nranks)               AS nranks,
       count(*)                        AS calls,
       sum(calls.bytes)                AS bytes,
       sum(calls.duration_ns)          AS host_ns,
       round(avg(calls.duration_ns), 1) AS avg_host_ns,
       coalesce(skew.matched, 0)       AS matched,
       skew.p50                        AS skew_p50_ns,
       skew.p95                        AS skew_p95_ns,
       skew.mx                         AS skew_max_ns
FROM calls LEFT JOIN skew ON skew.comm_hash IS calls.comm_hash AND skew.op = calls.op
GROUP BY calls.comm_hash, calls.op
ORDER BY host_ns DESC, calls DESC, comm, op;
