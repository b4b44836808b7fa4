-- gpu_job_sum: GPU jobs as the kernel's GPU scheduler ran them
-- (gpu_scheduler tracepoints and dma_fence signals; no vendor API), per
-- device, ring and submitting process: how many, how long they ran on the
-- ring (run to done, or to their fence's signal when the done event is
-- missing) and how long they waited in the scheduler's queue (queued to
-- run). The kern_sum of a GPU whose driver uses the DRM GPU scheduler.
-- Columns: device (PCI address; '' before Linux 6.17), ring, process
--   (the submitter; '(unknown)' for jobs queued before the capture), pid,
--   jobs, finished (jobs with an end), unfinished (no end by the capture's
--   end), total_run_ns, avg_run_ns, max_run_ns, avg_queue_ns, max_queue_ns,
--   submit_ioctls (jobs joined to their submit ioctl: the capture watched
--   the device).
-- Filters: :pid, :process, :since_s, :until_s (by the job's first event).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
j AS (
  SELECT g.*, coalesce(g.done_mono_ns, g.signaled_mono_ns) AS end_ns,
         coalesce(g.queued_mono_ns, g.run_mono_ns, g.done_mono_ns, g.signaled_mono_ns) AS first_ns
  FROM gpu_jobs g)
SELECT coalesce(j.device, '')                                AS device,
       coalesce(j.ring, '(unknown)')                         AS ring,
       coalesce(n.name, '(unknown)')                         AS process,
       j.tgid                                                AS pid,
       count(*)                                              AS jobs,
       count(j.end_ns)                                       AS finished,
       count(*) - count(j.end_ns)                            AS unfinished,
       sum(j.end_ns - j.run_mono_ns)                         AS total_run_ns,
       round(avg(j.end_ns - j.run_mono_ns), 1)               AS avg_run_ns,
       max(j.end_ns - j.run_mono_ns)                         AS max_run_ns,
       round(avg(j.run_mono_ns - j.queued_mono_ns), 1)       AS avg_queue_ns,
       max(j.run_mono_ns - j.queued_mono_ns)                 AS max_queue_ns,
       count(v.ioctl_id)                                     AS submit_ioctls
FROM j LEFT JOIN process_names n ON n.id = j.process_id
       LEFT JOIN processes p ON p.id = j.process_id
       LEFT JOIN gpu_job_ioctls v ON v.gpu_job_id = j.id, c
WHERE (:pid IS NULL OR j.tgid = :pid) AND (:process IS NULL OR p.comm = :process OR n.name = :process)
  AND (:since_s IS NULL OR j.first_ns >= c.t0 + :since_s * 1e9)
  AND (:until_s IS NULL OR j.first_ns <= c.t0 + :until_s * 1e9)
GROUP BY 1, 2, j.process_id
ORDER BY coalesce(total_run_ns, 0) DESC, jobs DESC, device, ring, process;
