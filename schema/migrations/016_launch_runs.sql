-- Schema version 16: launches stored in runs (docs/schema.md, "Launch runs").
-- One row per launch cost SQLite a B-tree insert per launch (about 0.3 us on
-- the dev VM, 0.5-0.8 us on the H100 host): more than the daemon's whole
-- budget per event at 1.5 M launches/s. A run row holds up to 64 launches of
-- one transaction, consecutive in time and within 1 s of its first, as
-- bytes; the launches view unpacks
-- them, so kernel_launches and every query over it read the same rows as
-- before.
--
-- launch_runs.launches: per launch, in time order, two unsigned LEB128
-- varints: the launch's key (launches.id) minus the previous launch's key
-- (the first launch: minus the run's id, so 0), and its shape id minus the
-- previous launch's shape id, zigzag-encoded (the first: minus 0). A step of
-- a training loop repeats its launches in the same order, so consecutive
-- shape ids differ by 1 and most launches take 3 bytes.
--
-- Keys: a run's launches take the low bits 0-3 of their key (four launches
-- of one nanosecond per transaction); launch_rows holds, one row each, the
-- launches that arrive after a later one was stored (another CPU's record
-- arriving late) and the fifth and later of one nanosecond, with low bits
-- 4-7, so keys stay unique without an index over the runs. In a capture
-- written before version 16, launch_rows holds every launch as it was.

-- kernel_launches reads "launches": it keeps reading that name, which
-- becomes the view below (legacy mode renames without rewriting views).
PRAGMA legacy_alter_table = ON;
ALTER TABLE launches RENAME TO launch_rows;
PRAGMA legacy_alter_table = OFF;

CREATE TABLE launch_runs (
  id        INTEGER PRIMARY KEY,                   -- the first launch's key, as launches.id
  launches  BLOB NOT NULL                          -- the launches, encoded as said above
);

-- Every launch: (id, shape_id) as the launches table of schema 12 had them.
-- SQLite has no function that reads a byte of a blob as a number: instr()
-- in the 256 byte values finds it. One recursion step per byte: about 6 us
-- per launch in plain sqlite3; gpuobs's own readers decode runs in C++
-- (kernel_launches_between, store/launch_table.h).
CREATE VIEW launches AS
  WITH RECURSIVE d (b, n, p, c, acc, mul, phase, key, shape, out) AS (
    SELECT launches, length(launches), 1, instr(x'000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff', substr(launches, 1, 1)) - 1,
           0, 1, 0, id, 0, 0
    FROM launch_runs
    UNION ALL
    SELECT b, n, p + 1, instr(x'000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff', substr(b, p + 1, 1)) - 1,
           CASE WHEN c < 128 THEN 0 ELSE acc + (c - 128) * mul END,
           CASE WHEN c < 128 THEN 1 ELSE mul * 128 END,
           CASE WHEN c < 128 THEN 1 - phase ELSE phase END,
           CASE WHEN c < 128 AND phase = 0 THEN key + acc + c * mul ELSE key END,
           CASE WHEN c < 128 AND phase = 1
                THEN shape + CASE WHEN (acc + c * mul) & 1 THEN -((acc + c * mul + 1) >> 1) ELSE (acc + c * mul) >> 1 END
                ELSE shape END,
           c < 128 AND phase = 1
    FROM d WHERE p <= n)
  SELECT key AS id, shape AS shape_id FROM d WHERE out
  UNION ALL
  SELECT id, shape_id FROM launch_rows;

-- The launches past launch_counts_mark, for launch_agg: the same unpacking,
-- of the runs past the mark only (a run never straddles it: the mark is set
-- at a transaction's end, and runs are cut there).
CREATE VIEW launches_uncounted AS
  WITH RECURSIVE mark (below) AS (SELECT coalesce((SELECT counted_below FROM launch_counts_mark WHERE id = 1), 0)),
  d (b, n, p, c, acc, mul, phase, key, shape, out) AS (
    SELECT launches, length(launches), 1, instr(x'000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff', substr(launches, 1, 1)) - 1,
           0, 1, 0, id, 0, 0
    FROM launch_runs WHERE id >= (SELECT below FROM mark)
    UNION ALL
    SELECT b, n, p + 1, instr(x'000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff', substr(b, p + 1, 1)) - 1,
           CASE WHEN c < 128 THEN 0 ELSE acc + (c - 128) * mul END,
           CASE WHEN c < 128 THEN 1 ELSE mul * 128 END,
           CASE WHEN c < 128 THEN 1 - phase ELSE phase END,
           CASE WHEN c < 128 AND phase = 0 THEN key + acc + c * mul ELSE key END,
           CASE WHEN c < 128 AND phase = 1
                THEN shape + CASE WHEN (acc + c * mul) & 1 THEN -((acc + c * mul + 1) >> 1) ELSE (acc + c * mul) >> 1 END
                ELSE shape END,
           c < 128 AND phase = 1
    FROM d WHERE p <= n)
  SELECT key AS id, shape AS shape_id FROM d WHERE out
  UNION ALL
  SELECT id, shape_id FROM launch_rows WHERE id >= (SELECT below FROM mark);

DROP VIEW launch_agg;
CREATE VIEW launch_agg AS
  SELECT s.process_id AS process_id, a.text AS api, s.function AS function, coalesce(k.text, '') AS kernel_name,
         s.stream AS stream, coalesce(s.stack_id, 0) AS stack_id, c.bucket_s AS bucket_s,
         sum(c.launches) AS launches,
         sum(c.launches * s.grid_x * s.grid_y * s.grid_z) AS grid_sum,
         min(s.grid_x * s.grid_y * s.grid_z) AS grid_min, max(s.grid_x * s.grid_y * s.grid_z) AS grid_max,
         sum(c.launches * s.block_x * s.block_y * s.block_z) AS block_sum,
         min(s.block_x * s.block_y * s.block_z) AS block_min, max(s.block_x * s.block_y * s.block_z) AS block_max,
         sum(c.launches * s.shared_mem_bytes) AS shmem_sum,
         sum(c.launches * s.cooperative) AS cooperative,
         min(c.first_ns) + coalesce((SELECT start_mono_ns FROM capture WHERE id = 1), 0) AS first_ns,
         max(c.last_ns) + coalesce((SELECT start_mono_ns FROM capture WHERE id = 1), 0) AS last_ns
  FROM (SELECT shape_id, bucket_s, launches, first_ns, last_ns FROM launch_counts
        UNION ALL
        SELECT shape_id, CASE WHEN (id >> 3) < 0 THEN -1 ELSE (id >> 3) / 1000000000 END AS bucket_s,
               count(*) AS launches, min(id >> 3) AS first_ns, max(id >> 3) AS last_ns
        FROM launches_uncounted
        GROUP BY shape_id, bucket_s) c
  JOIN launch_shapes s ON s.id = c.shape_id
  JOIN strings a ON a.id = s.api_id
  LEFT JOIN strings k ON k.id = s.kernel_name_id
  GROUP BY s.process_id, s.api_id, s.function, s.kernel_name_id, s.stream, s.stack_id, c.bucket_s;
