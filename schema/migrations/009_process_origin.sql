-- Schema version 9: where each process came from (cgroup, container) and
-- which GPUs it used; when and why each library probe was attached at run
-- time (gpuobsd finds GPU libraries in processes' mappings, docs/design.md
-- "Finding libraries").
ALTER TABLE processes ADD COLUMN cgroup TEXT;        -- cgroup v2 path from /proc/PID/cgroup ("0::" line), read when the row is inserted
ALTER TABLE processes ADD COLUMN container_id TEXT;  -- 64-hex container id from the cgroup path (docker, containerd, CRI-O, podman, kubepods); NULL: none
ALTER TABLE probes ADD COLUMN reason TEXT;           -- why the library was attached: startup, exec, first_ioctl, rescan
ALTER TABLE probes ADD COLUMN trigger_tgid INTEGER;  -- the process whose mappings named the library (NULL: system discovery or --libcuda)
ALTER TABLE probes ADD COLUMN trigger_mono_ns INTEGER;   -- the trigger: exec or first-ioctl record timestamp, or the scan start (CLOCK_MONOTONIC)
ALTER TABLE probes ADD COLUMN attached_mono_ns INTEGER;  -- attach (or its failure) done, CLOCK_MONOTONIC
ALTER TABLE probes ADD COLUMN detached_mono_ns INTEGER;  -- probes removed: the file was gone (no mapping, path no longer resolves to the inode)

-- The GPU devices each process used, from its ioctls on watched GPU driver
-- nodes: NVIDIA per-GPU nodes /dev/nvidiaN (minor N; 255 is /dev/nvidiactl,
-- not a GPU) and AMD's /dev/kfd (one node for every GPU: minor is kfd's).
CREATE VIEW process_gpus AS
SELECT process_id, tgid, driver, dev_major, dev_minor,
       count(*) AS ioctls, min(ts_mono_ns) AS first_mono_ns, max(ts_mono_ns) AS last_mono_ns
FROM ioctls
WHERE (driver = 'nvidia' AND dev_minor <> 255) OR driver = 'kfd'
GROUP BY process_id, tgid, driver, dev_major, dev_minor;
