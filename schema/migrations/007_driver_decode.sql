-- Schema version 7: GPU driver ioctls decoded (NVIDIA RM escapes, NVIDIA UVM,
-- AMD KFD) and the objects the drivers created and destroyed; a vendor
-- column on the API tables (CUDA driver API and HIP runtime share them).
-- Columns documented in docs/schema.md.

ALTER TABLE watched_devices ADD COLUMN driver TEXT;   -- nvidia, nvidia-uvm, kfd, other

ALTER TABLE ioctls ADD COLUMN driver TEXT;            -- nvidia, nvidia-uvm, kfd, other
ALTER TABLE ioctls ADD COLUMN request TEXT;           -- NV_ESC_RM_ALLOC, UVM_REGISTER_GPU, AMDKFD_IOC_CREATE_QUEUE; NULL: not known
ALTER TABLE ioctls ADD COLUMN status INTEGER;         -- the driver's own status (NV_STATUS, UVM rmStatus, KFD wait_result)
ALTER TABLE ioctls ADD COLUMN status_name TEXT;       -- NV_OK, NV_ERR_NO_MEMORY, KFD_IOC_WAIT_RESULT_TIMEOUT
ALTER TABLE ioctls ADD COLUMN failed INTEGER;         -- 1: ret < 0 or an error status
ALTER TABLE ioctls ADD COLUMN object_class INTEGER;   -- RM alloc: hClass; RM control: the command's interface class
ALTER TABLE ioctls ADD COLUMN class_name TEXT;
ALTER TABLE ioctls ADD COLUMN control INTEGER;        -- RM control command
ALTER TABLE ioctls ADD COLUMN control_name TEXT;
ALTER TABLE ioctls ADD COLUMN args TEXT;              -- JSON object: every decoded argument field
ALTER TABLE ioctls ADD COLUMN args_complete INTEGER;  -- 0: part of the argument could not be read
CREATE INDEX ioctls_request ON ioctls (driver, request);

-- Objects the drivers created (op 'alloc') and destroyed ('free'), one row
-- per successful call that made or ended one: NVIDIA RM objects (clients,
-- devices, channels, engines, memory, ...) and KFD memory and queues.
CREATE TABLE driver_objects (
  id INTEGER PRIMARY KEY,
  ioctl_id INTEGER NOT NULL REFERENCES ioctls (id),
  ts_mono_ns INTEGER NOT NULL,
  process_id INTEGER NOT NULL REFERENCES processes (id),
  tgid INTEGER NOT NULL,
  tid INTEGER NOT NULL,
  driver TEXT NOT NULL,      -- nvidia, kfd
  op TEXT NOT NULL,          -- alloc, free
  kind TEXT NOT NULL,        -- memory (video memory), sysmem (system memory the GPU maps), virtual (an address
                             -- range, no memory), channel, engine, channel_group, context_share, vaspace, device,
                             -- subdevice, client, event, usermode, queue, other; a free not paired: unknown
  client INTEGER,            -- NVIDIA client handle (hRoot)
  parent INTEGER,            -- NVIDIA parent handle; KFD gpu_id
  handle INTEGER NOT NULL,   -- NVIDIA object handle; KFD memory handle or queue id
  object_class INTEGER,      -- NVIDIA class
  class_name TEXT,
  bytes INTEGER,             -- memory objects; a free carries its allocation's bytes
  flags INTEGER,             -- NVIDIA memory attr; KFD allocation flags or queue type
  address INTEGER,           -- KFD va_addr
  alloc_id INTEGER,          -- free: driver_objects.id of the alloc it ends; NULL if not seen
  stack_id INTEGER REFERENCES stacks (id)
);
CREATE INDEX driver_objects_process ON driver_objects (process_id, ts_mono_ns);
CREATE INDEX driver_objects_alloc ON driver_objects (alloc_id);

-- Device memory the drivers allocated, per process over time (every
-- successful alloc or free of video memory: NVIDIA local memory classes,
-- KFD VRAM), with the live total after it.
CREATE VIEW driver_memory_timeline AS
  SELECT process_id, driver, ts_mono_ns, op, handle, class_name, bytes,
         sum(CASE op WHEN 'alloc' THEN bytes ELSE -bytes END)
           OVER (PARTITION BY process_id ORDER BY ts_mono_ns, id) AS live_bytes
  FROM driver_objects
  WHERE kind = 'memory' AND bytes IS NOT NULL;

-- The vendor of every API row: 'cuda' (libcuda) or 'hip' (libamdhip64).
ALTER TABLE kernel_launches ADD COLUMN vendor TEXT NOT NULL DEFAULT 'cuda';
ALTER TABLE memory_ops ADD COLUMN vendor TEXT NOT NULL DEFAULT 'cuda';
ALTER TABLE copies ADD COLUMN vendor TEXT NOT NULL DEFAULT 'cuda';
ALTER TABLE stream_ops ADD COLUMN vendor TEXT NOT NULL DEFAULT 'cuda';
ALTER TABLE syncs ADD COLUMN vendor TEXT NOT NULL DEFAULT 'cuda';
ALTER TABLE gpu_modules ADD COLUMN vendor TEXT NOT NULL DEFAULT 'cuda';
ALTER TABLE kernel_names ADD COLUMN vendor TEXT NOT NULL DEFAULT 'cuda';

-- The call views again, with the vendor.
DROP VIEW api_calls;
CREATE VIEW api_calls AS
  SELECT 'launch' AS family, ts_mono_ns, NULL AS duration_ns, process_id, tgid, tid, api, NULL AS result, stack_id, vendor FROM kernel_launches
  UNION ALL SELECT 'memory', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM gpu_modules;
DROP VIEW api_calls_timed;
CREATE VIEW api_calls_timed AS
  SELECT 'memory' AS family, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM memory_ops
  UNION ALL SELECT CASE kind WHEN 'memset' THEN 'memset' ELSE 'copy' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM copies
  UNION ALL SELECT CASE WHEN op LIKE 'event_%' THEN 'event' ELSE 'stream' END, ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM stream_ops
  UNION ALL SELECT 'sync', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM syncs
  UNION ALL SELECT 'module', ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, stack_id, vendor FROM gpu_modules;
