#include "fleet/fleet_schema.h"

#include <string>

namespace gpuobs::fleet {
namespace {

// ClickHouse 18.16 DDL. Nullable where the capture has NULLs (a call
// probed at entry only has no duration); the sort keys lead with date and
// host so a fleet query's time and host filters prune parts and granules.
const char* const kTables[] = {
    "CREATE TABLE IF NOT EXISTS schema_version (version UInt32, applied DateTime DEFAULT now()) ENGINE = TinyLog",
    // The ledger: one row per (segment, table) shipped whole.
    ("CREATE TABLE IF NOT EXISTS segments (host String, host_id UInt64, segment UInt64, table_name String,"
     " rows UInt64, start_ns Int64, end_ns Int64, source String, gpuobs_version String,"
     " shipped DateTime DEFAULT now()) ENGINE = MergeTree() ORDER BY (host_id, segment, table_name)"),
    ("CREATE TABLE IF NOT EXISTS processes (date Date DEFAULT toDate(intDiv(first_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, process_id Int64, pid UInt32, comm String, first_ns Int64, last_ns Int64)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, pid)"),
    ("CREATE TABLE IF NOT EXISTS launches (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, process_id Int64, pid UInt32, process String, tid UInt32,"
     " api String, kernel String, function UInt64, grid_x UInt32, grid_y UInt32, grid_z UInt32, block_x UInt32,"
     " block_y UInt32, block_z UInt32, shared_mem UInt32, stream UInt64, cooperative UInt8, stack String)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, kernel, ts_ns)"),
    ("CREATE TABLE IF NOT EXISTS api_calls (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, process_id Int64, pid UInt32, process String, tid UInt32,"
     " family String, api String, duration_ns Nullable(Int64), result Nullable(Int64), stack String)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, api, ts_ns)"),
    ("CREATE TABLE IF NOT EXISTS nccl_calls (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, duration_ns Nullable(Int64), process_id Int64, pid UInt32,"
     " process String, tid UInt32, api String, op String, comm_hash UInt64, rank Int32, nranks Int32, seq Int64,"
     " count Nullable(UInt64), datatype String, redop String, peer Nullable(Int64), stream Nullable(UInt64),"
     " bytes Nullable(Int64), result Nullable(Int64), stack String, call_site Nullable(String),"
     " python_site Nullable(String), stack_key Nullable(Int64))"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, comm_hash, seq, host, ts_ns)"),
    // Added since (the version stays: a build ships the tables there are).
    ("CREATE TABLE IF NOT EXISTS copies (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, duration_ns Nullable(Int64), process_id Int64, pid UInt32,"
     " process String, tid UInt32, api String, kind Nullable(String), direction Nullable(String),"
     " bytes Nullable(Int64), async Nullable(UInt8), stream Nullable(UInt64), result Nullable(Int64), stack String,"
     " copy_id Int64)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, api, ts_ns)"),
    ("CREATE TABLE IF NOT EXISTS syncs (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, duration_ns Nullable(Int64), process_id Int64, pid UInt32,"
     " process String, tid UInt32, api String, target Nullable(String), stream Nullable(UInt64), event "
     "Nullable(UInt64),"
     " blocked_ns Nullable(Int64), result Nullable(Int64), stack String)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, api, ts_ns)"),
    // Allocations and frees (op_id: the row's id in its segment, which a
    // free's alloc_id names), stream and event operations.
    ("CREATE TABLE IF NOT EXISTS memory_ops (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, duration_ns Nullable(Int64), process_id Int64, pid UInt32,"
     " process String, tid UInt32, api String, op String, kind Nullable(String), address Nullable(Int64),"
     " bytes Nullable(Int64), stream Nullable(UInt64), handle Nullable(Int64), flags Nullable(Int64), op_id Int64,"
     " alloc_id Nullable(Int64), result Nullable(Int64), stack String)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, api, ts_ns)"),
    ("CREATE TABLE IF NOT EXISTS stream_ops (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, duration_ns Nullable(Int64), process_id Int64, pid UInt32,"
     " process String, tid UInt32, api String, op String, stream Nullable(UInt64), event Nullable(UInt64),"
     " handle Nullable(Int64), flags Nullable(Int64), priority Nullable(Int64), result Nullable(Int64), stack String)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, api, ts_ns)"),
    // The drivers' ioctls, decoded (args: the decoder's JSON), and the
    // objects they made and ended (object_id: the row's id, alloc_id of a
    // free names it).
    ("CREATE TABLE IF NOT EXISTS ioctls (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, latency_ns Int64, process_id Int64, pid UInt32, process String,"
     " tid UInt32, fd Int32, dev_major UInt32, dev_minor UInt32, cmd UInt32, driver Nullable(String),"
     " request Nullable(String), ret Int64, status Nullable(Int64), status_name Nullable(String),"
     " failed Nullable(UInt8), object_class Nullable(Int64), class_name Nullable(String), control Nullable(Int64),"
     " control_name Nullable(String), args Nullable(String), stack String) ENGINE = MergeTree() PARTITION BY "
     "toYYYYMM(date) ORDER BY (date, host, ts_ns)"),
    ("CREATE TABLE IF NOT EXISTS driver_objects (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, process_id Int64, pid UInt32, process String, tid UInt32,"
     " driver String, op String, kind String, client Nullable(Int64), parent Nullable(Int64), handle Int64,"
     " class_name Nullable(String), bytes Nullable(Int64), flags Nullable(Int64), address Nullable(Int64),"
     " object_id Int64, alloc_id Nullable(Int64), stack String)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, kind, ts_ns)"),
    // What the GPUs reported (a value holds from ts_ns until until_ns), per
    // process, and their Xid and ECC events; gpu is the GPU's UUID (gpu_id
    // is its number in the segment).
    ("CREATE TABLE IF NOT EXISTS gpu_metrics (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, until_ns Int64, gpu_id UInt32, gpu String, gpu_name String,"
     " metric String, unit String, value Float64)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, gpu, metric, ts_ns)"),
    ("CREATE TABLE IF NOT EXISTS gpu_process_metrics (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)),"
     " host String, host_id UInt64, segment UInt64, ts_ns Int64, until_ns Int64, gpu_id UInt32, gpu String,"
     " pid UInt32, process_id Nullable(Int64), process String, sm_util_pct Nullable(Int64),"
     " mem_util_pct Nullable(Int64), memory_bytes Nullable(Int64), gone UInt8)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, gpu, pid, ts_ns)"),
    ("CREATE TABLE IF NOT EXISTS gpu_events (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, gpu_id UInt32, gpu String, kind String, code Nullable(Int64))"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, ts_ns)"),
    // CUPTI's GPU time of each call it measured (record --gpu-time):
    // call_table and row_id name the call in its segment; kernel as
    // kern_sum names it.
    ("CREATE TABLE IF NOT EXISTS gpu_times (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, end_ns Int64, duration_ns Int64, process_id Int64, pid UInt32,"
     " process String, call_table String, row_id Int64, kernel Nullable(String), device Nullable(Int64),"
     " stream_id Nullable(Int64), correlation_id Nullable(Int64), activities Int64, joined_by String)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, call_table, ts_ns)"),
    // The stall watch's stuck collectives, one row per stall and rank (the
    // rank's call_site and python_site as nccl_stalls.sql finds them).
    ("CREATE TABLE IF NOT EXISTS nccl_stalls (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, stall_id Int64, comm_hash UInt64, seq Int64, op String,"
     " kind String, nranks Nullable(Int64), ranks_in String, ranks_missing String, waited_ns Int64,"
     " rank Nullable(Int64), pid UInt32, state String, last_seq Nullable(Int64), last_api Nullable(String),"
     " call_site Nullable(String), python_site Nullable(String))"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, comm_hash, seq)"),
    // Every counter of a segment as it ended (drops, failures to attach or
    // to symbolize): ts_ns is the segment's end.
    ("CREATE TABLE IF NOT EXISTS counters (date Date DEFAULT toDate(intDiv(ts_ns, 1000000000)), host String,"
     " host_id UInt64, segment UInt64, ts_ns Int64, name String, value Int64, source String)"
     " ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (date, host, name, segment)"),
};

// Columns added to a table after it was first shipped: init adds those an
// older database lacks (18.16 has no ADD COLUMN IF NOT EXISTS), and the
// shipper sends only the columns a database has.
struct AddedColumn {
  const char* table;
  const char* column;
  const char* type;
};
constexpr AddedColumn kAddedColumns[] = {
    {"processes", "ppid", "Nullable(Int64)"},          {"processes", "exe", "Nullable(String)"},
    {"processes", "exit_code", "Nullable(Int64)"},     {"processes", "cgroup", "Nullable(String)"},
    {"processes", "container_id", "Nullable(String)"}, {"copies", "copy_id", "Int64"},
    {"nccl_calls", "call_site", "Nullable(String)"},   {"nccl_calls", "python_site", "Nullable(String)"},
    {"nccl_calls", "stack_key", "Nullable(Int64)"},    {"ioctls", "object_class", "Nullable(Int64)"},
    {"ioctls", "control", "Nullable(Int64)"},
};

}  // namespace

Result<uint32_t> check_schema(const ClickHouse& ch) {
  auto r = ch.query("SELECT max(version) FROM schema_version");
  if (!r) {
    if (r.error().message.find("doesn't exist") != std::string::npos ||
        r.error().message.find("Code: 81") != std::string::npos ||
        r.error().message.find("Code: 60") != std::string::npos)
      return make_error("no gpuobs schema in database " + ch.endpoint().database + " at " + ch.endpoint().base,
                        "run gpuobs clickhouse init " + ch.endpoint().display());
    return r.error();
  }
  uint32_t v = static_cast<uint32_t>(std::strtoul(r->c_str(), nullptr, 10));
  if (v == 0)
    return make_error("database " + ch.endpoint().database + " has no schema version",
                      "run gpuobs clickhouse init " + ch.endpoint().display());
  if (v > kFleetSchemaVersion)
    return make_error("database " + ch.endpoint().database + " has gpuobs schema version " + std::to_string(v) +
                          ", newer than this build's " + std::to_string(kFleetSchemaVersion),
                      "use a newer gpuobs");
  return v;
}

Result<std::set<std::string>> fleet_tables(const ClickHouse& ch) {
  auto r = ch.query("SELECT name FROM system.tables WHERE database = currentDatabase()");
  if (!r) return r.error();
  std::set<std::string> out;
  for (auto& row : parse_tsv(*r))
    if (!row.empty()) out.insert(row[0]);
  return out;
}

Result<std::map<std::string, std::string>> column_types(const ClickHouse& ch, const std::string& table) {
  auto r =
      ch.query("SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = '" + table + "'");
  if (!r) return r.error();
  std::map<std::string, std::string> out;
  for (auto& row : parse_tsv(*r))
    if (row.size() >= 2) out[row[0]] = row[1];
  return out;
}

Result<std::set<std::string>> table_columns(const ClickHouse& ch, const std::string& table) {
  auto types = column_types(ch, table);
  if (!types) return types.error();
  std::set<std::string> out;
  for (const auto& [name, type] : *types) out.insert(name);
  return out;
}

Status require_columns(const ClickHouse& ch, const std::string& table, std::initializer_list<const char*> columns) {
  auto have = table_columns(ch, table);
  if (!have) return have.error();
  std::string missing;
  for (const char* c : columns)
    if (!have->count(c)) missing += (missing.empty() ? "" : ", ") + std::string(c);
  if (!missing.empty())
    return make_error("table " + table + " of database " + ch.endpoint().database + " has no column " + missing +
                          " (made by a gpuobs that did not ship it yet)",
                      "run gpuobs clickhouse init " + ch.endpoint().display() +
                          " to add it; segments shipped before "
                          "have it empty");
  return {};
}

Status require_table(const ClickHouse& ch, const std::string& table) {
  auto t = fleet_tables(ch);
  if (!t) return t.error();
  if (!t->count(table))
    return make_error("database " + ch.endpoint().database + " has no table " + table +
                          " (made by a gpuobs that did not ship it yet)",
                      "run gpuobs clickhouse init " + ch.endpoint().display() + " to add it (the rows there stay)");
  return {};
}

Status init_schema(const ClickHouse& ch) {
  if (auto r = ch.query("CREATE DATABASE IF NOT EXISTS " + ch.endpoint().database, false); !r) return r.error();
  auto have =
      ch.query("SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = 'schema_version'");
  if (!have) return have.error();
  if (std::strtoul(have->c_str(), nullptr, 10) > 0) {  // an older one is brought up to date
    auto v = check_schema(ch);
    if (!v && v.error().message.find("newer") != std::string::npos) return v.error();
  }
  for (const char* sql : kTables)
    if (auto r = ch.query(sql); !r) return r.error();
  for (const AddedColumn& a : kAddedColumns) {
    auto cols = table_columns(ch, a.table);
    if (!cols) return cols.error();
    if (!cols->count(a.column))
      if (auto r = ch.query(std::string("ALTER TABLE ") + a.table + " ADD COLUMN " + a.column + " " + a.type); !r)
        return r.error();
  }
  auto v = ch.query("SELECT count() FROM schema_version WHERE version = " + std::to_string(kFleetSchemaVersion));
  if (!v) return v.error();
  if (std::strtoul(v->c_str(), nullptr, 10) == 0)
    if (auto r = ch.query("INSERT INTO schema_version (version) VALUES (" + std::to_string(kFleetSchemaVersion) + ")");
        !r)
      return r.error();
  return {};
}

}  // namespace gpuobs::fleet
