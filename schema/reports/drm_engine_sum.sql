-- drm_engine_sum: per process and GPU engine, the busy time its DRM
-- clients report in /proc/PID/fdinfo (drm-engine-*, drm-cycles-*; sampled
-- at --metrics-hz), between the first and last sample of each client.
-- Columns: process, pid, driver, pdev (PCI address), engine, clients (DRM
--   files of the process that used the engine's keys), busy_ns (drm-engine-*
--   difference; NULL for drivers that count cycles only), sampled_ns (the
--   longest first-to-last sample span), busy_pct (of the engine's capacity
--   over that span: from cycles, drm-cycles over drm-total-cycles, where
--   the driver counts them, else busy_ns over the span; summed over the
--   process's clients), cycles (drm-cycles-* difference).
-- Filters: :pid, :process, :since_s, :until_s (the samples used).
WITH c AS (SELECT start_mono_ns AS t0 FROM capture),
w AS (
  SELECT s.* FROM drm_engine_samples s, c
  WHERE (:since_s IS NULL OR s.t_mono_ns >= c.t0 + :since_s * 1e9)
    AND (:until_s IS NULL OR s.t_mono_ns <= c.t0 + :until_s * 1e9)),
span AS (SELECT client, engine, min(t_mono_ns) AS t_first, max(t_mono_ns) AS t_last FROM w GROUP BY client, engine),
d AS (
  SELECT s.client, s.engine, s.t_last - s.t_first AS span_ns,
         l.busy_ns - f.busy_ns AS busy_ns, l.cycles - f.cycles AS cycles,
         l.total_cycles - f.total_cycles AS total_cycles, coalesce(l.capacity, 1) AS capacity
  FROM span s
  JOIN w f ON f.client = s.client AND f.engine = s.engine AND f.t_mono_ns = s.t_first
  JOIN w l ON l.client = s.client AND l.engine = s.engine AND l.t_mono_ns = s.t_last),
pct AS (
  SELECT d.*, CASE WHEN d.total_cycles > 0 THEN 100.0 * d.cycles / (d.total_cycles * d.capacity)
                   WHEN d.span_ns > 0 AND d.busy_ns IS NOT NULL THEN 100.0 * d.busy_ns / (d.span_ns * d.capacity)
              END AS busy_pct
  FROM d)
SELECT coalesce(n.name, '(unknown)')                       AS process,
       k.tgid                                              AS pid,
       k.driver                                            AS driver,
       coalesce(k.pdev, '')                                AS pdev,
       pct.engine                                          AS engine,
       count(DISTINCT pct.client)                          AS clients,
       sum(pct.busy_ns)                                    AS busy_ns,
       max(pct.span_ns)                                    AS sampled_ns,
       round(sum(pct.busy_pct), 2)                         AS busy_pct,
       sum(pct.cycles)                                     AS cycles
FROM pct JOIN drm_clients k ON k.id = pct.client
         LEFT JOIN process_names n ON n.id = k.process_id
         LEFT JOIN processes p ON p.id = k.process_id
WHERE (:pid IS NULL OR k.tgid = :pid) AND (:process IS NULL OR p.comm = :process OR n.name = :process)
GROUP BY k.tgid, k.process_id, k.driver, k.pdev, pct.engine
ORDER BY coalesce(busy_pct, 0) DESC, process, engine;
