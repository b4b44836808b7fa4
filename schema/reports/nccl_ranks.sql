-- nccl_ranks: per rank of each NCCL/RCCL communicator, how it arrived at the
-- collectives it shares with the other ranks: a collective is late for the
-- rank that entered it last, 1 ms or more after the first; waited_ns is the
-- time the rank's entries preceded the last rank's (the time it waited for
-- the others). The straggler is the rank with the most late arrivals; its
-- call_site is the first frame outside libnccl/librccl of the stack its late
-- calls came from most often; python_site the Python line of that stack
-- (CPython frames, schema 18): its innermost frame outside the installed
-- packages and the standard library (site-packages, dist-packages,
-- lib/python3.N), else its innermost Python frame: "name (file:line)".
-- DDP's collectives run on the autograd thread, which runs no Python: their
-- stacks carry the main thread's frames (stacks.python_thread 'main'), so
-- the site is the line that waits in loss.backward().
-- Columns: comm (the communicator's id hash, hex), rank, tgid, process,
--   collectives, late, late_ns (summed lateness of its late arrivals),
--   waited_ns, call_site, python_site.
-- Filters (NULL when not given; gpuobs report --pid/--process/--since/--until):
--   :pid, :process (comm), :since_s / :until_s (seconds after capture start).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
sel AS (SELECT id FROM processes WHERE (:pid IS NULL OR tgid = :pid) AND (:process IS NULL OR comm = :process)),
calls AS (
  SELECT n.* FROM nccl_calls n, c
  WHERE n.seq IS NOT NULL AND n.comm_hash IS NOT NULL
    AND (:since_s IS NULL OR n.ts_mono_ns >= c.t0 + :since_s * 1e9)
    AND (:until_s IS NULL OR n.ts_mono_ns <= c.t0 + :until_s * 1e9)),
inst AS (
  SELECT comm_hash, seq, min(ts_mono_ns) AS first_ns, max(ts_mono_ns) AS last_ns, count(DISTINCT tgid) AS seen
  FROM calls GROUP BY comm_hash, seq),
arr AS (
  SELECT calls.comm_hash, calls.rank, calls.tgid, calls.process_id, calls.stack_id,
         inst.last_ns - calls.ts_mono_ns AS waited,
         CASE WHEN inst.seen > 1 AND calls.ts_mono_ns = inst.last_ns AND inst.last_ns - inst.first_ns >= 1000000
              THEN inst.last_ns - inst.first_ns END AS lateness
  FROM calls JOIN inst ON inst.comm_hash = calls.comm_hash AND inst.seq = calls.seq
  WHERE calls.process_id IN sel),
late_stack AS (
  SELECT comm_hash, rank, stack_id, row_number() OVER (PARTITION BY comm_hash, rank ORDER BY count(*) DESC, stack_id) AS k
  FROM arr WHERE lateness IS NOT NULL AND stack_id IS NOT NULL GROUP BY comm_hash, rank, stack_id),
site AS (
  SELECT ls.comm_hash, ls.rank,
         (SELECT coalesce(s.symbol, printf('%s+0x%x', s.module, s.offset)) FROM stack_symbols s
          WHERE s.stack_id = ls.stack_id AND s.module NOT LIKE '%libnccl.so%' AND s.module NOT LIKE '%librccl.so%'
          ORDER BY s.position LIMIT 1) AS call_site,
         (SELECT printf('%s (%s:%d)', s.symbol, replace(s.file, rtrim(s.file, replace(s.file, '/', '')), ''), s.line)
          FROM stack_symbols s
          WHERE s.stack_id = ls.stack_id AND s.kind = 'python'
          ORDER BY (s.file LIKE '%/site-packages/%' OR s.file LIKE '%/dist-packages/%'
                    OR s.file GLOB '*/lib/python3.[0-9]*/*' OR s.file GLOB '<*>'), s.position LIMIT 1) AS python_site
  FROM late_stack ls WHERE ls.k = 1)
SELECT printf('%016x', arr.comm_hash)   AS comm,
       arr.rank                         AS rank,
       arr.tgid                         AS tgid,
       (SELECT name FROM process_names pn WHERE pn.id = p.id) AS process,
       count(*)                         AS collectives,
       count(arr.lateness)              AS late,
       coalesce(sum(arr.lateness), 0)   AS late_ns,
       sum(arr.waited)                  AS waited_ns,
       site.call_site                   AS call_site,
       site.python_site                 AS python_site
FROM arr LEFT JOIN processes p ON p.id = arr.process_id
     LEFT JOIN site ON site.comm_hash = arr.comm_hash AND site.rank IS arr.rank
GROUP BY arr.comm_hash, arr.rank, arr.tgid
ORDER BY late DESC, late_ns DESC, comm, rank;
