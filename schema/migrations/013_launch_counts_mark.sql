-- Schema version 13: launch_counts written about once a second instead of in
-- every transaction (docs/schema.md, "Compact launches"). With 8 processes
-- repeating 1000-launch steps, each 8192-launch transaction upserted about
-- 8000 count rows, one per shape it touched: 60% of the writer's time
-- (bench/writer_bench). The writer now keeps the counts of recent launches in
-- memory and stores them, with a new mark, in the transaction that ends each
-- second of capture time; launch_agg counts the launches past the mark from
-- the launches themselves, so it is exact after every commit, after a kill
-- -9 as well.

-- Every launch whose id is below counted_below is in launch_counts; the
-- launches from it on are not (at most about a second of them).
CREATE TABLE launch_counts_mark (
  id             INTEGER PRIMARY KEY CHECK (id = 1),
  counted_below  INTEGER NOT NULL                  -- a launches.id
);
-- Schema-12 captures counted every launch in its own transaction.
INSERT INTO launch_counts_mark (id, counted_below) SELECT 1, coalesce(max(id) + 1, 0) FROM launches;

-- The launch aggregates of schema 5: launch_counts below the mark, the
-- launches from the mark on counted here.
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
        FROM launches
        WHERE id >= (SELECT counted_below FROM launch_counts_mark WHERE id = 1)
        GROUP BY shape_id, bucket_s) c
  JOIN launch_shapes s ON s.id = c.shape_id
  JOIN strings a ON a.id = s.api_id
  LEFT JOIN strings k ON k.id = s.kernel_name_id
  GROUP BY s.process_id, s.api_id, s.function, s.kernel_name_id, s.stream, s.stack_id, c.bucket_s;
