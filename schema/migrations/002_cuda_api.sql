-- Schema version 2: the full CUDA driver API capture (docs/schema.md).
-- Every call table shares: ts_mono_ns (entry), duration_ns (entry to return;
-- NULL for calls probed at entry only), process_id/tgid/tid, api (exported
-- symbol), result (CUresult; NULL without a return probe), per_thread_stream
-- (1 for _ptsz/_ptds variants: stream 0 then means the per-thread stream).

ALTER TABLE kernel_launches ADD COLUMN kernel_name TEXT;        -- demangled; NULL: not learned (see kernel_names)
ALTER TABLE kernel_launches ADD COLUMN cooperative INTEGER NOT NULL DEFAULT 0;
ALTER TABLE kernel_launches ADD COLUMN cluster_x INTEGER;       -- cuLaunchKernelEx cluster dimensions, if set
ALTER TABLE kernel_launches ADD COLUMN cluster_y INTEGER;
ALTER TABLE kernel_launches ADD COLUMN cluster_z INTEGER;
ALTER TABLE kernel_launches ADD COLUMN per_thread_stream INTEGER NOT NULL DEFAULT 0;
ALTER TABLE kernel_launches ADD COLUMN attributes INTEGER NOT NULL DEFAULT 0;  -- cuLaunchKernelEx numAttrs

-- Allocations, frees and the virtual-memory calls.
CREATE TABLE memory_ops (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  api TEXT NOT NULL, result INTEGER, per_thread_stream INTEGER NOT NULL,
  op TEXT NOT NULL,        -- alloc, free, create, release, map, unmap
  kind TEXT NOT NULL,      -- device, pitch, managed, host, async, pool, physical, virtual
  address INTEGER,         -- allocated (alloc: the returned pointer), freed, mapped or unmapped address
  bytes INTEGER,           -- requested bytes; for free/release/unmap: the matching allocation's bytes
  stream INTEGER,          -- async allocations and frees
  handle INTEGER,          -- pool (alloc from pool), physical allocation handle (create/release/map)
  flags INTEGER,
  alloc_id INTEGER         -- free/release/unmap: memory_ops.id of the matching alloc/create/map; NULL if unknown
);
CREATE INDEX memory_ops_process ON memory_ops (process_id, ts_mono_ns);

-- Copies and memsets.
CREATE TABLE copies (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  api TEXT NOT NULL, result INTEGER, per_thread_stream INTEGER NOT NULL,
  kind TEXT NOT NULL,      -- copy, memset
  direction TEXT,          -- HtoD, DtoH, DtoD, HtoH, AtoD, DtoA, HtoA, AtoH, peer, default (unified addressing); NULL for memsets
  dst INTEGER, src INTEGER,
  bytes INTEGER NOT NULL,
  value INTEGER,           -- memset value
  stream INTEGER,          -- async calls
  async INTEGER NOT NULL   -- 1 for *Async calls
);
CREATE INDEX copies_process ON copies (process_id, ts_mono_ns);

-- Stream and event operations, graph launches and host functions.
CREATE TABLE stream_ops (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  api TEXT NOT NULL, result INTEGER, per_thread_stream INTEGER NOT NULL,
  op TEXT NOT NULL,        -- stream_create, stream_destroy, wait_event, stream_query, capture_begin, capture_end,
                           -- host_func, graph_launch, event_create, event_record, event_query, event_destroy
  stream INTEGER,          -- created stream (stream_create) or the stream operated on
  event INTEGER,           -- created event (event_create) or the event operated on
  handle INTEGER,          -- graph exec (graph_launch), captured graph (capture_end), host function (host_func)
  flags INTEGER,
  priority INTEGER         -- stream_create with priority; capture mode for capture_begin is in flags
);
CREATE INDEX stream_ops_process ON stream_ops (process_id, ts_mono_ns);

-- Host-blocking synchronizations.
CREATE TABLE syncs (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  api TEXT NOT NULL, result INTEGER, per_thread_stream INTEGER NOT NULL,
  target TEXT NOT NULL,    -- stream, event, context
  stream INTEGER, event INTEGER, context INTEGER,
  blocked_ns INTEGER       -- host time inside the call (= duration_ns)
);
CREATE INDEX syncs_process ON syncs (process_id, ts_mono_ns);

-- Module and library loads, and the lookups that hand out function handles.
CREATE TABLE modules (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  api TEXT NOT NULL, result INTEGER,
  op TEXT NOT NULL,        -- load, get_function, get_kernel, kernel_function
  kind TEXT NOT NULL,      -- what the call returns: module, library, function, kernel
  handle INTEGER,          -- the CUmodule / CUlibrary / CUfunction / CUkernel returned
  source INTEGER,          -- lookups: the module, library or kernel searched
  path TEXT,               -- cuModuleLoad / cuLibraryLoadFromFile
  name TEXT                -- cuModuleGetFunction / cuLibraryGetKernel: the name asked for
);

-- Kernel names learned from the calls that hand out function handles.
CREATE TABLE kernel_names (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL,
  process_id INTEGER NOT NULL REFERENCES processes (id),
  handle INTEGER NOT NULL, -- CUfunction or CUkernel
  kind TEXT NOT NULL,      -- function, kernel
  name TEXT NOT NULL,      -- as given to the driver (mangled)
  demangled TEXT NOT NULL, -- C++ demangled (= name if not mangled)
  api TEXT NOT NULL,       -- cuModuleGetFunction, cuLibraryGetKernel, cuKernelGetFunction
  source INTEGER           -- the module, library or kernel handle it came from
);
CREATE INDEX kernel_names_handle ON kernel_names (process_id, handle);

-- Every captured API call, one row each, for reports over all families.
CREATE VIEW api_calls AS
  SELECT 'launch' AS family, ts_mono_ns, NULL AS duration_ns, process_id, tgid, tid, api, NULL AS result FROM kernel_launches
  UNION ALL SELECT 'memory', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result FROM modules;

-- Live bytes per process and kind after every successful allocation or free
-- (device memory over time: WHERE kind IN ('device','pitch','async','pool')).
CREATE VIEW memory_timeline AS
  SELECT process_id, kind, ts_mono_ns, op, address, bytes,
         sum(CASE WHEN op IN ('alloc', 'create') THEN bytes WHEN op IN ('free', 'release') THEN -bytes ELSE 0 END)
           OVER (PARTITION BY process_id, kind ORDER BY ts_mono_ns, id) AS live_bytes
  FROM memory_ops
  WHERE (result IS NULL OR result = 0) AND op IN ('alloc', 'free', 'create', 'release') AND bytes IS NOT NULL;

-- Allocations never freed during the capture.
CREATE VIEW leaks AS
  SELECT a.* FROM memory_ops a
  WHERE a.op IN ('alloc', 'create') AND (a.result IS NULL OR a.result = 0)
    AND NOT EXISTS (SELECT 1 FROM memory_ops f WHERE f.alloc_id = a.id);
