-- Schema version 23: every time a process mapped a GPU runtime library's
-- code, and whether the library's probes were live before the process could
-- call it (issue 37). A capture is 'complete' only when no row says a call
-- could have been missed (calls_before_attach = 0 everywhere) and nothing
-- was dropped; otherwise capture.state says 'incomplete (...)' with the count
-- and the first reason, and `gpuobs report coverage` lists the processes.
CREATE TABLE library_maps (
  id INTEGER PRIMARY KEY,
  tgid INTEGER NOT NULL,
  comm TEXT,
  library TEXT NOT NULL,          -- the file's base name (libcuda.so.1)
  dev INTEGER,                    -- st_dev encoding: joins probes.dev / probes.inode
  inode INTEGER,
  mapped_mono_ns INTEGER,         -- the mmap's entry (NULL: mapped before gpuobs started)
  -- what happened at the mapping:
  --   'attached before'  the file's probes were live already (no pause)
  --   'held'             stopped at the mapping until its probes were live (held_ns)
  --   'unprobed'         the file is known and carries no probes (a cap, an attach failure)
  --   'not held: ...'    holding off, a ptraced process, a shell's job, a failed signal
  --   'before start'     mapped before gpuobs started (the daemon's start-up scan)
  hold TEXT NOT NULL,
  held_ns INTEGER,                -- 'held': the pause, mapping to SIGCONT
  attached_mono_ns INTEGER,       -- the file's probes were live from here (NULL: never)
  calls_before_attach INTEGER NOT NULL, -- 1: the process could call the library unseen
  reason TEXT                     -- why, when calls_before_attach = 1
);
CREATE INDEX library_maps_tgid ON library_maps(tgid);
