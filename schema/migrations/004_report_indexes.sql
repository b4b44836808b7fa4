-- Indexes the reports need (bench/report_bench.cpp measures them).
-- leaks / mem: "is there a free of this allocation" is a lookup by alloc_id.
CREATE INDEX memory_ops_alloc ON memory_ops (alloc_id);
