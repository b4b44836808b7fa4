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

// The shipped tables and their columns, in the order the shipper's
// queries give them (it sends those the database has, by name, in RowBinary).
struct FleetTable {
  const char* name;
  const char* columns;  // "host, host_id, segment, ..." without `date`
};
inline constexpr FleetTable kProcessesTable{
    "processes",
    "host, host_id, segment, process_id, pid, comm, first_ns, last_ns, ppid, exe, exit_code, cgroup, container_id"};
inline constexpr FleetTable kLaunchesTable{"launches",
                                           "host, host_id, segment, ts_ns, process_id, pid, process, tid, api, kernel, "
                                           "function, grid_x, grid_y, grid_z, block_x, "
                                           "block_y, block_z, shared_mem, stream, cooperative, stack"};
inline constexpr FleetTable kApiCallsTable{
    "api_calls",
    "host, host_id, segment, ts_ns, process_id, pid, process, tid, family, api, duration_ns, result, stack"};
inline constexpr FleetTable kNcclCallsTable{
    "nccl_calls",
    "host, host_id, segment, ts_ns, duration_ns, process_id, pid, process, tid, api, op, comm_hash, rank, nranks, seq, "
    "count, "
    "datatype, redop, peer, stream, bytes, result, call_site, python_site, stack_key, stack"};
inline constexpr FleetTable kCopiesTable{
    "copies",
    "host, host_id, segment, ts_ns, duration_ns, process_id, pid, process, tid, api, kind, direction, bytes, async, "
    "stream, result, copy_id, stack"};
inline constexpr FleetTable kSyncsTable{"syncs",
                                        "host, host_id, segment, ts_ns, duration_ns, process_id, pid, process, tid, "
                                        "api, target, stream, event, blocked_ns, "
                                        "result, stack"};
inline constexpr FleetTable kMemoryOpsTable{
    "memory_ops",
    "host, host_id, segment, ts_ns, duration_ns, process_id, pid, process, tid, api, op, kind, address, bytes, stream, "
    "handle, flags, op_id, alloc_id, result, stack"};
inline constexpr FleetTable kStreamOpsTable{
    "stream_ops",
    "host, host_id, segment, ts_ns, duration_ns, process_id, pid, process, tid, api, op, stream, event, handle, flags, "
    "priority, result, stack"};
inline constexpr FleetTable kIoctlsTable{
    "ioctls",
    "host, host_id, segment, ts_ns, latency_ns, process_id, pid, process, tid, fd, dev_major, dev_minor, cmd, driver, "
    "request, ret, status, status_name, failed, object_class, class_name, control, control_name, args, stack"};
inline constexpr FleetTable kDriverObjectsTable{"driver_objects",
                                                "host, host_id, segment, ts_ns, process_id, pid, process, tid, driver, "
                                                "op, kind, client, parent, handle, class_name, "
                                                "bytes, flags, address, object_id, alloc_id, stack"};
inline constexpr FleetTable kGpuMetricsTable{
    "gpu_metrics", "host, host_id, segment, ts_ns, until_ns, gpu_id, gpu, gpu_name, metric, unit, value"};
inline constexpr FleetTable kGpuProcessMetricsTable{
    "gpu_process_metrics",
    "host, host_id, segment, ts_ns, until_ns, gpu_id, gpu, pid, process_id, process, sm_util_pct, mem_util_pct, "
    "memory_bytes, gone"};
inline constexpr FleetTable kGpuEventsTable{"gpu_events", "host, host_id, segment, ts_ns, gpu_id, gpu, kind, code"};
inline constexpr FleetTable kGpuTimesTable{
    "gpu_times",
    "host, host_id, segment, ts_ns, end_ns, duration_ns, process_id, pid, process, call_table, row_id, kernel, device, "
    "stream_id, correlation_id, activities, joined_by"};
inline constexpr FleetTable kNcclStallsTable{
    "nccl_stalls",
    "host, host_id, segment, ts_ns, stall_id, comm_hash, seq, op, kind, nranks, ranks_in, ranks_missing, waited_ns, "
    "rank, pid, state, last_seq, last_api, call_site, python_site"};
inline constexpr FleetTable kCountersTable{"counters", "host, host_id, segment, ts_ns, name, value, source"};

}  // namespace gpuobs::fleet
