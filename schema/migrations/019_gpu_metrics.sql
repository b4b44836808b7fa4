-- Schema version 19: what the GPUs themselves report (issue 19; docs/schema.md,
-- "GPU metrics"). A sampler in gpuobsd and `gpuobs record` (--metrics-hz,
-- default 10) asks NVML (loaded at run time) and AMD's sysfs files. Values
-- are stored when they change: a row holds its value until the next row of
-- the same GPU and metric, or the end of the capture (the views give that
-- time as until_mono_ns). A metric that never changes takes one row per
-- capture file; a rotated segment starts with every current value again.

-- The GPUs the sampler found, in its order.
CREATE TABLE gpus (
  id INTEGER PRIMARY KEY,                   -- 1, 2, ...
  vendor TEXT NOT NULL,                     -- 'nvidia', 'amd'
  uuid TEXT,                                -- NVML's GPU-...; AMD: unique_id, else the PCI address
  name TEXT,                                -- product name
  pci_bus_id TEXT,                          -- domain:bus:device.function
  driver TEXT,                              -- driver version
  memory_total_bytes INTEGER,
  gpm INTEGER NOT NULL DEFAULT 0            -- 1: GPM metrics (sm_active_pct, ...) sampled
);

-- Metric ids and names (userspace/gpu_metrics/metric_catalogue.cpp).
CREATE TABLE gpu_metric_names (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, unit TEXT NOT NULL, description TEXT
);

-- The bits of metric clocks_event_reasons (NVML's clocks event, or throttle, reasons).
CREATE TABLE gpu_throttle_reasons (bit INTEGER PRIMARY KEY, name TEXT NOT NULL);

-- Each source the sampler looked at, with or without GPUs, and why it gave nothing.
CREATE TABLE gpu_sources (
  source TEXT NOT NULL,                     -- 'nvml', 'amd_sysfs'
  library TEXT,                             -- the NVML file loaded; the sysfs root
  status TEXT NOT NULL,                     -- 'ok', or why it gives nothing
  gpus INTEGER NOT NULL,
  hz INTEGER NOT NULL                       -- --metrics-hz (0: off)
);

CREATE TABLE gpu_sample_rows (
  t_ns INTEGER NOT NULL,                    -- after capture.start_mono_ns
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  metric_id INTEGER NOT NULL REFERENCES gpu_metric_names (id),
  value REAL NOT NULL                       -- in the metric's unit; stored as an integer when whole
);

-- A process's use of one GPU (NVML). NULL: not reported. A row whose three
-- values are NULL and gone = 1: the process left the GPU's process list.
CREATE TABLE gpu_process_rows (
  t_ns INTEGER NOT NULL,
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  pid INTEGER NOT NULL,
  sm_util_pct INTEGER, mem_util_pct INTEGER, memory_bytes INTEGER,
  gone INTEGER NOT NULL DEFAULT 0
);

-- Xid errors and ECC error events, as NVML delivered them.
CREATE TABLE gpu_events (
  ts_mono_ns INTEGER NOT NULL,
  gpu_id INTEGER NOT NULL REFERENCES gpus (id),
  kind TEXT NOT NULL,                       -- 'xid', 'ecc_single_bit', 'ecc_double_bit'
  code INTEGER                              -- the Xid number
);

-- Every sample with its GPU and metric named, absolute times, and how long
-- the value held: until the next change or the end of the capture (its
-- last commit while it is being written).
CREATE VIEW gpu_metrics AS
  WITH c AS (SELECT start_mono_ns AS t0,
                    coalesce(end_mono_ns, committed_mono_ns, start_mono_ns) AS t1 FROM capture WHERE id = 1)
  SELECT s.t_ns + c.t0 AS ts_mono_ns,
         coalesce(lead(s.t_ns) OVER (PARTITION BY s.gpu_id, s.metric_id ORDER BY s.t_ns) + c.t0,
                  max(c.t1, s.t_ns + c.t0)) AS until_mono_ns,
         s.gpu_id AS gpu_id, g.uuid AS gpu_uuid, n.name AS metric, n.unit AS unit, s.value AS value
  FROM gpu_sample_rows s, c
  JOIN gpus g ON g.id = s.gpu_id
  JOIN gpu_metric_names n ON n.id = s.metric_id;

-- Per process and GPU, the same; process_id: the processes row of that pid
-- alive at the time (NULL: a process the capture did not see).
CREATE VIEW gpu_process_metrics AS
  WITH c AS (SELECT start_mono_ns AS t0,
                    coalesce(end_mono_ns, committed_mono_ns, start_mono_ns) AS t1 FROM capture WHERE id = 1)
  SELECT r.t_ns + c.t0 AS ts_mono_ns,
         coalesce(lead(r.t_ns) OVER (PARTITION BY r.gpu_id, r.pid ORDER BY r.t_ns) + c.t0,
                  max(c.t1, r.t_ns + c.t0)) AS until_mono_ns,
         r.gpu_id AS gpu_id, g.uuid AS gpu_uuid, r.pid AS pid,
         (SELECT p.id FROM processes p
          WHERE p.tgid = r.pid AND coalesce(p.fork_mono_ns, 0) <= r.t_ns + c.t0
            AND (p.exit_mono_ns IS NULL OR p.exit_mono_ns >= r.t_ns + c.t0)
          ORDER BY p.id DESC LIMIT 1) AS process_id,
         r.sm_util_pct AS sm_util_pct, r.mem_util_pct AS mem_util_pct, r.memory_bytes AS memory_bytes,
         r.gone AS gone
  FROM gpu_process_rows r, c
  JOIN gpus g ON g.id = r.gpu_id;
