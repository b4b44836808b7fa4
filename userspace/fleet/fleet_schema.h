// The ClickHouse side of the capture (schema version kFleetSchemaVersion):
// denormalized MergeTree tables, one row per event with its host, host id
// and segment id, names as text (ClickHouse compresses repeated names to
// almost nothing), timestamps on the wall clock (ts_ns, Int64 nanoseconds:
// 18.16 has no DateTime64) and a `date` column that partitions by month and
// leads the sort key (date, host, kernel or api, ts_ns), so fleet queries
// by time, host and kernel read a few granules. process_id is the
// process's row in its segment: (host_id, segment, process_id) is one process. docs/operations.md, "Fleet".
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>

#include "common/result.h"
#include "fleet/clickhouse_client.h"

namespace gpuobs::fleet {

// 1: processes, launches, api_calls, nccl_calls, and since (additions
// that keep the version): copies (memcpy and memset calls with their bytes
// and direction), syncs (what each synchronization waited on), memory_ops,
// stream_ops, ioctls, driver_objects, gpu_metrics, gpu_process_metrics,
// gpu_events, gpu_times, nccl_stalls and counters, processes' ppid, exe, exit_code,
// cgroup and container_id, copies' copy_id (the call's row id, which
// gpu_times.row_id names), nccl_calls' call_site, python_site (as
// nccl_ranks names them, from the call's stack) and stack_key (the stack's
// id in its segment), and ioctls' object_class and control. A build ships the tables and columns the
// database has and reports over those; adding a table or a column does not
// change the version, so a fleet whose hosts run different gpuobs builds
// keeps shipping (a newer version is one an older build could not ship
// into: a changed column).
inline constexpr uint32_t kFleetSchemaVersion = 1;

// Creates the database and the tables (IF NOT EXISTS) and records the
// version; an existing database of a newer version is refused.
Status init_schema(const ClickHouse& ch);
// The database's version; an error when it was never initialized ("run
// gpuobs clickhouse init") or is newer than this build.
Result<uint32_t> check_schema(const ClickHouse& ch);
// The tables of ch's database.
Result<std::set<std::string>> fleet_tables(const ClickHouse& ch);
// The columns of one table of ch's database (empty: no such table), and
// with their types.
Result<std::set<std::string>> table_columns(const ClickHouse& ch, const std::string& table);
Result<std::map<std::string, std::string>> column_types(const ClickHouse& ch, const std::string& table);
// An error naming the fix when table lacks one of columns (added since:
// `gpuobs clickhouse init` adds them).
Status require_columns(const ClickHouse& ch, const std::string& table, std::initializer_list<const char*> columns);
// An error naming the fix when the database lacks table (made by a gpuobs
// that did not know it: `gpuobs clickhouse init` adds it).
Status require_table(const ClickHouse& ch, const std::string& table);

// The shipped tables, their columns and the capture's SQL for each:
// fleet/fleet_tables.h.

}  // namespace gpuobs::fleet
