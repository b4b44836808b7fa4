-- coverage: each time a process mapped a GPU runtime library's code, and
-- whether that library's probes were live before the process could call it
-- (issue 37). A row with calls_before_attach = 1 is a process whose first
-- calls may be missing from the capture; reason says why (not held: a
-- shell's job or a ptraced process; the hold timed out; the attach failed
-- or a cap refused it; mapped before gpuobs started). capture.state is
-- 'incomplete (...)' whenever such a row exists.
-- Columns: pid, process, library, hold ('attached before': probes were
--   live already, 'held': stopped at the mapping until they were,
--   'unprobed', 'not held: ...', 'before start'), held_ns (the pause),
--   mapped_s (the mapping, seconds after capture start), attached_s (the
--   probes live), first_call_s (the process's first captured call),
--   calls_before_attach (1: calls may be missing), reason.
-- Filters: :pid, :process.
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
act AS (SELECT process_id, ts_mono_ns AS first_ns FROM api_calls_timed
        UNION ALL SELECT process_id, first_ns FROM launch_agg
        UNION ALL SELECT process_id, ts_mono_ns FROM nccl_calls),
first AS (SELECT p.tgid, min(a.first_ns) AS first_ns FROM act a JOIN processes p ON p.id = a.process_id
          GROUP BY p.tgid)
SELECT m.tgid                                            AS pid,
       coalesce((SELECT p.comm FROM processes p WHERE p.tgid = m.tgid ORDER BY p.id DESC LIMIT 1), m.comm)
                                                         AS process,
       m.library                                         AS library,
       m.hold                                            AS hold,
       m.held_ns                                         AS held_ns,
       round((m.mapped_mono_ns - c.t0) / 1e9, 6)         AS mapped_s,
       round((m.attached_mono_ns - c.t0) / 1e9, 6)       AS attached_s,
       round((f.first_ns - c.t0) / 1e9, 6)               AS first_call_s,
       m.calls_before_attach                             AS calls_before_attach,
       m.reason                                          AS reason
FROM library_maps m LEFT JOIN first f ON f.tgid = m.tgid, c
WHERE (:pid IS NULL OR m.tgid = :pid) AND (:process IS NULL OR m.comm = :process)
ORDER BY m.calls_before_attach DESC, m.mapped_mono_ns, m.id;
