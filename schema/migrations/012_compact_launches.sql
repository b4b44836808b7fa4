-- Schema version 12: the compact launch capture (docs/schema.md, "Compact
-- launches"). A training step repeats the same few thousand launches, so a
-- launch row holds only what changes from launch to launch: its time and its
-- "shape" (everything else: process, thread, API, function, kernel name,
-- grid, block, shared memory, stream, argument pointers, flags, stack).
-- Names are stored once in `strings`. kernel_launches and launch_agg keep
-- their names and columns as views, so SQL written for schema 11 still runs.
--
-- The launch's key is its time: launches.id = (ts_mono_ns - capture
-- start) * 8 + n, n = 0..7 telling apart launches of the same nanosecond
-- (two threads can launch in the same one). The key doubles as the time
-- index, and SQLite stores it as the row's B-tree key: 7 bytes for a capture
-- of up to 39 hours, no separate timestamp column, no index.
--
-- Captures written by older builds are read as they are (every reader uses
-- the documented names); this migration converts one when a command that
-- writes into it (gpuobs upgrade, gpuobs replay) brings it up to date.

-- Every name a row refers to, once: API symbols, kernel names, vendors.
-- The writer interns them in memory, so text is unique without an index.
CREATE TABLE strings (
  id    INTEGER PRIMARY KEY,
  text  TEXT NOT NULL
);

-- What launches have in common; see kernel_launches (migrations 001, 002,
-- 003, 007) for the meaning of each column.
CREATE TABLE launch_shapes (
  id               INTEGER PRIMARY KEY,
  process_id       INTEGER NOT NULL REFERENCES processes (id),
  tgid             INTEGER NOT NULL,
  tid              INTEGER NOT NULL,
  api_id           INTEGER NOT NULL REFERENCES strings (id),
  function         INTEGER NOT NULL,
  grid_x           INTEGER NOT NULL,
  grid_y           INTEGER NOT NULL,
  grid_z           INTEGER NOT NULL,
  block_x          INTEGER NOT NULL,
  block_y          INTEGER NOT NULL,
  block_z          INTEGER NOT NULL,
  shared_mem_bytes INTEGER NOT NULL,
  stream           INTEGER NOT NULL,
  kernel_params    INTEGER NOT NULL,
  extra            INTEGER NOT NULL,
  args_complete    INTEGER NOT NULL,
  kernel_name_id   INTEGER REFERENCES strings (id),   -- NULL: name not learned
  cooperative      INTEGER NOT NULL,
  cluster_x        INTEGER,
  cluster_y        INTEGER,
  cluster_z        INTEGER,
  per_thread_stream INTEGER NOT NULL,
  attributes       INTEGER NOT NULL,
  stack_id         INTEGER REFERENCES stacks (id),
  vendor_id        INTEGER NOT NULL REFERENCES strings (id)
);

-- One row per launch: its time (in the key) and its shape.
CREATE TABLE launches (
  id        INTEGER PRIMARY KEY,                   -- (ts_mono_ns - capture.start_mono_ns) * 8 + n
  shape_id  INTEGER NOT NULL REFERENCES launch_shapes (id)
);

-- Launches per shape and second of the capture, kept by the writer in the
-- same transaction as the launches: the counting reports read these (through
-- launch_agg) instead of every launch. Grid, block and shared memory sums
-- follow from the shape.
CREATE TABLE launch_counts (
  shape_id  INTEGER NOT NULL REFERENCES launch_shapes (id),
  bucket_s  INTEGER NOT NULL,                      -- whole seconds after capture.start_mono_ns; -1 before it
  launches  INTEGER NOT NULL,
  first_ns  INTEGER NOT NULL,                      -- relative to capture.start_mono_ns
  last_ns   INTEGER NOT NULL,
  PRIMARY KEY (shape_id, bucket_s)
) WITHOUT ROWID;

-- Converting a capture of schema 11 or older (empty for a new capture).
CREATE TEMP TABLE m012_start AS
  SELECT coalesce((SELECT start_mono_ns FROM capture WHERE id = 1), 0) AS t0;
INSERT INTO strings (text)
  SELECT api FROM kernel_launches UNION SELECT vendor FROM kernel_launches
  UNION SELECT kernel_name FROM kernel_launches WHERE kernel_name IS NOT NULL;
CREATE INDEX m012_strings ON strings (text);
INSERT INTO launch_shapes (process_id, tgid, tid, api_id, function, grid_x, grid_y, grid_z, block_x, block_y,
                           block_z, shared_mem_bytes, stream, kernel_params, extra, args_complete, kernel_name_id,
                           cooperative, cluster_x, cluster_y, cluster_z, per_thread_stream, attributes, stack_id,
                           vendor_id)
  SELECT DISTINCT process_id, tgid, tid, (SELECT id FROM strings WHERE text = api), function, grid_x, grid_y, grid_z,
         block_x, block_y, block_z, shared_mem_bytes, stream, kernel_params, extra, args_complete,
         (SELECT id FROM strings WHERE text = kernel_name), cooperative, cluster_x, cluster_y, cluster_z,
         per_thread_stream, attributes, stack_id, (SELECT id FROM strings WHERE text = vendor)
  FROM kernel_launches;
CREATE INDEX m012_shapes ON launch_shapes (process_id, tid, function, stream, grid_x, block_x);
CREATE TEMP TABLE m012_ids AS
  SELECT k.id AS old_id,
         ((k.ts_mono_ns - (SELECT t0 FROM m012_start)) * 8
           + row_number() OVER (PARTITION BY k.ts_mono_ns ORDER BY k.id) - 1) AS new_id,
         (SELECT s.id FROM launch_shapes s
          WHERE s.process_id = k.process_id AND s.tid = k.tid AND s.function = k.function AND s.stream = k.stream
            AND s.grid_x = k.grid_x AND s.block_x = k.block_x AND s.tgid = k.tgid
            AND s.api_id = (SELECT id FROM strings WHERE text = k.api)
            AND s.grid_y = k.grid_y AND s.grid_z = k.grid_z AND s.block_y = k.block_y AND s.block_z = k.block_z
            AND s.shared_mem_bytes = k.shared_mem_bytes AND s.kernel_params = k.kernel_params AND s.extra = k.extra
            AND s.args_complete = k.args_complete
            AND s.kernel_name_id IS (SELECT id FROM strings WHERE text = k.kernel_name)
            AND s.cooperative = k.cooperative AND s.cluster_x IS k.cluster_x AND s.cluster_y IS k.cluster_y
            AND s.cluster_z IS k.cluster_z AND s.per_thread_stream = k.per_thread_stream
            AND s.attributes = k.attributes AND s.stack_id IS k.stack_id
            AND s.vendor_id = (SELECT id FROM strings WHERE text = k.vendor)) AS shape_id
  FROM kernel_launches k;
INSERT INTO launches (id, shape_id) SELECT new_id, shape_id FROM m012_ids;
INSERT INTO launch_counts (shape_id, bucket_s, launches, first_ns, last_ns)
  SELECT shape_id, CASE WHEN (id >> 3) < 0 THEN -1 ELSE (id >> 3) / 1000000000 END AS b, count(*), min(id >> 3),
         max(id >> 3)
  FROM launches GROUP BY shape_id, b;
-- Replay rows (schema 8) name launches by id: give them the new ones.
UPDATE replay_ops SET source_id = (SELECT new_id FROM m012_ids WHERE old_id = replay_ops.source_id)
  WHERE source_table = 'kernel_launches';
DROP INDEX m012_shapes;
DROP INDEX m012_strings;
DROP TABLE temp.m012_ids;
DROP TABLE temp.m012_start;

DROP VIEW api_calls;  -- re-created below over the new kernel_launches
DROP TABLE launch_agg;
DROP TABLE kernel_launches;

-- Every launch with every column of schema 11, in the same order.
CREATE VIEW kernel_launches AS
  SELECT l.id AS id,
         (l.id >> 3) + coalesce((SELECT start_mono_ns FROM capture WHERE id = 1), 0) AS ts_mono_ns,
         s.process_id AS process_id, s.tgid AS tgid, s.tid AS tid, a.text AS api, s.function AS function,
         s.grid_x AS grid_x, s.grid_y AS grid_y, s.grid_z AS grid_z,
         s.block_x AS block_x, s.block_y AS block_y, s.block_z AS block_z,
         s.shared_mem_bytes AS shared_mem_bytes, s.stream AS stream, s.kernel_params AS kernel_params,
         s.extra AS extra, s.args_complete AS args_complete, k.text AS kernel_name, s.cooperative AS cooperative,
         s.cluster_x AS cluster_x, s.cluster_y AS cluster_y, s.cluster_z AS cluster_z,
         s.per_thread_stream AS per_thread_stream, s.attributes AS attributes, s.stack_id AS stack_id,
         v.text AS vendor
  FROM launches l
  LEFT JOIN launch_shapes s ON s.id = l.shape_id
  LEFT JOIN strings a ON a.id = s.api_id
  LEFT JOIN strings k ON k.id = s.kernel_name_id
  LEFT JOIN strings v ON v.id = s.vendor_id;

-- The launch aggregates of schema 5, summed from launch_counts.
CREATE VIEW launch_agg AS
  SELECT s.process_id AS process_id, a.text AS api, s.function AS function, coalesce(k.text, '') AS kernel_name,
         s.stream AS stream, coalesce(s.stack_id, 0) AS stack_id, c.bucket_s AS bucket_s,
         sum(c.launches) AS launches,
         sum(c.launches * s.grid_x * s.grid_y * s.grid_z) AS grid_sum,
         min(s.grid_x * s.grid_y * s.grid_z) AS grid_min, max(s.grid_x * s.grid_y * s.grid_z) AS grid_max,
         sum(c.launches * s.block_x * s.block_y * s.block_z) AS block_sum,
         min(s.block_x * s.block_y * s.block_z) AS block_min, max(s.block_x * s.block_y * s.block_z) AS block_max,
         sum(c.launches * s.shared_mem_bytes) AS shmem_sum,
         sum(c.launches * s.cooperative) AS cooperative,
         min(c.first_ns) + coalesce((SELECT start_mono_ns FROM capture WHERE id = 1), 0) AS first_ns,
         max(c.last_ns) + coalesce((SELECT start_mono_ns FROM capture WHERE id = 1), 0) AS last_ns
  FROM launch_counts c
  JOIN launch_shapes s ON s.id = c.shape_id
  JOIN strings a ON a.id = s.api_id
  LEFT JOIN strings k ON k.id = s.kernel_name_id
  GROUP BY s.process_id, s.api_id, s.function, s.kernel_name_id, s.stream, s.stack_id, c.bucket_s;

CREATE VIEW api_calls AS
  SELECT 'launch' AS family, ts_mono_ns, NULL AS duration_ns, process_id, tgid, tid, api, NULL AS result, stack_id, vendor FROM kernel_launches
  UNION ALL SELECT 'memory', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM gpu_modules;
