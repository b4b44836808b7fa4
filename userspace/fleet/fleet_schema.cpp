#include "fleet/fleet_schema.h"

#include <string>

#include "fleet/fleet_tables.h"

namespace gpuobs::fleet {
namespace {

// ClickHouse 18.16 DDL. Nullable where the capture has NULLs (a call
// probed at entry only has no duration); the sort keys lead with date and
// host so a fleet query's time and host filters prune parts and granules.
// The tables that are not shipped rows: the version, and the ledger (one row
// per (segment, table) shipped whole). The shipped tables are declared in
// fleet/fleet_tables.cpp.
const char* const kTables[] = {
    "CREATE TABLE IF NOT EXISTS schema_version (version UInt32, applied DateTime DEFAULT now()) ENGINE = TinyLog",
    ("CREATE TABLE IF NOT EXISTS segments (host String, host_id UInt64, segment UInt64, table_name String,"
     " rows UInt64, start_ns Int64, end_ns Int64, source String, gpuobs_version String,"
     " shipped DateTime DEFAULT now()) ENGINE = MergeTree() ORDER BY (host_id, segment, table_name)"),
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
  // Each shipped table as declared; a column a table made by an older gpuobs
  // lacks is added (18.16 has no ADD COLUMN IF NOT EXISTS), and the shipper
  // sends only the columns a database has.
  for (const ShippedTable& t : shipped_tables()) {
    if (auto r = ch.query(create_table_sql(t)); !r) return r.error();
    auto cols = table_columns(ch, t.name);
    if (!cols) return cols.error();
    for (const FleetColumn& c : t.columns)
      if (!cols->count(c.name))
        if (auto r = ch.query(std::string("ALTER TABLE ") + t.name + " ADD COLUMN " + c.name + " " + c.type); !r)
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
