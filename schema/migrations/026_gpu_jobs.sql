-- Schema version 26: GPU jobs as the kernel ran them, without a vendor API
-- (issue 39 part 3): the DRM GPU scheduler's tracepoints and dma_fence
-- signals (bpf/gpu_sched.bpf.h), and what DRM files say of their clients
-- in /proc/PID/fdinfo (gpu_metrics/drm_fdinfo.cpp).

-- One row per GPU job: its queue, run and done events paired by the
-- finished fence's (context, seqno) (6.17+) or by the fence's address
-- (before 6.17, whose done event carries nothing else). A time is NULL when
-- its event was not seen: a job still running at the capture's end has no
-- done_mono_ns, a job queued before the capture began no queued_mono_ns.
CREATE TABLE gpu_jobs (
  id               INTEGER PRIMARY KEY,
  device           TEXT,              -- dev_name() of the GPU ("0000:03:00.0"); NULL before 6.17
  ring             TEXT,              -- the scheduler's name: the hardware ring ("gfx_0.0.0", "rcs0", "ccs0")
  fence_context    INTEGER,           -- the job's finished fence: its dma_fence context (6.17+)
  fence_seqno      INTEGER,           -- ... and seqno on that context
  fence_ptr        INTEGER,           -- before 6.17: the finished fence's kernel address
  job_id           INTEGER,           -- before 6.17: the scheduler's job id
  client_id        INTEGER,           -- drm-client-id of the submitting DRM file (6.17+): drm_clients.client_id
  process_id       INTEGER REFERENCES processes (id),  -- the submitting process (the queue event's task)
  tgid             INTEGER,
  tid              INTEGER,           -- the submitting thread: the queue event fires inside its submit ioctl
  queued_mono_ns   INTEGER,           -- pushed to its entity's queue (CLOCK_MONOTONIC)
  run_mono_ns      INTEGER,           -- handed to the hardware ring
  done_mono_ns     INTEGER,           -- the scheduler saw its hardware fence signal
  signaled_mono_ns INTEGER,           -- dma_fence_signaled of its (context, seqno): the end when done is missing
  job_count        INTEGER,           -- at queue: jobs waiting in the entity before it
  hw_job_count     INTEGER            -- at run (else queue): the scheduler's credits in flight on the ring
);
CREATE INDEX gpu_jobs_thread ON gpu_jobs (process_id, tid, queued_mono_ns);
CREATE INDEX gpu_jobs_fence ON gpu_jobs (fence_context, fence_seqno);

-- Every dma_fence_signaled seen: the end of a GPU job's fence, and of
-- fences of drivers without the GPU scheduler (i915's requests).
CREATE TABLE dma_fence_signals (
  id          INTEGER PRIMARY KEY,
  ts_mono_ns  INTEGER NOT NULL,
  driver      TEXT,                   -- the fence's driver ("drm_sched", "i915", "amdgpu")
  timeline    TEXT,                   -- its timeline ("gfx_0.0.0", a ring or context name)
  context     INTEGER NOT NULL,       -- as the tracepoint has it (32 bits)
  seqno       INTEGER NOT NULL,
  gpu_job_id  INTEGER REFERENCES gpu_jobs (id)  -- the job this fence ends (NULL: none of the capture's)
);
CREATE INDEX dma_fence_signals_fence ON dma_fence_signals (context, seqno);

-- The submit call of each job: the ioctl of its thread whose [entry, exit]
-- holds the queue event (drm_sched_job_queue fires inside
-- DRM_IOCTL_AMDGPU_CS, DRM_IOCTL_XE_EXEC, ...). A view, not a stored id:
-- the queue record reaches the writer before its ioctl's (emitted at the
-- syscall's exit), and a view stays right whichever of the two is stored.
CREATE VIEW gpu_job_ioctls AS
  SELECT j.id AS gpu_job_id, i.id AS ioctl_id
  FROM gpu_jobs j
  JOIN ioctls i ON i.id = (
    SELECT id FROM ioctls
    WHERE process_id = j.process_id AND tid = j.tid AND ts_mono_ns <= j.queued_mono_ns
    ORDER BY ts_mono_ns DESC LIMIT 1)
  WHERE j.queued_mono_ns <= i.ts_mono_ns + i.latency_ns;

-- DRM files of the watched processes as /proc/PID/fdinfo describes them
-- (Documentation/gpu/drm-usage-stats.rst): one row per (process, client).
CREATE TABLE drm_clients (
  id          INTEGER PRIMARY KEY,
  process_id  INTEGER REFERENCES processes (id),
  tgid        INTEGER NOT NULL,
  fd          INTEGER NOT NULL,       -- the first fd it was read from
  driver      TEXT NOT NULL,          -- drm-driver ("i915", "xe", "amdgpu")
  pdev        TEXT,                   -- drm-pdev: the GPU's PCI address
  client_id   INTEGER,                -- drm-client-id (unique per DRM file while it is open)
  client_name TEXT                    -- drm-client-name, when the client set one
);

-- Per-engine counters of a client at each sample; cumulative since the
-- file was opened, so use is the difference between two samples.
CREATE TABLE drm_engine_samples (
  client        INTEGER NOT NULL REFERENCES drm_clients (id),
  t_mono_ns     INTEGER NOT NULL,
  engine        TEXT NOT NULL,        -- drm-engine-<engine> ("render", "gfx", "rcs", "video")
  busy_ns       INTEGER,              -- drm-engine-<engine>: ns the client's work kept it busy
  capacity      INTEGER,              -- drm-engine-capacity-<engine>: engines of the kind (absent: 1)
  cycles        INTEGER,              -- drm-cycles-<engine> (xe)
  total_cycles  INTEGER               -- drm-total-cycles-<engine>: cycles elapsed (busy % = d cycles / d total)
);
CREATE INDEX drm_engine_samples_client ON drm_engine_samples (client, engine, t_mono_ns);

-- Per-region memory of a client at each sample, in bytes.
CREATE TABLE drm_memory_samples (
  client          INTEGER NOT NULL REFERENCES drm_clients (id),
  t_mono_ns       INTEGER NOT NULL,
  region          TEXT NOT NULL,      -- "system", "vram", "gtt", "local0", ...
  total_bytes     INTEGER,            -- drm-total-<region>
  shared_bytes    INTEGER,            -- drm-shared-<region>
  resident_bytes  INTEGER,            -- drm-resident-<region> (or the older drm-memory-<region>)
  purgeable_bytes INTEGER,            -- drm-purgeable-<region>
  active_bytes    INTEGER             -- drm-active-<region>
);
