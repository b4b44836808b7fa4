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
#include <set>
#include <string>

#include "common/result.h"
#include "fleet/clickhouse_client.h"

namespace gpuobs::fleet {

// 1: processes, launches, api_calls, nccl_calls, and since (additions
// that keep the version) copies (memcpy and memset calls with their bytes
// and direction) and syncs (what each synchronization waited on). A build
// ships the tables the database has and reports over those; adding a table
// does not change the version, so a fleet whose hosts run different gpuobs
// builds keeps shipping (a newer version is one an older build could not
// ship into: a changed column).
inline constexpr uint32_t kFleetSchemaVersion = 1;

// Creates the database and the tables (IF NOT EXISTS) and records the
// version; an existing database of a newer version is refused.
Status init_schema(const ClickHouse& ch);
// The database's version; an error when it was never initialized ("run
// gpuobs clickhouse init") or is newer than this build.
Result<uint32_t> check_schema(const ClickHouse& ch);
// The tables of ch's database.
Result<std::set<std::string>> fleet_tables(const ClickHouse& ch);
// An error naming the fix when the database lacks table (made by a gpuobs
// that did not know it: `gpuobs clickhouse init` adds it).
Status require_table(const ClickHouse& ch, const std::string& table);

// The shipped tables and their columns, in insert order (the shipper's
// TabSeparated rows follow these lists).
struct FleetTable {
  const char* name;
  const char* columns;  // "host, host_id, segment, ..." without `date`
};
inline constexpr FleetTable kProcessesTable{
    "processes", "host, host_id, segment, process_id, pid, comm, first_ns, last_ns"};
inline constexpr FleetTable kLaunchesTable{
    "launches",
    "host, host_id, segment, ts_ns, process_id, pid, process, tid, api, kernel, function, grid_x, grid_y, grid_z, block_x, "
    "block_y, block_z, shared_mem, stream, cooperative, stack"};
inline constexpr FleetTable kApiCallsTable{
    "api_calls", "host, host_id, segment, ts_ns, process_id, pid, process, tid, family, api, duration_ns, result, stack"};
inline constexpr FleetTable kNcclCallsTable{
    "nccl_calls",
    "host, host_id, segment, ts_ns, duration_ns, process_id, pid, process, tid, api, op, comm_hash, rank, nranks, seq, count, "
    "datatype, redop, peer, stream, bytes, result, stack"};
inline constexpr FleetTable kCopiesTable{
    "copies",
    "host, host_id, segment, ts_ns, duration_ns, process_id, pid, process, tid, api, kind, direction, bytes, async, "
    "stream, result, stack"};
inline constexpr FleetTable kSyncsTable{
    "syncs",
    "host, host_id, segment, ts_ns, duration_ns, process_id, pid, process, tid, api, target, stream, event, blocked_ns, "
    "result, stack"};

}  // namespace gpuobs::fleet
