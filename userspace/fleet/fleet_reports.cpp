#include "fleet/fleet_reports.h"

#include <sqlite3.h>

#include <cstdio>
#include <map>
#include <variant>

#include "fleet/fleet_schema.h"
#include "gpu_metrics/metric_catalogue.h"
#include "store/embedded_sql.h"

namespace gpuobs::fleet {
namespace {

// Values the local reports round with SQLite's round(x, n) come back
// unrounded (toFloat64 in schema/fleet_reports/) and are rounded here by
// SQLite itself: its round works on the decimal form (1.005 -> 1.01), which
// no ClickHouse function reproduces.
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

// A report's SQL (schema/fleet_reports/NAME.sql), or a piece's (_name.sql).
const sql::EmbeddedSql* find_sql(std::string_view name) {
  for (const auto& e : sql::fleet_reports())
    if (e.name == name) return &e;
  return nullptr;
}

// A piece as it goes into a statement: its comment lines dropped (a "--"
// would swallow the rest of the line it is placed in), its ends trimmed.
std::string piece_text(std::string_view text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line.substr(first, 2) == "--") continue;
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

// Replaces every {{_name}} in text by the piece _name.sql (its own
// placeholders too), or by the piece `instead` names for it.
Result<std::string> expand(std::string_view text, const std::map<std::string, std::string>& instead, int depth = 0) {
  if (depth > 8) return make_error("schema/fleet_reports: pieces include each other too deep (a cycle?)");
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) break;
    size_t close = text.find("}}", open);
    if (close == std::string_view::npos) return make_error("schema/fleet_reports: a '{{' without '}}'");
    out.append(text.substr(pos, open - pos));
    std::string name(text.substr(open + 2, close - open - 2));
    if (auto it = instead.find(name); it != instead.end()) name = it->second;
    const sql::EmbeddedSql* piece = name.rfind('_', 0) == 0 ? find_sql(name) : nullptr;
    if (!piece) return make_error("schema/fleet_reports: no piece " + name + ".sql");
    auto inner = expand(piece_text(piece->text), instead, depth + 1);
    if (!inner) return inner.error();
    out += *inner;
    pos = close + 2;
  }
  out.append(text.substr(pos));
  return out;
}

// The one-row table `filter` every report reads its filter values from
// (the pieces _host, _pid, _process and _time): an empty host or process
// and has_pid 0 take every row; no --since/--until, a window wider than any
// time.
ExternalTable filter_table(const FleetFilter& f) {
  char lo[32] = "-9000000000000000000", hi[32] = "9000000000000000000";
  if (f.since_s) std::snprintf(lo, sizeof lo, "%.0f", *f.since_s * 1e9);
  if (f.until_s) std::snprintf(hi, sizeof hi, "%.0f", *f.until_s * 1e9);
  ExternalTable t{"filter", "host String, has_pid UInt8, pid Int64, process String, since_ns Int64, until_ns Int64",
                  ""};
  append_tsv_field(t.rows, f.host);
  t.rows += std::string("\t") + (f.pid ? "1" : "0") + "\t" + std::to_string(f.pid.value_or(0)) + "\t";
  append_tsv_field(t.rows, f.process);
  t.rows += std::string("\t") + lo + "\t" + hi + "\n";
  return t;
}

// A ClickHouse array of strings as one TabSeparated field: ['a', 'b'].
std::string tsv_string_array(const std::vector<std::string_view>& items) {
  std::string a = "[";
  for (const auto& s : items) {
    if (a.size() > 1) a += ",";
    a += "'";
    for (char c : s) {
      if (c == '\'' || c == '\\') a += '\\';
      a += c;
    }
    a += "'";
  }
  a += "]";
  std::string field;
  append_tsv_field(field, a);
  return field;
}

// The one-row table `catalogue` (gpu_sum): the metric names in the
// catalogue's order, the throttle reasons' bits and names, from
// gpu_metrics/metric_catalogue.cpp: one list, not a copy in the SQL.
ExternalTable catalogue_table() {
  std::vector<std::string_view> names, reasons;
  std::string bits = "[";
  for (const auto& m : gpumetrics::metric_catalogue()) names.push_back(m.name);
  for (const auto& r : gpumetrics::throttle_reasons()) {
    bits += (bits.size() > 1 ? "," : "") + std::to_string(r.bit);
    reasons.push_back(r.name);
  }
  return {"catalogue", "metric_names Array(String), throttle_bits Array(Int64), throttle_names Array(String)",
          tsv_string_array(names) + "\t" + bits + "]\t" + tsv_string_array(reasons) + "\n"};
}

}  // namespace

std::vector<std::string> fleet_report_names() {
  std::vector<std::string> out;
  for (const auto& e : sql::fleet_reports())
    if (e.name.rfind('_', 0) != 0) out.emplace_back(e.name);
  return out;
}

Result<std::string> fleet_report_sql(const std::string& name, const FleetDatabase& db) {
  const sql::EmbeddedSql* report = name.rfind('_', 0) == 0 ? nullptr : find_sql(name);
  if (!report) {
    std::string names;
    for (const auto& n : fleet_report_names()) names += (names.empty() ? "" : ", ") + n;
    return make_error("no report '" + name + "' on ClickHouse", "these run there: " + names, 2);
  }
  // The GPU times: joined where the database has them (copies through
  // copies.copy_id, a column added since), else none, as for a capture
  // recorded without --gpu-time.
  std::map<std::string, std::string> instead;
  if (!db.gpu_times) instead["_kern_gpu_times"] = "_kern_gpu_times_none";
  if (!db.gpu_times || !db.copy_ids) instead["_copies_timed"] = "_copies_untimed";
  return expand(report->text, instead);
}

Result<QueryResult> run_fleet_report(const ClickHouse& ch, const std::string& name, const FleetFilter& f) {
  if (auto v = check_schema(ch); !v) return v.error();
  // The tables and columns a report reads beyond the first shipped ones:
  // a database made before them says how to add them.
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
  if (!find_sql(name) || name.rfind('_', 0) == 0) return fleet_report_sql(name, {}).error();
  auto tables = fleet_tables(ch);
  if (!tables) return tables.error();
  FleetDatabase db;
  db.gpu_times = tables->count("gpu_times") > 0;
  if (db.gpu_times && (name == "copy_sum" || name == "memset_sum")) {
    auto cols = table_columns(ch, "copies");
    if (!cols) return cols.error();
    db.copy_ids = cols->count("copy_id") > 0;
  }
  auto sql = fleet_report_sql(name, db);
  if (!sql) return sql.error();
  std::vector<ExternalTable> bound{filter_table(f)};
  if (name == "gpu_sum") bound.push_back(catalogue_table());
  auto body = ch.query(*sql + "\nFORMAT TabSeparatedWithNamesAndTypes", bound);
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
