#include "fleet/fleet_reports.h"

#include <sqlite3.h>
#include <cmath>

#include <cstdio>
#include <variant>

#include "fleet/fleet_schema.h"
#include "gpu_metrics/metric_catalogue.h"

namespace gpuobs::fleet {
namespace {

// Values the local reports round with SQLite's round(x, n) come back
// unrounded and are rounded here by SQLite itself: its round works on the
// decimal form (1.005 -> 1.01), which no ClickHouse function reproduces.
std::string round_sql(const std::string& x, int) { return "toFloat64(" + x + ")"; }

struct Rounded {
  const char* column;
  int digits;
};
constexpr Rounded kRounded[] = {{"grid_avg", 1},   {"block_avg", 1},     {"shared_mem_avg", 1}, {"avg_ns", 1},
                                {"stddev_ns", 1},  {"time_pct", 2},      {"avg_host_ns", 1},    {"avg_bytes", 1},
                                {"gpu_avg_ns", 1}, {"gpu_stddev_ns", 1}, {"time_s", 6},         {"gpu_gbps", 3},
                                {"first_s", 6},    {"last_s", 6},        {"seconds", 3},        {"mean", 3},
                                {"detected_s", 3}};

Status round_like_sqlite(QueryResult& r) {
  sqlite3* db = nullptr;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
    sqlite3_close(db);
    return make_error("cannot open an in-memory SQLite to round with");
  }
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT round(?1, ?2)", -1, &st, nullptr);
  for (size_t c = 0; c < r.columns.size(); ++c) {
    int digits = -1;
    for (const Rounded& k : kRounded)
      if (r.columns[c] == k.column) digits = k.digits;
    if (digits < 0) continue;
    for (auto& row : r.rows) {
      if (c >= row.size() || !std::holds_alternative<double>(row[c])) continue;
      sqlite3_reset(st);
      sqlite3_bind_double(st, 1, std::get<double>(row[c]));
      sqlite3_bind_int(st, 2, digits);
      if (sqlite3_step(st) == SQLITE_ROW) row[c] = sqlite3_column_double(st, 0);
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return {};
}

// The WHERE clause every report's rows go through.
std::string where(const FleetFilter& f) {
  std::string w = "1";
  if (!f.host.empty()) w += " AND host = " + sql_literal(f.host);
  if (f.pid) w += " AND pid = " + std::to_string(*f.pid);
  if (!f.process.empty()) w += " AND process = " + sql_literal(f.process);
  char buf[64];
  if (f.since_s) {
    std::snprintf(buf, sizeof buf, "%.0f", *f.since_s * 1e9);
    w += std::string(" AND ts_ns >= ") + buf;
  }
  if (f.until_s) {
    std::snprintf(buf, sizeof buf, "%.0f", *f.until_s * 1e9);
    w += std::string(" AND ts_ns <= ") + buf;
  }
  return w;
}

// kern_sum.sql: one row per kernel name, with the GPU times CUPTI measured
// (gpu_times, per launch; a database without that table gives NULL, as a
// capture recorded without --gpu-time does).
std::string kern_sum(const FleetFilter& f, bool gpu_times) {
  const std::string grid = "toUInt64(grid_x) * grid_y * grid_z", block = "toUInt64(block_x) * block_y * block_z";
  const std::string k =
      "SELECT kernel, toInt64(count()) AS launches, toInt64(uniqExact(host_id, segment, process_id)) AS processes,"
      " toInt64(uniqExact(host_id, segment, process_id, stream)) AS streams,"
      " toInt64(min(" +
      grid + ")) AS grid_min, toInt64(max(" + grid + ")) AS grid_max, " + round_sql("sum(" + grid + ") / count()", 1) +
      " AS grid_avg, toInt64(min(" + block + ")) AS block_min, toInt64(max(" + block + ")) AS block_max, " +
      round_sql("sum(" + block + ") / count()", 1) + " AS block_avg, " + round_sql("sum(shared_mem) / count()", 1) +
      " AS shared_mem_avg, toInt64(sum(cooperative)) AS cooperative FROM launches WHERE " + where(f) +
      " GROUP BY kernel";
  const std::string columns =
      "kernel, launches, processes, streams, grid_min, grid_max, grid_avg, block_min, block_max, block_avg,"
      " shared_mem_avg, cooperative";
  if (!gpu_times)
    return "SELECT " + columns +
           ", CAST(NULL AS Nullable(Int64)) AS gpu_launches, CAST(NULL AS Nullable(Int64)) AS gpu_total_ns,"
           " CAST(NULL AS Nullable(Float64)) AS gpu_avg_ns, CAST(NULL AS Nullable(Float64)) AS gpu_med_ns,"
           " CAST(NULL AS Nullable(Int64)) AS gpu_min_ns, CAST(NULL AS Nullable(Int64)) AS gpu_max_ns,"
           " CAST(NULL AS Nullable(Float64)) AS gpu_stddev_ns FROM (" +
           k + ") ORDER BY launches DESC, kernel";
  // Per kernel: the sorted durations (the median is the mean of the middle
  // two) and the population standard deviation as the local report
  // computes it, sqrt(max(E[d^2] - E[d]^2, 0)).
  const std::string gs =
      "SELECT ifNull(kernel, '') AS kernel, arraySort(groupArray(duration_ns)) AS g_d, toFloat64(avg(duration_ns)) AS"
      " g_mean, sqrt(greatest(avg(toFloat64(duration_ns) * duration_ns) - g_mean * g_mean, 0.)) AS g_sd"
      " FROM gpu_times WHERE call_table = 'kernel_launches' AND process_id > 0 AND " +
      where(f) + " GROUP BY kernel";
  auto nullable = [](const std::string& type, const std::string& v) {
    return "if(length(g_d) = 0, CAST(NULL AS Nullable(" + type + ")), toNullable(" + v + "))";
  };
  return "SELECT " + columns + ", " + nullable("Int64", "toInt64(length(g_d))") + " AS gpu_launches, " +
         nullable("Int64", "toInt64(arraySum(g_d))") + " AS gpu_total_ns, " +
         nullable("Float64", round_sql("g_mean", 1)) + " AS gpu_avg_ns, " +
         nullable("Float64", "(g_d[intDiv(length(g_d) + 1, 2)] + g_d[intDiv(length(g_d) + 2, 2)]) / 2") +
         " AS gpu_med_ns, " + nullable("Int64", "toInt64(g_d[1])") + " AS gpu_min_ns, " +
         nullable("Int64", "toInt64(g_d[length(g_d)])") + " AS gpu_max_ns, " +
         nullable("Float64", round_sql("g_sd", 1)) + " AS gpu_stddev_ns FROM (" + k + ") ANY LEFT JOIN (" + gs +
         ") USING (kernel) ORDER BY ifNull(gpu_total_ns, 0) DESC, launches DESC, kernel";
}

// api_sum.sql: timed calls with their statistics, then the launch APIs
// (entry only: counted, no time). groupArray skips NULL durations.
std::string api_sum(const FleetFilter& f) {
  const std::string w = where(f), n = "length(s)", mean = "(arraySum(s) / length(s))";
  auto if_timed = [&](const std::string& type, const std::string& v, const std::string& min_n = "1") {
    return "if(" + n + " < " + min_n + ", CAST(NULL AS Nullable(" + type + ")), toNullable(" + v + "))";
  };
  return "SELECT api, calls, timed_calls, total_ns, avg_ns, median_ns, min_ns, max_ns, stddev_ns, time_pct FROM ("
         " SELECT api, toInt64(c) AS calls, toInt64(" +
         n + ") AS timed_calls, " + if_timed("Int64", "toInt64(arraySum(s))") + " AS total_ns, " +
         if_timed("Float64", round_sql(mean, 1)) + " AS avg_ns, " +
         if_timed("Float64", "(s[intDiv(length(s) + 1, 2)] + s[intDiv(length(s) + 2, 2)]) / 2") + " AS median_ns, " +
         if_timed("Int64", "toInt64(s[1])") + " AS min_ns, " + if_timed("Int64", "toInt64(s[length(s)])") +
         " AS max_ns, " +
         if_timed("Float64",
                  round_sql(
                      "sqrt(arraySum(arrayMap(x -> (x - " + mean + ") * (x - " + mean + "), s)) / (" + n + " - 1))", 1),
                  "2") +
         " AS stddev_ns, if(t > 0, " + round_sql("100. * arraySum(s) / t", 2) +
         ", 0.) AS time_pct"
         " FROM (SELECT api, count() AS c, arraySort(groupArray(duration_ns)) AS s FROM api_calls WHERE " +
         w + " GROUP BY api) CROSS JOIN (SELECT toFloat64(sum(duration_ns)) AS t FROM api_calls WHERE " + w +
         ")"
         " UNION ALL"
         " SELECT api, toInt64(count()), toInt64(0), CAST(NULL AS Nullable(Int64)), CAST(NULL AS Nullable(Float64)),"
         " CAST(NULL AS Nullable(Float64)), CAST(NULL AS Nullable(Int64)), CAST(NULL AS Nullable(Int64)),"
         " CAST(NULL AS Nullable(Float64)), 0. FROM launches WHERE " +
         w +
         " GROUP BY api)"
         " ORDER BY total_ns DESC NULLS LAST, calls DESC, api";
}

// nccl_sum.sql across hosts: a collective's skew is over every rank that
// entered it in the window, whichever hosts and processes the filter asks
// for; ranks are (host, pid).
std::string nccl_sum(const FleetFilter& f) {
  FleetFilter window;  // the time filter alone: every rank
  window.since_s = f.since_s;
  window.until_s = f.until_s;
  const std::string ops =
      " AND op NOT IN ('comm_init', 'comm_init_all', 'comm_split', 'comm_destroy', 'comm_abort', 'comm_device',"
      " 'comm_rank', 'comm_count', 'group_start', 'group_end')";
  const std::string w = where(f) + ops, every = where(window) + ops;
  const std::string h = "lower(hex(comm_hash))";
  return "SELECT if(comm_hash = 0, '(unknown)', concat(substring('0000000000000000', 1, 16 - length(" + h + ")), " + h +
         ")) AS comm, op, toInt64(uniqExact(host_id, pid)) AS ranks,"
         " if(max(nranks) > 0, toNullable(toInt64(max(nranks))), CAST(NULL AS Nullable(Int64))) AS nranks,"
         " toInt64(count()) AS calls, sum(bytes) AS bytes, sum(duration_ns) AS host_ns, " +
         round_sql("avg(duration_ns)", 1) +
         " AS avg_host_ns, toInt64(any(m_n)) AS matched,"
         " if(any(m_n) = 0, CAST(NULL AS Nullable(Int64)), toNullable(any(m_p50))) AS skew_p50_ns,"
         " if(any(m_n) = 0, CAST(NULL AS Nullable(Int64)), toNullable(any(m_p95))) AS skew_p95_ns,"
         " if(any(m_n) = 0, CAST(NULL AS Nullable(Int64)), toNullable(any(m_mx))) AS skew_max_ns"
         " FROM (SELECT * FROM nccl_calls WHERE " +
         w +
         ")"
         " ANY LEFT JOIN (SELECT comm_hash, op, length(k) AS m_n, k[intDiv(length(k) + 1, 2)] AS m_p50,"
         " k[intDiv(95 * length(k) + 99, 100)] AS m_p95, k[length(k)] AS m_mx FROM ("
         " SELECT comm_hash, op, arraySort(groupArrayIf(skew, seen > 1)) AS k FROM ("
         " SELECT comm_hash, op, seq, max(ts_ns) - min(ts_ns) AS skew, uniqExact(host_id, pid) AS seen"
         " FROM nccl_calls WHERE " +
         every +
         " AND seq > 0 AND comm_hash != 0"
         " AND comm_hash GLOBAL IN (SELECT comm_hash FROM nccl_calls WHERE " +
         w +
         ")"
         " GROUP BY comm_hash, op, seq) GROUP BY comm_hash, op)) USING (comm_hash, op)"
         " GROUP BY comm_hash, op ORDER BY host_ns DESC, calls DESC, comm, op";
}

// copy_sum.sql and memset_sum.sql: successful calls only (a NULL result is
// a call seen at entry only: counted as successful, as there). `ok` and the
// NULL-skipping averages spelled out: 18.16's NULL logic and its avg of no
// rows (nan) differ from SQLite's. GPU times: each call's gpu_times row
// (call_table 'copies', row_id = the call's copy_id), joined where the
// database has both; else gpu_* 0/NULL, as a capture without --gpu-time
// has them. An alias in ClickHouse names the expression everywhere in the
// query, so the aggregates are computed under other names (x_*) and
// renamed outside: `sum(...) AS bytes` would otherwise turn the column
// bytes inside the other aggregates into itself.
const std::string kOk = "(ifNull(result, 0) = 0)";
const std::string kSized = "(" + kOk + " AND isNotNull(bytes))";

// The inner columns x_n (successful calls), x_bytes, x_avg, x_host_ns,
// x_failed, x_failed_bytes, and from the GPU times g_n (calls with one), g_ns, g_avg,
// g_gbps.
std::string copy_aggregates() {
  const std::string n = "countIf(" + kSized + ")";
  // A failed call adds 0, as in the local report: bytes is NULL only when
  // every call succeeded without a size.
  return "toInt64(countIf(" + kOk + ")) AS x_n, sum(if(" + kOk + ", bytes, 0)) AS x_bytes, if(" + n +
         " = 0, CAST(NULL AS Nullable(Float64)), toNullable(" +
         round_sql("sumIf(ifNull(bytes, 0), " + kSized + ") / " + n, 1) + ")) AS x_avg, if(" + n +
         " = 0, CAST(NULL AS Nullable(Int64)), toNullable(minIf(assumeNotNull(bytes), " + kSized + "))) AS x_min, if(" +
         n + " = 0, CAST(NULL AS Nullable(Int64)), toNullable(maxIf(assumeNotNull(bytes), " + kSized +
         "))) AS x_max, toInt64(sumIf(ifNull(duration_ns, 0), " + kOk + ")) AS x_host_ns, toInt64(countIf(NOT " + kOk +
         ")) AS x_failed, toInt64(sumIf(ifNull(bytes, 0), NOT " + kOk +
         ")) AS x_failed_bytes, toInt64(sum(g_has)) AS g_n,"
         " if(g_n = 0, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(sum(g_d)))) AS g_ns,"
         " if(g_n = 0, CAST(NULL AS Nullable(Float64)), toNullable(" +
         round_sql("sum(g_d) / g_n", 1) +
         ")) AS g_avg,"
         " if(g_n = 0 OR sum(g_d) = 0 OR countIf(g_has = 1 AND isNotNull(bytes)) = 0, CAST(NULL AS Nullable(Float64)),"
         " toNullable(" +
         round_sql("sumIf(ifNull(bytes, 0), g_has = 1) / sum(g_d)", 3) + ")) AS g_gbps";
}

// The calls of one kind with their GPU time (g_has 1, g_d ns) or none.
std::string copies_timed(const FleetFilter& f, const std::string& kind, bool gpu_times) {
  const std::string calls = "SELECT * FROM copies WHERE kind = '" + kind + "' AND " + where(f);
  if (!gpu_times) return "SELECT *, toUInt8(0) AS g_has, toInt64(0) AS g_d FROM (" + calls + ")";
  return "SELECT * FROM (" + calls +
         ") ANY LEFT JOIN (SELECT host_id, segment, row_id AS copy_id, toUInt8(1) AS g_has, duration_ns AS g_d"
         " FROM gpu_times WHERE call_table = 'copies') USING (host_id, segment, copy_id)";
}

std::string copy_sum(const FleetFilter& f, bool gpu_times) {
  // Grouped by the async flag itself, as the local report is (NULL and 0
  // are two 'sync' rows there); SQLite sorts NULL first.
  return "SELECT direction, if(ifNull(async, 0) = 1, 'async', 'sync') AS mode, x_n AS copies, x_bytes AS bytes,"
         " x_avg AS avg_bytes, x_min AS min_bytes, x_max AS max_bytes, x_host_ns AS host_ns, x_failed AS failed,"
         " x_failed_bytes AS failed_bytes, g_n AS gpu_copies, g_ns AS gpu_ns, g_avg AS gpu_avg_ns, g_gbps AS gpu_gbps "
         "FROM (SELECT direction, async, " +
         copy_aggregates() + " FROM (" + copies_timed(f, "copy", gpu_times) +
         ") GROUP BY direction, async) ORDER BY bytes DESC NULLS LAST, direction NULLS FIRST, mode";
}

std::string memset_sum(const FleetFilter& f, bool gpu_times) {
  return "SELECT api, if(ifNull(async, 0) = 1, 'async', 'sync') AS mode, x_n AS memsets, x_bytes AS bytes,"
         " x_avg AS avg_bytes, x_host_ns AS host_ns, x_failed AS failed, x_failed_bytes AS failed_bytes,"
         " g_n AS gpu_memsets, g_ns AS gpu_ns"
         " FROM (SELECT api, async, " +
         copy_aggregates() + " FROM (" + copies_timed(f, "memset", gpu_times) +
         ") GROUP BY api, async) ORDER BY bytes DESC NULLS LAST, api, mode";
}

// stream_names (025_names.sql) on ClickHouse: per process (host, segment,
// process) its streams other than 0, 1 and 2, numbered "stream#N" in the
// order of first use (first operation, launch or async copy; ties by
// handle), over the whole segment whatever the time filter, as locally.
// ClickHouse 18.16 has no window functions: the order is a sorted array's.
// Columns: host_id, segment, process_id, l_stream (UInt64), l_label.
std::string stream_labels(const FleetFilter& f) {
  FleetFilter whole = f;
  whole.since_s.reset();
  whole.until_s.reset();
  const std::string w = where(whole);
  const std::string seen =
      "SELECT host_id, segment, process_id, s_stream, min(s_ts) AS s_first FROM ("
      "SELECT host_id, segment, process_id, stream AS s_stream, ts_ns AS s_ts FROM launches WHERE stream > 2 AND " +
      w +
      " UNION ALL SELECT host_id, segment, process_id, assumeNotNull(stream), ts_ns FROM stream_ops"
      " WHERE isNotNull(stream) AND assumeNotNull(stream) > 2 AND " +
      w +
      " UNION ALL SELECT host_id, segment, process_id, assumeNotNull(stream), ts_ns FROM copies"
      " WHERE ifNull(async, 0) = 1 AND isNotNull(stream) AND assumeNotNull(stream) > 2 AND " +
      w + ") GROUP BY host_id, segment, process_id, s_stream";
  return "(SELECT host_id, segment, process_id, l_pair.2 AS l_stream, concat('stream#', toString(l_n)) AS l_label"
         " FROM (SELECT host_id, segment, process_id, arraySort(groupArray((s_first, s_stream))) AS l_order FROM (" +
         seen +
         ") GROUP BY host_id, segment, process_id) ARRAY JOIN l_order AS l_pair, arrayEnumerate(l_order) AS l_n)";
}

// A stream handle's label, given l_label from stream_labels (empty where
// the join found none).
std::string stream_label_sql(const std::string& handle) {
  return "multiIf(" + handle + " IN (0, 1), 'legacy', " + handle + " = 2, 'per-thread', l_label)";
}

// sync_sum.sql: one row per process, API, target and handle; a process is
// (host_id, segment, process_id).
std::string sync_sum(const FleetFilter& f) {
  return "SELECT x_pid AS pid, x_process AS process, api, target,"
         " if(target = 'stream', toNullable(" +
         stream_label_sql("l_stream") +
         "), CAST(NULL AS Nullable(String)))"
         " AS stream, if(target IN ('event', 'fence'), handle, CAST(NULL AS Nullable(UInt64))) AS event, x_syncs AS "
         "syncs,"
         " x_blocked AS blocked_ns, x_avg AS avg_ns, x_max AS max_ns, x_failed AS failed FROM (SELECT host_id, segment,"
         " process_id, any(pid) AS x_pid, any(process) AS x_process, api, target, handle,"
         " ifNull(handle, toUInt64(0)) AS l_stream, toInt64(count()) AS x_syncs,"
         " toInt64(ifNull(sum(blocked_ns), 0)) AS x_blocked,"
         " if(count(blocked_ns) = 0, CAST(NULL AS Nullable(Float64)), toNullable(" +
         round_sql("sum(blocked_ns) / count(blocked_ns)", 1) +
         ")) AS x_avg, max(blocked_ns) AS x_max, toInt64(countIf(NOT " + kOk +
         ")) AS x_failed FROM (SELECT *, multiIf(target = 'stream', stream, target IN ('event', 'fence'), event,"
         " CAST(NULL AS Nullable(UInt64))) AS handle FROM syncs WHERE " +
         where(f) + ") GROUP BY host_id, segment, process_id, api, target, handle) ANY LEFT JOIN " + stream_labels(f) +
         " USING (host_id, segment, process_id, l_stream)"
         " ORDER BY blocked_ns DESC, pid, api, target NULLS FIRST, handle NULLS FIRST, host_id";
}

// ioctl_sum.sql: per driver and request; a request no decoder named shows
// as its number, printf('0x%08x') as SQLite writes it.
std::string ioctl_sum(const FleetFilter& f) {
  return "SELECT x_driver AS driver, x_request AS request, x_calls AS calls, x_total AS total_ns, x_avg AS avg_ns,"
         " x_max AS max_ns, x_failed AS failed FROM (SELECT ifNull(driver, 'other') AS x_driver,"
         " ifNull(request, concat('0x', lower(concat(substring('00000000', 1, 8 - length(hex(cmd))), hex(cmd)))))"
         " AS x_request, toInt64(count()) AS x_calls, toInt64(sum(latency_ns)) AS x_total, " +
         round_sql("avg(latency_ns)", 1) +
         " AS x_avg, toInt64(max(latency_ns)) AS x_max,"
         " toInt64(sum(ifNull(failed, toUInt8(ret < 0)))) AS x_failed FROM ioctls WHERE " +
         where(f) + " GROUP BY x_driver, x_request) ORDER BY calls DESC, driver, request";
}

// The innermost four frames of a shipped stack line, as stack_heads gives
// them locally: the main-thread marker is not a frame. (Python frames keep
// their " (file:line)", which stack_heads does not have.)
// No stack, or one without frames: NULL, as stack_heads gives.
const std::string kStackHead =
    "if(stack = '', CAST(NULL AS Nullable(String)), toNullable(arrayStringConcat(arraySlice(arrayFilter("
    "x -> x != '[main thread]', splitByString(' <- ', stack)), 1, 4), ' <- ')))";

// Each segment's start (the ledger's start_ns), for times "after capture
// start": joined USING (host_id, segment) as s_start.
const std::string kSegmentStarts =
    "(SELECT host_id, segment, min(start_ns) AS s_start FROM segments GROUP BY host_id, segment)";

// Seconds after the segment's start, rounded by SQLite (kRounded: 6 digits).
// NULL for rows of a segment with no ledger row yet (a shipper that died
// in its first table: the join gives 0, which would read as Unix time).
std::string seconds_after_start(const std::string& ns) {
  return "if(s_start = 0, CAST(NULL AS Nullable(Float64)), toNullable(toFloat64(" + ns + " - s_start) / 1e9))";
}

// The successful allocations of memory_ops never freed in their segment
// (no row of the segment names them in alloc_id), as the leaks view.
const std::string kOkAlloc = "op IN ('alloc', 'create') AND (isNull(result) OR result = 0)";
std::string leak_rows(const FleetFilter& f) {
  // A free is in its allocation's host, segment and process: the frees are
  // looked for under the same host and process filters (not the time ones:
  // a free after --until still frees), so a one-host report does not
  // gather the fleet's frees.
  FleetFilter who = f;
  who.since_s.reset();
  who.until_s.reset();
  return "SELECT * FROM memory_ops WHERE " + kOkAlloc + " AND " + where(f) +
         " AND (host_id, segment, op_id) GLOBAL NOT IN (SELECT host_id, segment, assumeNotNull(alloc_id)"
         " FROM memory_ops WHERE isNotNull(alloc_id) AND " +
         where(who) + ")";
}

// mem.sql: per process (host, segment, process_id) and kind, from the
// successful allocations and frees with a size in time order: live bytes
// as their running sum (arrayCumSum over the sorted (time, row id) pairs),
// its peak and its last value; the leaks joined per process and kind. As
// there, the time filters do not apply (live bytes need the whole history).
std::string mem(const FleetFilter& f) {
  FleetFilter who = f;
  who.since_s.reset();
  who.until_s.reset();
  const std::string alloc = "op IN ('alloc', 'create')", free = "op IN ('free', 'release')";
  return "SELECT x_pid AS pid, x_process AS process, kind, x_allocs AS allocs, x_alloc_bytes AS alloc_bytes,"
         " x_frees AS frees, x_freed AS freed_bytes, x_peak AS peak_live_bytes, x_end AS end_live_bytes,"
         " toInt64(ifNull(l_n, 0)) AS leaks, toInt64(ifNull(l_bytes, 0)) AS leaked_bytes FROM ("
         " SELECT host_id, segment, process_id, kind, any(pid) AS x_pid, any(process) AS x_process,"
         " toInt64(countIf(" +
         alloc +
         ")) AS x_allocs,"
         " if(x_allocs = 0, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(sumIf(bytes, " +
         alloc + ")))) AS x_alloc_bytes, toInt64(countIf(" + free + ")) AS x_frees, toInt64(sumIf(bytes, " + free +
         ")) AS x_freed, arrayCumSum(arrayMap(t -> t.3, arraySort(groupArray((ts_ns, op_id, toInt64(multiIf(" + alloc +
         ", assumeNotNull(bytes), " + free +
         ", -assumeNotNull(bytes), 0))))))) AS x_live,"
         " arrayReduce('max', x_live) AS x_peak, x_live[length(x_live)] AS x_end"
         " FROM memory_ops WHERE (isNull(result) OR result = 0) AND op IN ('alloc', 'free', 'create', 'release')"
         " AND isNotNull(bytes) AND " +
         where(who) +
         " GROUP BY host_id, segment, process_id, kind)"
         " ANY LEFT JOIN (SELECT host_id, segment, process_id, kind, count() AS l_n, sum(ifNull(bytes, 0)) AS l_bytes"
         " FROM (" +
         leak_rows(who) +
         ") GROUP BY host_id, segment, process_id, kind)"
         " USING (host_id, segment, process_id, kind) ORDER BY pid, kind, host_id, segment, process_id";
}

// leaks.sql: time_s after the start of the allocation's segment (the
// ledger's start_ns); a shipped stack has no id (stack_id NULL), and the
// stack is its innermost four frames (kStackHead).
std::string leaks(const FleetFilter& f) {
  return "SELECT " + seconds_after_start("ts_ns") +
         " AS time_s, x_pid AS pid, process, api, kind, address, bytes, x_stack_id AS stack_id, x_stack AS stack FROM ("
         " SELECT host_id, segment, ts_ns, op_id, toInt64(pid) AS x_pid, process, api, kind, address, bytes,"
         " CAST(NULL AS Nullable(Int64)) AS x_stack_id, " +
         kStackHead + " AS x_stack FROM (" + leak_rows(f) + ")) ANY LEFT JOIN " + kSegmentStarts +
         " USING (host_id, segment) ORDER BY bytes DESC, ts_ns, host_id, op_id";
}

// launches.sql: per process (host, segment, process), API and kernel; the
// time filters apply too (the local report takes none: a fleet's launches
// are too many to read whole).
std::string launches(const FleetFilter& f) {
  return "SELECT x_pid AS pid, x_process AS process, api, kernel, x_n AS launches, x_streams AS streams,"
         " x_first AS first_s, x_last AS last_s FROM (SELECT host_id, segment, process_id, api, kernel,"
         " toInt64(any(pid)) AS x_pid, any(process) AS x_process, toInt64(count()) AS x_n,"
         " toInt64(uniqExact(stream)) AS x_streams, " +
         seconds_after_start("min(ts_ns)") + " AS x_first, " + seconds_after_start("max(ts_ns)") +
         " AS x_last FROM (SELECT * FROM launches WHERE " + where(f) + ") ANY LEFT JOIN " + kSegmentStarts +
         " USING (host_id, segment)"
         " GROUP BY host_id, segment, process_id, api, kernel, s_start)"
         " ORDER BY launches DESC, pid, kernel, api, host_id, segment, process_id";
}

// A query's CUDA_ERROR_NOT_READY / hipErrorNotReady is its ordinary answer
// while work is pending, not a failure (as the local reports say).
// (ifNull: 18.16 carries a Nullable result's NULL through AND, and
// countIf of NULLs is NULL.)
const std::string kFailed =
    "ifNull(isNotNull(result) AND result != 0 AND NOT (result = 600 AND api IN ('cuStreamQuery', 'cuStreamQuery_ptsz',"
    " 'cuEventQuery', 'hipStreamQuery', 'hipStreamQuery_spt', 'hipEventQuery')), 0)";

// calls.sql: per process and API, the timed calls, then the launches
// (entry only: counted, no time).
std::string calls(const FleetFilter& f) {
  return "SELECT x_pid AS pid, x_process AS process, x_family AS family, api, x_calls AS calls,"
         " x_failures AS failures, x_total AS total_ns, x_avg AS avg_ns FROM ("
         " SELECT host_id, segment, process_id, api, toInt64(any(pid)) AS x_pid, any(process) AS x_process,"
         " any(family) AS x_family, toInt64(count()) AS x_calls, toInt64(countIf(" +
         kFailed +
         ")) AS x_failures,"
         " toInt64(ifNull(sum(duration_ns), 0)) AS x_total, if(count(duration_ns) = 0, 0., " +
         round_sql("sum(duration_ns) / count(duration_ns)", 1) + ") AS x_avg FROM api_calls WHERE " + where(f) +
         " GROUP BY host_id, segment, process_id, api"
         " UNION ALL SELECT host_id, segment, process_id, api, toInt64(any(pid)), any(process), 'launch',"
         " toInt64(count()), toInt64(0), toInt64(0), 0. FROM launches WHERE " +
         where(f) +
         " GROUP BY host_id, segment, process_id, api)"
         " ORDER BY calls DESC, pid, api, host_id, segment, process_id";
}

// printf('0x%08x', n) and printf('0x%x', n) as SQLite writes them (hex()
// of an unsigned integer gives whole bytes, upper case).
std::string hex8(const std::string& n) {
  return "concat('0x', lower(concat(substring('00000000', 1, greatest(8 - length(hex(toUInt32(" + n +
         "))), 0)), hex(toUInt32(" + n + ")))))";
}
std::string hex_min(const std::string& n) {
  return "concat('0x', if(" + n + " = 0, '0', replaceRegexpOne(lower(hex(toUInt64(" + n + "))), '^0+', '')))";
}

// errors.sql: every failed API call and ioctl; time_s after the segment's
// start; a shipped stack has no id (stack_id NULL) and the stack is its
// innermost four frames, as in leaks.
std::string errors(const FleetFilter& f) {
  const std::string& head = kStackHead;
  const std::string ioctl_call =
      "ifNull(concat(request, multiIf(isNotNull(control), concat(' ', ifNull(control_name, " +
      hex8("assumeNotNull(control)") + ")), isNotNull(object_class), concat(' ', ifNull(class_name, " +
      hex_min("assumeNotNull(object_class)") +
      ")), '')), concat('ioctl ', toString(dev_major), ':',"
      " toString(dev_minor), ' ', " +
      hex8("cmd") + "))";
  return "SELECT " + seconds_after_start("ts_ns") +
         " AS time_s, x_pid AS pid, process, x_tid AS tid, layer, call, x_result AS result, x_status AS status,"
         " CAST(NULL AS Nullable(Int64)) AS stack_id, x_stack AS stack FROM ("
         " SELECT host_id, segment, ts_ns, toInt64(pid) AS x_pid, process, toInt64(tid) AS x_tid, 'api' AS layer,"
         " api AS call, result AS x_result, CAST(NULL AS Nullable(String)) AS x_status, " +
         head +
         " AS x_stack"
         " FROM api_calls WHERE " +
         kFailed + " AND " + where(f) +
         " UNION ALL SELECT host_id, segment, ts_ns, toInt64(pid), process, toInt64(tid), 'ioctl', " + ioctl_call +
         ", if(ret < 0, toNullable(ret), status), status_name, " + head +
         " FROM ioctls WHERE ifNull(failed, ret < 0)"
         " AND " +
         where(f) + ") ANY LEFT JOIN " + kSegmentStarts +
         " USING (host_id, segment) ORDER BY ts_ns, layer, tid, host_id";
}

// nccl_ranks.sql across hosts: a rank is (host, pid) in its communicator;
// a collective's arrival order is over every rank that entered it in the
// window, whichever hosts the filter asks for (as nccl_sum). The site of a
// rank's late calls is that of the stack they came from most often, from
// the sites the shipper computed per stack (nccl_calls.call_site and
// python_site, as the local report finds them). An empty stack is none.
std::string nccl_ranks(const FleetFilter& f) {
  FleetFilter window;  // the time filter alone: every rank
  window.since_s = f.since_s;
  window.until_s = f.until_s;
  const std::string h = "lower(hex(comm_hash))";
  const std::string inst =
      "SELECT comm_hash, seq, min(ts_ns) AS i_first, max(ts_ns) AS i_last, uniqExact(host_id, pid) AS i_seen"
      " FROM nccl_calls WHERE seq > 0 AND comm_hash != 0 AND " +
      where(window) + " GROUP BY comm_hash, seq";
  // One row per (rank, stack): its calls, late ones, their lateness and
  // waiting; the rank's site is the stack's with the most late calls, the
  // lowest stack id on a tie (stack_key: the capture's stack id), NULL
  // where that stack has none. (As a tuple: argMax skips a Nullable
  // argument's NULLs, which would pass the site to a lesser stack.)
  const std::string per_stack =
      "SELECT comm_hash, rank, host_id, pid, stack_key, any(process) AS s_process, any(call_site) AS s_call,"
      " any(python_site) AS s_py, count() AS s_n, countIf(a_late > 0) AS s_late, sum(a_late) AS s_late_ns,"
      " sum(i_last - ts_ns) AS s_waited FROM (SELECT *, if(i_seen > 1 AND ts_ns = i_last AND i_last - i_first >="
      " 1000000, i_last - i_first, 0) AS a_late FROM (SELECT * FROM nccl_calls WHERE seq > 0 AND comm_hash != 0 AND " +
      where(f) + ") ANY INNER JOIN (" + inst +
      ") USING (comm_hash, seq))"
      " GROUP BY comm_hash, rank, host_id, pid, stack_key";
  const std::string late_of_stack = "if(isNotNull(stack_key), s_late, 0)";
  return "SELECT y_comm AS comm, y_rank AS rank, y_tgid AS tgid, x_process AS process, x_n AS collectives,"
         " x_late AS late, x_late_ns AS late_ns, x_waited AS waited_ns, x_call AS call_site, x_py AS python_site"
         " FROM (SELECT *, if(comm_hash = 0, '(unknown)', concat(substring('0000000000000000', 1, 16 - length(" +
         h + ")), " + h +
         ")) AS y_comm, if(rank < 0, CAST(NULL AS Nullable(Int64)), toNullable(toInt64(rank))) AS y_rank,"
         " toInt64(pid) AS y_tgid, if(x_site_late = 0, CAST(NULL AS Nullable(String)), tupleElement(x_site, 1)) AS "
         "x_call,"
         " if(x_site_late = 0, CAST(NULL AS Nullable(String)), tupleElement(x_site, 2)) AS x_py FROM ("
         " SELECT comm_hash, rank, host_id, pid, any(s_process) AS x_process, toInt64(sum(s_n)) AS x_n,"
         " toInt64(sum(s_late)) AS x_late, toInt64(sum(s_late_ns)) AS x_late_ns, toInt64(sum(s_waited)) AS x_waited,"
         " max(" +
         late_of_stack +
         ") AS x_site_late,"
         " argMax((s_call, s_py), (" +
         late_of_stack +
         ", -ifNull(stack_key, 0))) AS x_site"
         " FROM (" +
         per_stack +
         ") GROUP BY comm_hash, rank, host_id, pid))"
         " ORDER BY late DESC, late_ns DESC, comm, rank NULLS FIRST, host_id";
}

// gpu_sum.sql: per GPU of a segment (host, segment, gpu_id) and metric,
// time-weighted statistics of the shipped samples (each holds its value
// from ts_ns to until_ns, cut to the window; one that held no time weighs
// 1 ns), percentiles from the values sorted with their running time
// (arrayCumSum: 18.16 has no window functions), and per throttle reason
// the time it held the clocks down. Metrics in the catalogue's order (their
// id in the capture), reasons by bit. --since/--until cut the samples.
std::string gpu_sum(const FleetFilter& f) {
  FleetFilter host_only;
  host_only.host = f.host;
  char buf[64];
  std::string lo = "toInt64(-9000000000000000000)", hi = "toInt64(9000000000000000000)";
  if (f.since_s) lo = (std::snprintf(buf, sizeof buf, "toInt64(%.0f)", *f.since_s * 1e9), buf);
  if (f.until_s) hi = (std::snprintf(buf, sizeof buf, "toInt64(%.0f)", *f.until_s * 1e9), buf);
  std::string names, bits, reasons;
  for (const auto& m : gpumetrics::metric_catalogue())
    names += (names.empty() ? "'" : ", '") + std::string(m.name) + "'";
  for (const auto& r : gpumetrics::throttle_reasons()) {
    bits += (bits.empty() ? "" : ", ") + std::string("toInt64(") + std::to_string(r.bit) + ")";
    reasons += (reasons.empty() ? "'" : ", '") + std::string(r.name) + "'";
  }
  const std::string kept = "(SELECT * FROM (SELECT *, greatest(least(until_ns, " + hi + ") - greatest(ts_ns, " + lo +
                           "), if(ts_ns = until_ns AND ts_ns >= " + lo + " AND ts_ns <= " + hi +
                           ", 1, 0)) AS dur FROM gpu_metrics WHERE " + where(host_only) + ") WHERE dur > 0)";
  const std::string null_f = "CAST(NULL AS Nullable(Float64))";
  auto pct = [](const std::string& q) {
    return "toNullable(x_sorted[arrayFirstIndex(c -> c >= " + q + " * x_total, x_cum)].1)";
  };
  const std::string metrics =
      "SELECT host_id, segment, gpu_id, x_name, x_metric, x_unit, x_seconds, x_mean, x_p50, x_p95,"
      " toNullable(x_lo) AS x_min, toNullable(x_hi) AS x_max, 0 AS x_part, x_ord FROM ("
      " SELECT host_id, segment, gpu_id, any(gpu_name) AS x_name, metric AS x_metric, any(unit) AS x_unit,"
      " sum(dur) AS x_total, toFloat64(x_total) / 1e9 AS x_seconds, sum(value * dur) / x_total AS x_mean,"
      " arraySort(x -> x.1, groupArray((value, dur))) AS x_sorted, arrayCumSum(arrayMap(x -> x.2, x_sorted)) AS x_cum,"
      // (At this level: 18.16 drops a subquery column that only a lambda uses.)
      " " +
      pct("0.5") + " AS x_p50, " + pct("0.95") +
      " AS x_p95,"
      " min(value) AS x_lo, max(value) AS x_hi, toInt64(indexOf([" +
      names + "], metric)) AS x_ord FROM " + kept +
      " WHERE metric != 'clocks_event_reasons' GROUP BY host_id, segment, gpu_id, metric)";
  const std::string throttle =
      "SELECT host_id, segment, gpu_id, x_name, concat('throttle:', r_name), '%', toFloat64(r_active) / 1e9,"
      " 100. * r_active / x_total, " +
      null_f + ", " + null_f + ", " + null_f + ", " + null_f +
      ", 1, r_bit FROM ("
      " SELECT host_id, segment, gpu_id, any(gpu_name) AS x_name, sum(dur) AS x_total,"
      " groupArray((toInt64(value), dur)) AS x_vd FROM " +
      kept +
      " WHERE metric = 'clocks_event_reasons'"
      " GROUP BY host_id, segment, gpu_id) ARRAY JOIN [" +
      bits + "] AS r_bit, [" + reasons +
      "] AS r_name"
      " WHERE (arraySum(arrayMap(x -> if(bitAnd(x.1, r_bit) != 0, x.2, 0), x_vd)) AS r_active) > 0";
  return "SELECT toInt64(gpu_id) AS gpu, x_name AS name, x_metric AS metric, x_unit AS unit, x_seconds AS seconds,"
         " x_mean AS mean, x_p50 AS p50, x_p95 AS p95, x_min AS min, x_max AS max FROM (" +
         metrics + " UNION ALL " + throttle + ") ORDER BY host_id, segment, gpu_id, x_part, x_ord";
}

// stream_sum.sql: per process (host, segment, process) and stream, the
// work queued on it: kernels, successful async copies and memsets (bytes),
// and the stream operations that order it.
std::string stream_sum(const FleetFilter& f) {
  const std::string w = where(f);
  const std::string ops =
      "SELECT host_id, segment, process_id, pid, process, toNullable(stream) AS o_stream, 'kernel' AS o_what,"
      " toNullable(toInt64(0)) AS o_bytes FROM launches WHERE " +
      w +
      " UNION ALL SELECT host_id, segment, process_id, pid, process, stream, kind, bytes FROM copies"
      " WHERE ifNull(async, 0) = 1 AND ifNull(result, 0) = 0 AND " +
      w +
      " UNION ALL SELECT host_id, segment, process_id, pid, process, stream, op, toNullable(toInt64(0))"
      " FROM stream_ops WHERE op IN ('event_record', 'wait_event', 'host_func', 'graph_launch')"
      " AND ifNull(result, 0) = 0 AND " +
      w;
  return "SELECT x_pid AS pid, x_process AS process, if(isNull(o_stream), CAST(NULL AS Nullable(String)), toNullable(" +
         stream_label_sql("l_stream") +
         ")) AS stream, x_ops AS ops, x_kernels AS kernels,"
         " x_copies AS copies, x_memsets AS memsets, x_bytes AS bytes, x_er AS events_recorded, x_ew AS event_waits,"
         " x_hf AS host_funcs, x_gl AS graph_launches, o_stream AS handle FROM (SELECT host_id, segment, process_id,"
         " o_stream, ifNull(o_stream, toUInt64(0)) AS l_stream,"
         " toInt64(any(pid)) AS x_pid, any(process) AS x_process, toInt64(count()) AS x_ops,"
         " toInt64(countIf(o_what = 'kernel')) AS x_kernels, toInt64(countIf(o_what = 'copy')) AS x_copies,"
         " toInt64(countIf(o_what = 'memset')) AS x_memsets, sum(o_bytes) AS x_bytes,"
         " toInt64(countIf(o_what = 'event_record')) AS x_er, toInt64(countIf(o_what = 'wait_event')) AS x_ew,"
         " toInt64(countIf(o_what = 'host_func')) AS x_hf, toInt64(countIf(o_what = 'graph_launch')) AS x_gl"
         " FROM (" +
         ops + ") GROUP BY host_id, segment, process_id, o_stream) ANY LEFT JOIN " + stream_labels(f) +
         " USING (host_id, segment, process_id, l_stream)"
         " ORDER BY ops DESC, pid, handle NULLS FIRST, host_id, segment, process_id";
}

// nccl_stalls.sql: every stall of every segment, one row per rank, the
// missing ranks first; detected_s after the segment's start. Filters: the
// host, --pid (the rank's process) and the time of detection.
std::string nccl_stalls(const FleetFilter& f) {
  FleetFilter w = f;
  w.process.clear();  // the rows name a rank's pid, not its process
  const std::string h = "lower(hex(comm_hash))";
  return "SELECT stall_id AS stall, " + seconds_after_start("ts_ns") +
         " AS detected_s, concat(substring('0000000000000000', 1, 16 - length(" + h + ")), " + h +
         ") AS comm, seq, op, kind, waited_ns, rank, toInt64(pid) AS tgid, state, last_seq, last_api, call_site,"
         " python_site FROM (SELECT * FROM nccl_stalls WHERE " +
         where(w) + ") ANY LEFT JOIN " + kSegmentStarts +
         " USING (host_id, segment) ORDER BY host_id, segment, stall, state != 'missing', rank";
}

}  // namespace

std::vector<std::string> fleet_report_names() {
  return {"kern_sum", "api_sum", "nccl_sum", "copy_sum", "memset_sum", "sync_sum",    "ioctl_sum", "launches",
          "calls",    "errors",  "mem",      "leaks",    "nccl_ranks", "nccl_stalls", "gpu_sum",   "stream_sum"};
}

Result<QueryResult> run_fleet_report(const ClickHouse& ch, const std::string& name, const FleetFilter& f) {
  if (auto v = check_schema(ch); !v) return v.error();
  if (name == "copy_sum" || name == "memset_sum")
    if (auto t = require_table(ch, "copies"); !t) return t.error();
  if (name == "sync_sum")
    if (auto t = require_table(ch, "syncs"); !t) return t.error();
  if (name == "ioctl_sum" || name == "errors")
    if (auto t = require_table(ch, "ioctls"); !t) return t.error();
  if (name == "errors")
    if (auto c = require_columns(ch, "ioctls", {"object_class", "control"}); !c) return c.error();
  if (name == "nccl_ranks")
    if (auto c = require_columns(ch, "nccl_calls", {"call_site", "python_site", "stack_key"}); !c) return c.error();
  if (name == "gpu_sum")
    if (auto t = require_table(ch, "gpu_metrics"); !t) return t.error();
  if (name == "stream_sum")
    if (auto t = require_table(ch, "stream_ops"); !t) return t.error();
  if (name == "nccl_stalls")
    if (auto t = require_table(ch, "nccl_stalls"); !t) return t.error();
  if (name == "mem" || name == "leaks")
    if (auto t = require_table(ch, "memory_ops"); !t) return t.error();
  auto tables = fleet_tables(ch);
  if (!tables) return tables.error();
  std::string sql;
  if (name == "kern_sum") sql = kern_sum(f, tables->count("gpu_times") > 0);
  else if (name == "ioctl_sum") sql = ioctl_sum(f);
  else if (name == "launches") sql = launches(f);
  else if (name == "calls") sql = calls(f);
  else if (name == "errors") sql = errors(f);
  else if (name == "nccl_ranks") sql = nccl_ranks(f);
  else if (name == "gpu_sum") sql = gpu_sum(f);
  else if (name == "stream_sum") sql = stream_sum(f);
  else if (name == "nccl_stalls") sql = nccl_stalls(f);
  else if (name == "mem") sql = mem(f);
  else if (name == "leaks") sql = leaks(f);
  else if (name == "api_sum") sql = api_sum(f);
  else if (name == "nccl_sum") sql = nccl_sum(f);
  else if (name == "copy_sum" || name == "memset_sum") {
    // The GPU times join through copies.copy_id (a column added since).
    auto cols = table_columns(ch, "copies");
    if (!cols) return cols.error();
    const bool timed = tables->count("gpu_times") > 0 && cols->count("copy_id") > 0;
    sql = name == "copy_sum" ? copy_sum(f, timed) : memset_sum(f, timed);
  } else if (name == "sync_sum") sql = sync_sum(f);
  else {
    std::string names;
    for (const auto& n : fleet_report_names()) names += (names.empty() ? "" : ", ") + n;
    return make_error("no report '" + name + "' on ClickHouse", "these run there: " + names, 2);
  }
  auto body = ch.query(sql + " FORMAT TabSeparatedWithNamesAndTypes");
  if (!body) return body.error();
  auto rows = parse_tsv(*body);
  QueryResult r;
  if (rows.size() < 2) return make_error("ClickHouse sent no column names for " + name);
  r.columns = rows[0];
  const std::vector<std::string>& types = rows[1];
  for (size_t i = 2; i < rows.size(); ++i) {
    std::vector<Cell> out;
    for (size_t j = 0; j < rows[i].size() && j < types.size(); ++j) {
      const std::string& v = rows[i][j];
      const std::string& t = types[j];
      if (t.rfind("Nullable(", 0) == 0 && v == "\\N") {
        out.emplace_back(std::monostate{});
      } else if (t.find("Int") != std::string::npos) {
        out.emplace_back(static_cast<int64_t>(std::strtoll(v.c_str(), nullptr, 10)));
      } else if (t.find("Float") != std::string::npos) {
        out.emplace_back(std::strtod(v.c_str(), nullptr));
      } else {
        out.emplace_back(v);
      }
    }
    r.rows.push_back(std::move(out));
  }
  if (auto st = round_like_sqlite(r); !st) return st.error();
  return r;
}

}  // namespace gpuobs::fleet
