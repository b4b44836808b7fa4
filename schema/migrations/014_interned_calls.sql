-- Schema version 14: the call tables hold names as ids (docs/schema.md,
-- "Interned calls"). A PyTorch step looks up kernels as it goes (CUDA 13's
-- lazy loading: cuLibraryGetKernel, cuKernelGetFunction), and every lookup
-- stored the mangled and demangled name, often 200+ characters each: with
-- the copies' symbol and direction text, these rows cost more than the
-- launches. Every repeated text column (api, vendor, op, kind, direction,
-- target, path, name, demangled) is now an id into `strings` (012), the
-- tables are renamed `*_rows`, and views under the documented names show the
-- documented columns in the same order, so SQL written for schema 12 still
-- runs. Row ids are kept: replay_ops.source_id and memory_ops.alloc_id
-- refer to them.
--
-- From this version on kernel_names holds a row only when a (process,
-- handle) learns a name it did not have; repeated lookups that return the
-- same name are their gpu_modules rows.
--
-- Captures written by older builds are read as they are; this migration
-- converts one when a command that writes into it brings it up to date.

-- The views over the old tables go first: they are re-created below over the
-- new views (SQLite would not let a view take a table's name otherwise).
DROP VIEW api_calls;
DROP VIEW api_calls_timed;
DROP VIEW memory_timeline;
DROP VIEW leaks;

-- Every text the old rows hold, once (the launches' names are there already).
CREATE INDEX m014_strings ON strings (text);
INSERT INTO strings (text)
  SELECT t FROM (
    SELECT api AS t FROM memory_ops UNION SELECT op FROM memory_ops UNION SELECT kind FROM memory_ops
    UNION SELECT vendor FROM memory_ops
    UNION SELECT api FROM copies UNION SELECT kind FROM copies UNION SELECT direction FROM copies
    UNION SELECT vendor FROM copies
    UNION SELECT api FROM stream_ops UNION SELECT op FROM stream_ops UNION SELECT vendor FROM stream_ops
    UNION SELECT api FROM syncs UNION SELECT target FROM syncs UNION SELECT vendor FROM syncs
    UNION SELECT api FROM gpu_modules UNION SELECT op FROM gpu_modules UNION SELECT kind FROM gpu_modules
    UNION SELECT path FROM gpu_modules UNION SELECT name FROM gpu_modules UNION SELECT vendor FROM gpu_modules
    UNION SELECT api FROM kernel_names UNION SELECT kind FROM kernel_names UNION SELECT name FROM kernel_names
    UNION SELECT demangled FROM kernel_names UNION SELECT vendor FROM kernel_names)
  WHERE t IS NOT NULL AND NOT EXISTS (SELECT 1 FROM strings s WHERE s.text = t);

-- Each table: its columns of schema 12 (migrations 002, 003, 007), text as
-- ids (→ strings.id; NULL where the text was NULL).
CREATE TABLE memory_op_rows (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  api_id INTEGER NOT NULL REFERENCES strings (id), result INTEGER, per_thread_stream INTEGER NOT NULL,
  op_id INTEGER NOT NULL REFERENCES strings (id), kind_id INTEGER NOT NULL REFERENCES strings (id),
  address INTEGER, bytes INTEGER, stream INTEGER, handle INTEGER, flags INTEGER, alloc_id INTEGER,
  stack_id INTEGER REFERENCES stacks (id), vendor_id INTEGER NOT NULL REFERENCES strings (id)
);
INSERT INTO memory_op_rows
  SELECT id, ts_mono_ns, duration_ns, process_id, tgid, tid, (SELECT s.id FROM strings s WHERE s.text = api), result,
         per_thread_stream, (SELECT s.id FROM strings s WHERE s.text = op),
         (SELECT s.id FROM strings s WHERE s.text = kind), address, bytes, stream, handle, flags, alloc_id, stack_id,
         (SELECT s.id FROM strings s WHERE s.text = vendor)
  FROM memory_ops;
DROP TABLE memory_ops;
CREATE INDEX memory_ops_process ON memory_op_rows (process_id, ts_mono_ns);
CREATE INDEX memory_ops_alloc ON memory_op_rows (alloc_id);

-- Copies and memsets repeat with the same arguments every training step
-- (PyTorch's zero_grad memsets, its DtoD copies): like launches, a row holds
-- what changes (time, duration) and a shape holds the rest, once.
CREATE TABLE copy_shapes (
  id INTEGER PRIMARY KEY,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  api_id INTEGER NOT NULL REFERENCES strings (id), result INTEGER, per_thread_stream INTEGER NOT NULL,
  kind_id INTEGER NOT NULL REFERENCES strings (id), direction_id INTEGER REFERENCES strings (id),
  dst INTEGER, src INTEGER, bytes INTEGER NOT NULL, value INTEGER, stream INTEGER, async INTEGER NOT NULL,
  stack_id INTEGER REFERENCES stacks (id), vendor_id INTEGER NOT NULL REFERENCES strings (id)
);
CREATE TABLE copy_rows (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  shape_id INTEGER NOT NULL REFERENCES copy_shapes (id)
);
CREATE TEMP TABLE m014_copies AS
  SELECT id, ts_mono_ns, duration_ns, process_id, tgid, tid, (SELECT s.id FROM strings s WHERE s.text = api) AS api_id,
         result, per_thread_stream, (SELECT s.id FROM strings s WHERE s.text = kind) AS kind_id,
         (SELECT s.id FROM strings s WHERE s.text = direction) AS direction_id, dst, src, bytes, value, stream, async,
         stack_id, (SELECT s.id FROM strings s WHERE s.text = vendor) AS vendor_id
  FROM copies;
INSERT INTO copy_shapes (process_id, tgid, tid, api_id, result, per_thread_stream, kind_id, direction_id, dst, src,
                         bytes, value, stream, async, stack_id, vendor_id)
  SELECT DISTINCT process_id, tgid, tid, api_id, result, per_thread_stream, kind_id, direction_id, dst, src, bytes,
         value, stream, async, stack_id, vendor_id
  FROM temp.m014_copies;
CREATE INDEX m014_copy_shapes ON copy_shapes (process_id, dst, bytes);
INSERT INTO copy_rows (id, ts_mono_ns, duration_ns, shape_id)
  SELECT c.id, c.ts_mono_ns, c.duration_ns,
         (SELECT s.id FROM copy_shapes s
          WHERE s.process_id = c.process_id AND s.dst IS c.dst AND s.bytes = c.bytes AND s.tgid = c.tgid
            AND s.tid = c.tid AND s.api_id = c.api_id AND s.result IS c.result
            AND s.per_thread_stream = c.per_thread_stream AND s.kind_id = c.kind_id
            AND s.direction_id IS c.direction_id AND s.src IS c.src AND s.value IS c.value AND s.stream IS c.stream
            AND s.async = c.async AND s.stack_id IS c.stack_id AND s.vendor_id = c.vendor_id)
  FROM temp.m014_copies c;
DROP INDEX m014_copy_shapes;
DROP TABLE temp.m014_copies;
DROP TABLE copies;

CREATE TABLE stream_op_rows (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  api_id INTEGER NOT NULL REFERENCES strings (id), result INTEGER, per_thread_stream INTEGER NOT NULL,
  op_id INTEGER NOT NULL REFERENCES strings (id),
  stream INTEGER, event INTEGER, handle INTEGER, flags INTEGER, priority INTEGER,
  stack_id INTEGER REFERENCES stacks (id), vendor_id INTEGER NOT NULL REFERENCES strings (id)
);
INSERT INTO stream_op_rows
  SELECT id, ts_mono_ns, duration_ns, process_id, tgid, tid, (SELECT s.id FROM strings s WHERE s.text = api), result,
         per_thread_stream, (SELECT s.id FROM strings s WHERE s.text = op), stream, event, handle, flags, priority,
         stack_id, (SELECT s.id FROM strings s WHERE s.text = vendor)
  FROM stream_ops;
DROP TABLE stream_ops;
CREATE INDEX stream_ops_process ON stream_op_rows (process_id, ts_mono_ns);

CREATE TABLE sync_rows (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  api_id INTEGER NOT NULL REFERENCES strings (id), result INTEGER, per_thread_stream INTEGER NOT NULL,
  target_id INTEGER NOT NULL REFERENCES strings (id),
  stream INTEGER, event INTEGER, context INTEGER, blocked_ns INTEGER,
  stack_id INTEGER REFERENCES stacks (id), vendor_id INTEGER NOT NULL REFERENCES strings (id)
);
INSERT INTO sync_rows
  SELECT id, ts_mono_ns, duration_ns, process_id, tgid, tid, (SELECT s.id FROM strings s WHERE s.text = api), result,
         per_thread_stream, (SELECT s.id FROM strings s WHERE s.text = target), stream, event, context, blocked_ns,
         stack_id, (SELECT s.id FROM strings s WHERE s.text = vendor)
  FROM syncs;
DROP TABLE syncs;
CREATE INDEX syncs_process ON sync_rows (process_id, ts_mono_ns);

-- Module calls repeat too (PyTorch's cuKernelGetFunction returning the same
-- handle every step): a row per call, a shape per distinct call.
CREATE TABLE gpu_module_shapes (
  id INTEGER PRIMARY KEY,
  process_id INTEGER NOT NULL REFERENCES processes (id), tgid INTEGER NOT NULL, tid INTEGER NOT NULL,
  api_id INTEGER NOT NULL REFERENCES strings (id), result INTEGER,
  op_id INTEGER NOT NULL REFERENCES strings (id), kind_id INTEGER NOT NULL REFERENCES strings (id),
  handle INTEGER, source INTEGER,
  path_id INTEGER REFERENCES strings (id), name_id INTEGER REFERENCES strings (id),
  stack_id INTEGER REFERENCES stacks (id), vendor_id INTEGER NOT NULL REFERENCES strings (id)
);
CREATE TABLE gpu_module_rows (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL, duration_ns INTEGER,
  shape_id INTEGER NOT NULL REFERENCES gpu_module_shapes (id)
);
CREATE TEMP TABLE m014_modules AS
  SELECT id, ts_mono_ns, duration_ns, process_id, tgid, tid, (SELECT s.id FROM strings s WHERE s.text = api) AS api_id,
         result, (SELECT s.id FROM strings s WHERE s.text = op) AS op_id,
         (SELECT s.id FROM strings s WHERE s.text = kind) AS kind_id, handle, source,
         (SELECT s.id FROM strings s WHERE s.text = path) AS path_id,
         (SELECT s.id FROM strings s WHERE s.text = name) AS name_id, stack_id,
         (SELECT s.id FROM strings s WHERE s.text = vendor) AS vendor_id
  FROM gpu_modules;
INSERT INTO gpu_module_shapes (process_id, tgid, tid, api_id, result, op_id, kind_id, handle, source, path_id, name_id,
                               stack_id, vendor_id)
  SELECT DISTINCT process_id, tgid, tid, api_id, result, op_id, kind_id, handle, source, path_id, name_id, stack_id,
         vendor_id
  FROM temp.m014_modules;
CREATE INDEX m014_module_shapes ON gpu_module_shapes (process_id, handle);
INSERT INTO gpu_module_rows (id, ts_mono_ns, duration_ns, shape_id)
  SELECT m.id, m.ts_mono_ns, m.duration_ns,
         (SELECT s.id FROM gpu_module_shapes s
          WHERE s.process_id = m.process_id AND s.handle IS m.handle AND s.tgid = m.tgid AND s.tid = m.tid
            AND s.api_id = m.api_id AND s.result IS m.result AND s.op_id = m.op_id AND s.kind_id = m.kind_id
            AND s.source IS m.source AND s.path_id IS m.path_id AND s.name_id IS m.name_id
            AND s.stack_id IS m.stack_id AND s.vendor_id = m.vendor_id)
  FROM temp.m014_modules m;
DROP INDEX m014_module_shapes;
DROP TABLE temp.m014_modules;
DROP TABLE gpu_modules;

-- Old captures keep every lookup's row: which ones repeated a name is not
-- rewritten after the fact.
CREATE TABLE kernel_name_rows (
  id INTEGER PRIMARY KEY, ts_mono_ns INTEGER NOT NULL,
  process_id INTEGER NOT NULL REFERENCES processes (id),
  handle INTEGER NOT NULL,
  kind_id INTEGER NOT NULL REFERENCES strings (id),
  name_id INTEGER NOT NULL REFERENCES strings (id),
  demangled_id INTEGER NOT NULL REFERENCES strings (id),
  api_id INTEGER NOT NULL REFERENCES strings (id),
  source INTEGER,
  stack_id INTEGER REFERENCES stacks (id), vendor_id INTEGER NOT NULL REFERENCES strings (id)
);
INSERT INTO kernel_name_rows
  SELECT id, ts_mono_ns, process_id, handle, (SELECT s.id FROM strings s WHERE s.text = kind),
         (SELECT s.id FROM strings s WHERE s.text = name), (SELECT s.id FROM strings s WHERE s.text = demangled),
         (SELECT s.id FROM strings s WHERE s.text = api), source, stack_id,
         (SELECT s.id FROM strings s WHERE s.text = vendor)
  FROM kernel_names;
DROP TABLE kernel_names;
CREATE INDEX kernel_names_handle ON kernel_name_rows (process_id, handle);

DROP INDEX m014_strings;

-- The documented tables, every column of schema 12 in the same order. Each
-- text is a subquery, not a join: SQLite looks up only the columns a query
-- uses (copy_sum, reading kind and direction, takes 0.22 s on 240,000 copies
-- against 0.36 s through LEFT JOINs and 0.26 s with the text in the row), and
-- a row whose id points at nothing still shows, with NULL text (gpuobs check
-- names it).
CREATE VIEW memory_ops AS
  SELECT r.id AS id, r.ts_mono_ns AS ts_mono_ns, r.duration_ns AS duration_ns, r.process_id AS process_id,
         r.tgid AS tgid, r.tid AS tid, (SELECT text FROM strings WHERE id = r.api_id) AS api, r.result AS result,
         r.per_thread_stream AS per_thread_stream, (SELECT text FROM strings WHERE id = r.op_id) AS op,
         (SELECT text FROM strings WHERE id = r.kind_id) AS kind, r.address AS address, r.bytes AS bytes,
         r.stream AS stream, r.handle AS handle, r.flags AS flags, r.alloc_id AS alloc_id, r.stack_id AS stack_id,
         (SELECT text FROM strings WHERE id = r.vendor_id) AS vendor
  FROM memory_op_rows r;

CREATE VIEW copies AS
  SELECT r.id AS id, r.ts_mono_ns AS ts_mono_ns, r.duration_ns AS duration_ns, s.process_id AS process_id,
         s.tgid AS tgid, s.tid AS tid, (SELECT text FROM strings WHERE id = s.api_id) AS api, s.result AS result,
         s.per_thread_stream AS per_thread_stream, (SELECT text FROM strings WHERE id = s.kind_id) AS kind,
         (SELECT text FROM strings WHERE id = s.direction_id) AS direction, s.dst AS dst, s.src AS src,
         s.bytes AS bytes, s.value AS value, s.stream AS stream, s.async AS async, s.stack_id AS stack_id,
         (SELECT text FROM strings WHERE id = s.vendor_id) AS vendor
  FROM copy_rows r LEFT JOIN copy_shapes s ON s.id = r.shape_id;

CREATE VIEW stream_ops AS
  SELECT r.id AS id, r.ts_mono_ns AS ts_mono_ns, r.duration_ns AS duration_ns, r.process_id AS process_id,
         r.tgid AS tgid, r.tid AS tid, (SELECT text FROM strings WHERE id = r.api_id) AS api, r.result AS result,
         r.per_thread_stream AS per_thread_stream, (SELECT text FROM strings WHERE id = r.op_id) AS op,
         r.stream AS stream, r.event AS event, r.handle AS handle, r.flags AS flags, r.priority AS priority,
         r.stack_id AS stack_id, (SELECT text FROM strings WHERE id = r.vendor_id) AS vendor
  FROM stream_op_rows r;

CREATE VIEW syncs AS
  SELECT r.id AS id, r.ts_mono_ns AS ts_mono_ns, r.duration_ns AS duration_ns, r.process_id AS process_id,
         r.tgid AS tgid, r.tid AS tid, (SELECT text FROM strings WHERE id = r.api_id) AS api, r.result AS result,
         r.per_thread_stream AS per_thread_stream, (SELECT text FROM strings WHERE id = r.target_id) AS target,
         r.stream AS stream, r.event AS event, r.context AS context, r.blocked_ns AS blocked_ns,
         r.stack_id AS stack_id, (SELECT text FROM strings WHERE id = r.vendor_id) AS vendor
  FROM sync_rows r;

CREATE VIEW gpu_modules AS
  SELECT r.id AS id, r.ts_mono_ns AS ts_mono_ns, r.duration_ns AS duration_ns, s.process_id AS process_id,
         s.tgid AS tgid, s.tid AS tid, (SELECT text FROM strings WHERE id = s.api_id) AS api, s.result AS result,
         (SELECT text FROM strings WHERE id = s.op_id) AS op,
         (SELECT text FROM strings WHERE id = s.kind_id) AS kind, s.handle AS handle, s.source AS source,
         (SELECT text FROM strings WHERE id = s.path_id) AS path,
         (SELECT text FROM strings WHERE id = s.name_id) AS name, s.stack_id AS stack_id,
         (SELECT text FROM strings WHERE id = s.vendor_id) AS vendor
  FROM gpu_module_rows r LEFT JOIN gpu_module_shapes s ON s.id = r.shape_id;

CREATE VIEW kernel_names AS
  SELECT r.id AS id, r.ts_mono_ns AS ts_mono_ns, r.process_id AS process_id, r.handle AS handle,
         (SELECT text FROM strings WHERE id = r.kind_id) AS kind,
         (SELECT text FROM strings WHERE id = r.name_id) AS name,
         (SELECT text FROM strings WHERE id = r.demangled_id) AS demangled,
         (SELECT text FROM strings WHERE id = r.api_id) AS api, r.source AS source, r.stack_id AS stack_id,
         (SELECT text FROM strings WHERE id = r.vendor_id) AS vendor
  FROM kernel_name_rows r;

-- The views of migrations 002, 005 and 007, as they were, over the views above.
CREATE VIEW api_calls AS
  SELECT 'launch' AS family, ts_mono_ns, NULL AS duration_ns, process_id, tgid, tid, api, NULL AS result, stack_id, vendor FROM kernel_launches
  UNION ALL SELECT 'memory', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM gpu_modules;

CREATE VIEW api_calls_timed AS
  SELECT 'memory' AS family, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM gpu_modules;

-- memory_timeline compares ids, and reads each text once per row: a window
-- over the view would look op up five times per row (the mem report took
-- twice as long).
CREATE VIEW memory_timeline AS
  SELECT r.process_id AS process_id, (SELECT text FROM strings WHERE id = r.kind_id) AS kind,
         r.ts_mono_ns AS ts_mono_ns, (SELECT text FROM strings WHERE id = r.op_id) AS op, r.address AS address,
         r.bytes AS bytes,
         sum(CASE WHEN r.op_id IN (SELECT id FROM strings WHERE text IN ('alloc', 'create')) THEN r.bytes
                  WHEN r.op_id IN (SELECT id FROM strings WHERE text IN ('free', 'release')) THEN -r.bytes ELSE 0 END)
           OVER (PARTITION BY r.process_id, r.kind_id ORDER BY r.ts_mono_ns, r.id) AS live_bytes
  FROM memory_op_rows r
  WHERE (r.result IS NULL OR r.result = 0) AND r.bytes IS NOT NULL
    AND r.op_id IN (SELECT id FROM strings WHERE text IN ('alloc', 'free', 'create', 'release'));

-- The leaks found once per query on the rows, by id ("was it freed" reads
-- their alloc_id index): the mem report asks per process and kind, and a
-- filter on the view's op would look it up for every row each time.
CREATE VIEW leaks AS
  SELECT a.* FROM memory_ops a
  WHERE a.id IN (SELECT r.id FROM memory_op_rows r
                 WHERE r.op_id IN (SELECT id FROM strings WHERE text IN ('alloc', 'create'))
                   AND (r.result IS NULL OR r.result = 0)
                   AND NOT EXISTS (SELECT 1 FROM memory_op_rows f WHERE f.alloc_id = r.id));
