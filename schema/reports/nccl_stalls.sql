-- nccl_stalls: the collectives the stall watch of gpuobsd (or gpuobs record)
-- found stuck: entered by some ranks of a communicator and not by others for
-- longer than the threshold (kind missing), or entered by every rank and not
-- returned from (kind not_returned). One row per stalled rank: its state
-- ('in': entered and returned; 'inside': entered, not returned; 'missing':
-- not entered; 'exited': its process ended first), its last call on the
-- communicator and the call site of that call's stack, native (first frame
-- outside libnccl/librccl) and Python (python_site, as nccl_ranks has it).
-- Columns: stall, detected_s (seconds after capture start), comm, seq, op,
--   kind, waited_ns, rank, tgid, state, last_seq, last_api, call_site,
--   python_site.
-- Filters (NULL when not given; gpuobs report --pid):
--   :pid (a rank's process).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture)
SELECT s.id                                           AS stall,
       round((s.detected_mono_ns - c.t0) / 1e9, 3)   AS detected_s,
       printf('%016x', s.comm_hash)                  AS comm,
       s.seq                                         AS seq,
       s.op                                          AS op,
       s.kind                                        AS kind,
       s.waited_ns                                   AS waited_ns,
       r.rank                                        AS rank,
       r.tgid                                        AS tgid,
       r.state                                       AS state,
       r.last_seq                                    AS last_seq,
       r.last_api                                    AS last_api,
       (SELECT coalesce(ss.symbol, printf('%s+0x%x', ss.module, ss.offset)) FROM nccl_calls n
          JOIN stack_symbols ss ON ss.stack_id = n.stack_id
        WHERE n.tgid = r.tgid AND n.ts_mono_ns = r.last_call_mono_ns
          AND ss.module NOT LIKE '%libnccl.so%' AND ss.module NOT LIKE '%librccl.so%'
        ORDER BY n.id, ss.position LIMIT 1)          AS call_site,
       (SELECT printf('%s (%s:%d)', ss.symbol, replace(ss.file, rtrim(ss.file, replace(ss.file, '/', '')), ''),
                      ss.line)
          FROM nccl_calls n JOIN stack_symbols ss ON ss.stack_id = n.stack_id
        WHERE n.tgid = r.tgid AND n.ts_mono_ns = r.last_call_mono_ns AND ss.kind = 'python'
        ORDER BY n.id, (ss.file LIKE '%/site-packages/%' OR ss.file LIKE '%/dist-packages/%'
                        OR ss.file GLOB '*/lib/python3.[0-9]*/*' OR ss.file GLOB '<*>'), ss.position
        LIMIT 1)                                     AS python_site
FROM nccl_stalls s JOIN nccl_stall_ranks r ON r.stall_id = s.id, c
WHERE :pid IS NULL OR r.tgid = :pid
ORDER BY s.id, r.state <> 'missing', r.rank;
