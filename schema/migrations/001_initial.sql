-- gpuobs capture schema, version 1. Documented column by column in docs/schema.md.
-- Times are nanoseconds. *_mono_ns columns are CLOCK_MONOTONIC; wall time is
-- ts + capture.clock_offset_ns. A column's meaning never changes: new meaning,
-- new column (and a new migration file).

-- One row: what was captured, where and how.
CREATE TABLE capture (
  id                INTEGER PRIMARY KEY CHECK (id = 1),
  gpuobs_version    TEXT NOT NULL,
  abi_version       INTEGER NOT NULL,          -- bpf/events.h GPUOBS_ABI_VERSION
  mode              TEXT NOT NULL,             -- 'record' or 'daemon'
  command           TEXT,                      -- record: the command line, shell-quoted
  host              TEXT NOT NULL,
  kernel            TEXT NOT NULL,             -- uname -r
  nvidia_driver     TEXT,                      -- /proc/driver/nvidia/version, if loaded
  start_mono_ns     INTEGER NOT NULL,
  end_mono_ns       INTEGER,                   -- NULL while the capture is running
  clock_offset_ns   INTEGER NOT NULL,          -- CLOCK_REALTIME - CLOCK_MONOTONIC at start
  ring_buffer_bytes INTEGER NOT NULL,
  exit_status       INTEGER                    -- record: the command's exit status
);

-- Counters: BPF per-kind drop/submit counters (bpf/events.h GPUOBS_CNT_*) and
-- user-space ones (decode errors, stored rows). Updated at the end and on flush.
CREATE TABLE counters (
  name   TEXT PRIMARY KEY,
  value  INTEGER NOT NULL,
  source TEXT NOT NULL                         -- 'bpf' or 'userspace'
);

-- Attach report: one row per (library file, symbol) probe the plan asked for.
CREATE TABLE probes (
  id         INTEGER PRIMARY KEY,
  library    TEXT NOT NULL,                    -- path as opened
  dev        INTEGER NOT NULL,                 -- st_dev of the library file
  inode      INTEGER NOT NULL,                 -- st_ino of the library file
  symbol     TEXT NOT NULL,
  program    TEXT NOT NULL,                    -- BPF program name
  status     TEXT NOT NULL,                    -- 'attached', 'missing' (no such symbol), 'failed'
  error      TEXT                              -- errno text when not attached
);

-- Watched character devices for the ioctl layer.
CREATE TABLE watched_devices (
  major  INTEGER NOT NULL,
  minor  INTEGER,                              -- NULL: every minor
  name   TEXT NOT NULL,                        -- /proc/devices name or the user's spec
  PRIMARY KEY (major, minor)
);

-- Processes, identified by (tgid, start_boottime_ns): pids are reused.
CREATE TABLE processes (
  id                INTEGER PRIMARY KEY,
  tgid              INTEGER NOT NULL,
  ppid              INTEGER,
  start_boottime_ns INTEGER,                   -- task start, CLOCK_BOOTTIME
  comm              TEXT,                      -- after the last exec
  exe               TEXT,                      -- exec filename, or /proc/PID/exe when first seen
  fork_mono_ns      INTEGER,                   -- NULL if it existed before the capture
  exec_mono_ns      INTEGER,                   -- last exec seen
  exit_mono_ns      INTEGER,
  exit_code         INTEGER,                   -- wait(2) status
  source            TEXT NOT NULL              -- 'fork', 'exec', 'root' (record's command), 'proc' (found running)
);
CREATE INDEX processes_tgid ON processes (tgid);

CREATE TABLE threads (
  id              INTEGER PRIMARY KEY,
  process_id      INTEGER NOT NULL REFERENCES processes (id),
  tid             INTEGER NOT NULL,
  first_mono_ns   INTEGER NOT NULL,            -- first event seen from this thread
  UNIQUE (process_id, tid)
);

-- One row per cuLaunchKernel / cuLaunchKernel_ptsz call.
CREATE TABLE kernel_launches (
  id               INTEGER PRIMARY KEY,
  ts_mono_ns       INTEGER NOT NULL,           -- call entry
  process_id       INTEGER NOT NULL REFERENCES processes (id),
  tgid             INTEGER NOT NULL,
  tid              INTEGER NOT NULL,
  api              TEXT NOT NULL,              -- symbol: 'cuLaunchKernel', 'cuLaunchKernel_ptsz'
  function         INTEGER NOT NULL,           -- CUfunction / CUkernel handle
  grid_x           INTEGER NOT NULL,
  grid_y           INTEGER NOT NULL,
  grid_z           INTEGER NOT NULL,
  block_x          INTEGER NOT NULL,
  block_y          INTEGER NOT NULL,
  block_z          INTEGER NOT NULL,
  shared_mem_bytes INTEGER NOT NULL,
  stream           INTEGER NOT NULL,           -- CUstream handle; 0 default, 1 legacy, 2 per-thread
  kernel_params    INTEGER NOT NULL,           -- pointer value
  extra            INTEGER NOT NULL,           -- pointer value
  args_complete    INTEGER NOT NULL            -- 0: stack arguments 7..11 were unreadable (zero)
);
CREATE INDEX kernel_launches_process ON kernel_launches (process_id, ts_mono_ns);

-- One row per ioctl(2) on a watched character device.
CREATE TABLE ioctls (
  id          INTEGER PRIMARY KEY,
  ts_mono_ns  INTEGER NOT NULL,                -- syscall entry
  latency_ns  INTEGER NOT NULL,
  process_id  INTEGER NOT NULL REFERENCES processes (id),
  tgid        INTEGER NOT NULL,
  tid         INTEGER NOT NULL,
  fd          INTEGER NOT NULL,
  dev_major   INTEGER NOT NULL,
  dev_minor   INTEGER NOT NULL,
  cmd         INTEGER NOT NULL,                -- request number as unsigned 32-bit
  arg         INTEGER NOT NULL,                -- third argument (pointer value)
  ret         INTEGER NOT NULL                 -- return value; negative errno on failure
);
CREATE INDEX ioctls_process ON ioctls (process_id, ts_mono_ns);
