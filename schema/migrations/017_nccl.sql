-- Schema version 17: NCCL/RCCL calls (docs/schema.md, "Collectives").
-- Communicators are stored once per capture file (a segment of gpuobsd
-- stores again those it sees used); calls hold integer ids only. A
-- collective call's seq is its order on its communicator in its process
-- (1, 2, ...): the same (comm_hash, seq) in every rank of a communicator is
-- the same collective, which is how ranks are matched. Point-to-point calls
-- and groups have no seq. Calls are not interned into shapes as launches
-- are: their rate is hundreds per second, not millions, and seq differs in
-- every row.

CREATE TABLE nccl_comm_rows (
  id INTEGER PRIMARY KEY,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL,
  comm INTEGER NOT NULL,             -- the ncclComm_t handle in that process
  comm_hash INTEGER,                 -- the communicator's identity across processes (NULL: unknown)
  rank INTEGER, nranks INTEGER, device INTEGER,
  parent_hash INTEGER,               -- ncclCommSplit: the communicator split
  created_mono_ns INTEGER,           -- the init or split call (NULL: made before the capture)
  api_id INTEGER REFERENCES strings (id), result INTEGER, stack_id INTEGER
);
CREATE INDEX nccl_comm_rows_hash ON nccl_comm_rows (comm_hash, rank);

CREATE TABLE nccl_call_rows (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  comm_id INTEGER REFERENCES nccl_comm_rows (id), seq INTEGER,
  api_id INTEGER NOT NULL REFERENCES strings (id), op_id INTEGER NOT NULL REFERENCES strings (id),
  count INTEGER, datatype_id INTEGER REFERENCES strings (id), redop_id INTEGER REFERENCES strings (id),
  peer INTEGER, stream INTEGER, bytes INTEGER, send_buf INTEGER, recv_buf INTEGER,
  result INTEGER, stack_id INTEGER
);
CREATE INDEX nccl_call_rows_comm_seq ON nccl_call_rows (comm_id, seq);

CREATE VIEW nccl_comms AS
  SELECT c.id AS id, c.process_id AS process_id, c.tgid AS tgid, c.comm AS comm, c.comm_hash AS comm_hash,
         c.rank AS rank, c.nranks AS nranks, c.device AS device, c.parent_hash AS parent_hash,
         c.created_mono_ns AS created_mono_ns, (SELECT text FROM strings WHERE id = c.api_id) AS api,
         c.result AS result, c.stack_id AS stack_id
  FROM nccl_comm_rows c;

CREATE VIEW nccl_calls AS
  SELECT r.id AS id, r.ts_mono_ns AS ts_mono_ns, r.duration_ns AS duration_ns, r.process_id AS process_id,
         r.tgid AS tgid, r.tid AS tid, (SELECT text FROM strings WHERE id = r.api_id) AS api,
         (SELECT text FROM strings WHERE id = r.op_id) AS op, r.comm_id AS comm_id, c.comm AS comm,
         c.comm_hash AS comm_hash, c.rank AS rank, c.nranks AS nranks, r.seq AS seq, r.count AS count,
         (SELECT text FROM strings WHERE id = r.datatype_id) AS datatype,
         (SELECT text FROM strings WHERE id = r.redop_id) AS redop, r.peer AS peer, r.stream AS stream,
         r.bytes AS bytes, r.send_buf AS send_buf, r.recv_buf AS recv_buf, r.result AS result,
         r.stack_id AS stack_id
  FROM nccl_call_rows r LEFT JOIN nccl_comm_rows c ON c.id = r.comm_id;

-- A collective some ranks of a communicator entered and others had not
-- within the threshold (kind 'missing'), or that every rank entered and one
-- did not return from (kind 'not_returned'): found by gpuobsd's (and gpuobs
-- record's) stall watch while it happens, one row per stall.
CREATE TABLE nccl_stalls (
  id INTEGER PRIMARY KEY, detected_mono_ns INTEGER NOT NULL, comm_hash INTEGER NOT NULL, seq INTEGER NOT NULL,
  op TEXT, kind TEXT NOT NULL, nranks INTEGER, ranks_in TEXT, ranks_missing TEXT,
  waited_ns INTEGER              -- since the first rank entered
);
-- Each rank of a stalled communicator at detection: 'in' (entered and
-- returned), 'inside' (entered, not returned), 'missing' (not entered),
-- 'unseen' (never seen on this host: another host's rank),
-- 'exited' (its process ended before entering); its last call on the
-- communicator (nccl_calls: tgid and ts_mono_ns name the row and its stack).
CREATE TABLE nccl_stall_ranks (
  stall_id INTEGER NOT NULL REFERENCES nccl_stalls (id), rank INTEGER, tgid INTEGER, state TEXT NOT NULL,
  last_seq INTEGER, last_api TEXT, last_call_mono_ns INTEGER
);

-- NCCL calls are calls like the others: api_calls and api_calls_timed (and
-- so api_sum, errors, proc_sum, gpuobs stacks --measure calls and the stack
-- exports) include them, family 'collective'. ncclInProgress (7) is a
-- nonblocking call going on, not a failure: its result reads NULL here.
DROP VIEW api_calls;
CREATE VIEW api_calls AS
  SELECT 'launch' AS family, ts_mono_ns, NULL AS duration_ns, process_id, tgid, tid, api, NULL AS result, stack_id, vendor FROM kernel_launches
  UNION ALL SELECT 'memory', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM gpu_modules
  UNION ALL SELECT 'collective', ts_mono_ns, duration_ns, process_id, tgid, tid, api, NULLIF(result, 7), stack_id, 'nccl' FROM nccl_calls;

DROP VIEW api_calls_timed;
CREATE VIEW api_calls_timed AS
  SELECT 'memory' AS family, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM gpu_modules
  UNION ALL SELECT 'collective', ts_mono_ns, duration_ns, process_id, tgid, tid, api, NULLIF(result, 7), stack_id, 'nccl' FROM nccl_calls;
