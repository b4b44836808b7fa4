-- gpu_sum: what each GPU reported while the capture ran (NVML, or AMD's
-- sysfs; sampled at --metrics-hz): per GPU and metric, time-weighted
-- statistics (a sample holds its value until the next change), and for
-- each clocks event (throttle) reason the time it held the clocks down.
-- The nvidia-smi / DCGM view of the run: is the GPU busy, is it throttling.
-- Columns: gpu (id), name, metric (throttle reasons: throttle:REASON),
--   unit, seconds (the time the metric covers; throttle rows: the time that
--   reason was active), mean, p50, p95, min, max (throttle rows: mean is
--   the percent of the sampled time).
-- Filters: :since_s / :until_s (seconds after capture start; samples are
--   cut to the window).
WITH c AS (SELECT start_mono_ns AS t0, coalesce(end_mono_ns, committed_mono_ns, start_mono_ns) AS t1
           FROM capture WHERE id = 1),
win AS (SELECT coalesce(:since_s * 1e9, -9e18) AS lo, coalesce(:until_s * 1e9, 9e18) AS hi),
span AS (
  SELECT s.gpu_id, s.metric_id, s.value, s.t_ns AS a,
         coalesce(lead(s.t_ns) OVER (PARTITION BY s.gpu_id, s.metric_id ORDER BY s.t_ns),
                  max(c.t1 - c.t0, s.t_ns)) AS b
  FROM gpu_sample_rows s, c),
cut AS (
  -- A row's time inside the window; a value that held no time (the last
  -- row, at the capture's end) weighs 1 ns so a one-sample series counts.
  SELECT gpu_id, metric_id, value,
         max(min(b, win.hi) - max(a, win.lo), CASE WHEN a = b AND a >= win.lo AND a <= win.hi THEN 1 ELSE 0 END)
           AS dur
  FROM span, win),
kept AS (SELECT * FROM cut WHERE dur > 0),
ranked AS (
  SELECT gpu_id, metric_id, value, dur,
         sum(dur) OVER (PARTITION BY gpu_id, metric_id ORDER BY value ROWS UNBOUNDED PRECEDING) AS cum,
         sum(dur) OVER (PARTITION BY gpu_id, metric_id) AS total
  FROM kept),
stats AS (
  SELECT gpu_id, metric_id, sum(dur) AS total, sum(value * dur) / sum(dur) AS mean,
         min(CASE WHEN cum >= 0.5 * total THEN value END) AS p50,
         min(CASE WHEN cum >= 0.95 * total THEN value END) AS p95,
         min(value) AS lo, max(value) AS hi
  FROM ranked GROUP BY gpu_id, metric_id),
reasons AS (
  SELECT k.gpu_id, 'throttle:' || r.name AS metric, r.bit,
         sum(CASE WHEN (CAST(k.value AS INTEGER) & r.bit) != 0 THEN k.dur ELSE 0 END) AS active,
         sum(k.dur) AS total
  FROM kept k JOIN gpu_metric_names n ON n.id = k.metric_id AND n.name = 'clocks_event_reasons',
       gpu_throttle_reasons r
  GROUP BY k.gpu_id, r.bit)
SELECT gpu_id AS gpu, name, metric, unit, seconds, mean, p50, p95, min, max FROM (
  SELECT s.gpu_id, g.name, n.name AS metric, n.unit, round(s.total / 1e9, 3) AS seconds,
         round(s.mean, 3) AS mean, s.p50, s.p95, s.lo AS min, s.hi AS max, 0 AS part, n.id AS ord
  FROM stats s JOIN gpus g ON g.id = s.gpu_id JOIN gpu_metric_names n ON n.id = s.metric_id
  WHERE n.name != 'clocks_event_reasons'
  UNION ALL
  SELECT r.gpu_id, g.name, r.metric, '%', round(r.active / 1e9, 3), round(100.0 * r.active / r.total, 3),
         NULL, NULL, NULL, NULL, 1, r.bit
  FROM reasons r JOIN gpus g ON g.id = r.gpu_id
  WHERE r.active > 0)
ORDER BY gpu_id, part, ord;
