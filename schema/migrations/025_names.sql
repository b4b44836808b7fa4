-- Schema version 25: one name per process and per stream for every report,
-- export and the diff (issue 38).
-- process_names: a process's comm, which the kernel cuts to 15 bytes, is
-- replaced by its executable's file name when that begins with it
-- ("pt_main_thread" stays; "very_long_progra" becomes "very_long_program_name").
CREATE VIEW process_names AS
  SELECT id, tgid,
         CASE WHEN length(comm) = 15 AND exe IS NOT NULL
                   AND substr(replace(exe, rtrim(exe, replace(exe, '/', '')), ''), 1, 15) = comm
              THEN replace(exe, rtrim(exe, replace(exe, '/', '')), '')
              ELSE comm END AS name
  FROM processes;
-- stream_names: a process's streams as "legacy" (handle 0 or 1,
-- CU_STREAM_LEGACY), "per-thread" (2, CU_STREAM_PER_THREAD) and "stream#N",
-- numbered in the order the process first used them (created them, for the
-- streams it created): the same label in every report, the exports, replay
-- and diff, where the handles of two runs differ.
CREATE VIEW stream_names AS
  WITH seen AS (
    SELECT process_id, stream, min(ts) AS first_ns FROM (
      SELECT process_id, stream, ts_mono_ns AS ts FROM stream_ops WHERE stream IS NOT NULL
      UNION ALL SELECT process_id, stream, first_ns FROM launch_agg
      UNION ALL SELECT process_id, stream, ts_mono_ns FROM copies WHERE async = 1 AND stream IS NOT NULL)
    GROUP BY process_id, stream)
  SELECT process_id, stream,
         CASE WHEN stream IN (0, 1) THEN 'legacy' WHEN stream = 2 THEN 'per-thread'
              ELSE 'stream#' || row_number() OVER (PARTITION BY process_id, stream > 2 ORDER BY first_ns, stream)
         END AS label
  FROM seen;
