-- Call stacks (issue 5). Every event row points to the user stack of the call
-- that produced it; stacks are deduplicated across processes: a frame is a
-- (module file, file offset), not an address.

-- The CUDA module/library loads keep their meaning under a clearer name:
-- "modules" is now the code files stacks run through.
DROP VIEW api_calls;  -- re-created below, with stack_id
ALTER TABLE modules RENAME TO gpu_modules;

-- Code files (shared libraries, executables) and pseudo-modules:
-- '[vdso]' and '[anon]' (anonymous executable memory: JIT code). A stack
-- ends at its first address outside executable memory (end_reason 'cut').
CREATE TABLE modules (
  id          INTEGER PRIMARY KEY,
  path        TEXT NOT NULL,             -- as the first process mapping it named it
  build_id    TEXT,                      -- GNU build id, hex; NULL: none or unreadable
  dev         INTEGER,                   -- st_dev of the file (NULL: pseudo-module)
  inode       INTEGER,                   -- st_ino of the file
  symbols     TEXT NOT NULL,             -- 'symtab', 'minidebuginfo', 'dynsym', 'none'
  debug_info  INTEGER NOT NULL           -- 1: DWARF found, frames have file:line
);

-- Functions frames fall in.
CREATE TABLE symbols (
  id          INTEGER PRIMARY KEY,
  module_id   INTEGER NOT NULL REFERENCES modules (id),
  name        TEXT NOT NULL,             -- demangled
  mangled     TEXT NOT NULL,             -- as in the symbol table
  UNIQUE (module_id, mangled)
);

-- One return address: (module, file offset), symbolized at offset - 1 (the call).
CREATE TABLE frames (
  id            INTEGER PRIMARY KEY,
  module_id     INTEGER NOT NULL REFERENCES modules (id),
  offset        INTEGER NOT NULL,        -- file offset of the return address
  symbol_id     INTEGER REFERENCES symbols (id),   -- NULL: not symbolized
  symbol_offset INTEGER,                 -- return address - symbol start
  file          TEXT,                    -- source file of the call (DWARF), NULL if unknown
  line          INTEGER,
  UNIQUE (module_id, offset)
);

-- Distinct stacks. end_reason says where the walk stopped:
--   'root'  reached a thread's entry (main's caller, start_thread, clone)
--   'cut'   stopped earlier: a frame without a frame pointer (the next address
--           was not code) or an unreadable page
--   'depth' hit the configured depth (--stack-depth)
--   'fault' the stack could not be read at all
--   'empty' no frame left (the only frame was not code)
CREATE TABLE stacks (
  id          INTEGER PRIMARY KEY,
  depth       INTEGER NOT NULL,          -- frames stored
  end_reason  TEXT NOT NULL
);

-- The frames of each stack, innermost (the call site) first: position 0.
CREATE TABLE stack_frames (
  stack_id    INTEGER NOT NULL REFERENCES stacks (id),
  position    INTEGER NOT NULL,
  frame_id    INTEGER NOT NULL REFERENCES frames (id),
  PRIMARY KEY (stack_id, position)
) WITHOUT ROWID;

-- The stack of every event (NULL: captured without stacks).
ALTER TABLE kernel_launches ADD COLUMN stack_id INTEGER REFERENCES stacks (id);
ALTER TABLE ioctls ADD COLUMN stack_id INTEGER REFERENCES stacks (id);
ALTER TABLE memory_ops ADD COLUMN stack_id INTEGER REFERENCES stacks (id);
ALTER TABLE copies ADD COLUMN stack_id INTEGER REFERENCES stacks (id);
ALTER TABLE stream_ops ADD COLUMN stack_id INTEGER REFERENCES stacks (id);
ALTER TABLE syncs ADD COLUMN stack_id INTEGER REFERENCES stacks (id);
ALTER TABLE gpu_modules ADD COLUMN stack_id INTEGER REFERENCES stacks (id);
ALTER TABLE kernel_names ADD COLUMN stack_id INTEGER REFERENCES stacks (id);

-- Every frame of every stack, readable: one row per (stack, position).
CREATE VIEW stack_symbols AS
  SELECT sf.stack_id, sf.position, f.id AS frame_id, m.path AS module, s.name AS symbol,
         f.symbol_offset, f.file, f.line, f.offset
  FROM stack_frames sf
  JOIN frames f ON f.id = sf.frame_id
  JOIN modules m ON m.id = f.module_id
  LEFT JOIN symbols s ON s.id = f.symbol_id;

-- The api_calls view again, with stacks.
CREATE VIEW api_calls AS
  SELECT 'launch' AS family, ts_mono_ns, NULL AS duration_ns, process_id, tgid, tid, api, NULL AS result, stack_id FROM kernel_launches
  UNION ALL SELECT 'memory', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id FROM gpu_modules;
