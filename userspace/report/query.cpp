#include "report/query.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "common/short_name.h"
#include "common/terminal_text.h"
#include "store/embedded_sql.h"
#include "store/schema.h"

namespace gpuobs {
namespace {

// A real as plain decimal digits, 12 significant, trailing zeros cut: never
// scientific notation, which spreadsheets and awk read as text or as 1
// (issue 20). NaN and infinities (SQLite has none) would print as words.
// d (finite, nonzero) with decimals digits after the point, trailing zeros cut.
std::string fixed_text(double d, int decimals) {
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, d);
  std::string t(buf);
  if (t.find('.') != std::string::npos) {
    while (t.back() == '0') t.pop_back();
    if (t.back() == '.') t.pop_back();
  }
  return t == "-0" ? "0" : t;
}

// The order of magnitude of a finite, nonzero d: 2 for 156.7, -7 for 1.2e-7.
int magnitude_of(double d) { return static_cast<int>(std::floor(std::log10(std::fabs(d)))); }

std::string decimal_text(double d) {
  if (!std::isfinite(d)) return std::isnan(d) ? "nan" : (d > 0 ? "inf" : "-inf");
  if (d == 0) return "0";
  return fixed_text(d, std::clamp(11 - magnitude_of(d), 0, 30));
}

std::string cell_text(const Cell& c) {
  if (std::holds_alternative<std::monostate>(c)) return "";
  if (auto* i = std::get_if<int64_t>(&c)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&c)) return decimal_text(*d);
  return std::get<std::string>(c);
}

// CSV is read on terminals as often as by programs (`gpuobs report X
// --format csv | head`): traced names are made inert as in tables
// (common/terminal_text.h), so an ESC in a kernel name prints as \e. JSON
// keeps every byte (its own escapes are inert).
std::string csv_escape(const std::string& raw) {
  const std::string s = terminal_safe(raw);
  // A bare CR ends a record for RFC 4180 readers too: a traced name holding
  // one must not split its row.
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Tables cut long text (demangled C++ kernel names run past 1,000 characters);
// json and csv keep every character.
constexpr size_t kTableCellMax = 96;
// A column shrunk to fit the terminal keeps at least this much.
constexpr size_t kTableColumnMin = 8;

TableLayout g_table_layout;

// Text cut to at most w bytes, "..." marking the cut, never inside a UTF-8
// sequence.
std::string cut_to(std::string t, size_t w) {
  if (t.size() <= w) return t;
  if (w <= 3) return t.substr(0, w);
  size_t cut = w - 3;
  while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;
  return t.substr(0, cut) + "...";
}

// Tables go to terminals: control characters in traced names are escaped
// (common/terminal_text.h).
// Seconds (timestamps t_s, first_s, and durations shown in s): to the
// millisecond, whatever their size; other numbers to 4 significant digits.
// How a column's cells print in tables and CSV.
struct ColumnStyle {
  bool seconds = false;  // *_s: to the millisecond (tables)
  bool fold = false;     // a name column, with TableLayout::fold_names: common/short_name.h
};

std::string table_text(const Cell& c, const ColumnStyle& style) {
  std::string t;
  if (auto* d = std::get_if<double>(&c)) {
    if (style.seconds && std::isfinite(*d)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f", *d);
      t = buf;
    } else {
      t = table_number_text(*d);
    }
  } else if (auto* text = std::get_if<std::string>(&c); text && style.fold) {
    t = terminal_safe(short_name(*text));
  } else {
    t = terminal_safe(cell_text(c));
  }
  return g_table_layout.cut_cells ? cut_to(std::move(t), kTableCellMax) : t;
}

// Narrows the widest text columns, one byte at a time, until the row fits in
// max_width. A column is never narrowed below its widest number (a cut
// number would be a wrong number, also in a column that mixes numbers and
// text, as report capture's value does) nor below kTableColumnMin.
void fit_widths(std::vector<size_t>& width, const std::vector<size_t>& floor, size_t max_width) {
  size_t total = 2 * (width.empty() ? 0 : width.size() - 1);
  for (size_t w : width) total += w;
  while (total > max_width) {
    size_t widest = width.size();
    for (size_t i = 0; i < width.size(); ++i)
      if (width[i] > std::max(kTableColumnMin, floor[i]) && (widest == width.size() || width[i] > width[widest]))
        widest = i;
    if (widest == width.size()) return;  // nothing left to narrow: the row stays wider
    --width[widest];
    --total;
  }
}

// The columns that hold demangled function names.
bool is_name_column(const std::string& c) {
  static const char* kNames[] = {"kernel", "kernel_name", "name", "symbol", "call_site", "function", "leaf", "site"};
  for (const char* n : kNames)
    if (c == n) return true;
  return false;
}

// Each column's style: seconds by name, names folded unless --full-names.
std::vector<ColumnStyle> column_styles(const QueryResult& r) {
  std::vector<ColumnStyle> out(r.columns.size());
  for (size_t i = 0; i < r.columns.size(); ++i) {
    out[i].seconds = r.columns[i].ends_with("_s");
    out[i].fold = g_table_layout.fold_names && is_name_column(r.columns[i]);
  }
  return out;
}

}  // namespace

std::string table_number_text(double d) {
  if (!std::isfinite(d)) return std::isnan(d) ? "nan" : (d > 0 ? "inf" : "-inf");
  if (d == 0) return "0";
  const int magnitude = magnitude_of(d);
  // p-values and other small fractions: 3 significant digits, as a plain
  // decimal (never scientific: "1e-07" reads as text in a spreadsheet).
  return fixed_text(d, std::fabs(d) < 1e-3 ? std::min(2 - magnitude, 15) : std::clamp(3 - magnitude, 0, 6));
}

Result<OutputFormat> parse_format(std::string_view s) {
  if (s == "table") return OutputFormat::table;
  if (s == "json") return OutputFormat::json;
  if (s == "csv") return OutputFormat::csv;
  return make_error("unknown format '" + std::string(s) + "'", "use table, json or csv", 2);
}

Cell parse_param_value(const std::string& v) {
  char* end = nullptr;
  errno = 0;
  // Handles are written in hex: 0x... stays an exact integer.
  bool hex = v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
  long long i = std::strtoll(v.c_str(), &end, hex ? 16 : 10);
  if (!v.empty() && *end == '\0' && errno == 0) return int64_t{i};
  if (!hex) {
    double d = std::strtod(v.c_str(), &end);
    if (!v.empty() && *end == '\0' && std::isfinite(d)) return d;
  }
  return v;
}

Result<QueryResult> run_query(Db& db, std::string_view sql, const Params& params, ParamPolicy policy) {
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  if (sqlite3_prepare_v2(db.get(), sql.data(), static_cast<int>(sql.size()), &raw, &tail) != SQLITE_OK) {
    sqlite3_finalize(raw);
    return capture_error(db.get(), "query failed");
  }
  if (!raw) return make_error("the query is empty", "", 2);
  Stmt st(raw);
  // One statement only: what follows it would silently not run. (Comments
  // and semicolons after it prepare to nothing.)
  if (tail && tail < sql.data() + sql.size()) {
    sqlite3_stmt* next = nullptr;
    int rc = sqlite3_prepare_v2(db.get(), tail, static_cast<int>(sql.data() + sql.size() - tail), &next, nullptr);
    // A second statement that does not even prepare (a DELETE on a view) is
    // still a second statement.
    bool more = next != nullptr || rc != SQLITE_OK;
    sqlite3_finalize(next);
    if (more) return make_error("only one SQL statement can run at a time", "split the statements", 2);
  }
  // Read-only by construction, twice: the connection is read-only, and a
  // statement that would write (VACUUM INTO, PRAGMA query_only = 0) is refused
  // before it runs.
  if (!sqlite3_stmt_readonly(raw))
    return make_error("only statements that read can run", "this is a read-only view of the capture", 2);
  for (const auto& [name, value] : params) {
    int i = 0;
    for (const char* prefix : {":", "@", "$"})
      if (!i) i = sqlite3_bind_parameter_index(raw, (prefix + name).c_str());
    if (!i) return make_error("the query has no parameter :" + name, "", 2);
    if (auto* v = std::get_if<int64_t>(&value)) sqlite3_bind_int64(raw, i, *v);
    else if (auto* d = std::get_if<double>(&value)) sqlite3_bind_double(raw, i, *d);
    else if (auto* t = std::get_if<std::string>(&value)) sqlite3_bind_text(raw, i, t->c_str(), -1, SQLITE_TRANSIENT);
  }
  if (policy == ParamPolicy::all_given) {
    std::string missing, example;
    for (int i = 1; i <= sqlite3_bind_parameter_count(raw); ++i) {
      const char* name = sqlite3_bind_parameter_name(raw, i);
      if (!name)
        return make_error("the query has a positional parameter (?)", "name it (:name) and pass -p name=VALUE", 2);
      if (params.count(name + 1)) continue;
      missing += std::string(missing.empty() ? "" : ", ") + name;
      example += std::string(" -p ") + (name + 1) + "=VALUE";
    }
    if (!missing.empty()) return make_error("no value for " + missing, "pass" + example, 2);
  }
  QueryResult r;
  int n = sqlite3_column_count(st.get());
  for (int i = 0; i < n; ++i) r.columns.emplace_back(sqlite3_column_name(st.get(), i));
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    std::vector<Cell> row;
    for (int i = 0; i < n; ++i) {
      switch (sqlite3_column_type(st.get(), i)) {
        case SQLITE_INTEGER: row.emplace_back(int64_t{sqlite3_column_int64(st.get(), i)}); break;
        case SQLITE_FLOAT: row.emplace_back(sqlite3_column_double(st.get(), i)); break;
        case SQLITE_NULL: row.emplace_back(std::monostate{}); break;
        default:
          row.emplace_back(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), i)),
                                       static_cast<size_t>(sqlite3_column_bytes(st.get(), i))));
      }
    }
    r.rows.push_back(std::move(row));
  }
  // Corruption met half-way is an error, never a short result.
  if (rc != SQLITE_DONE) return capture_error(db.get(), "query failed");
  return r;
}

void print_result(const QueryResult& r, OutputFormat f, std::ostream& out) {
  if (f == OutputFormat::json) {
    // Raw numbers: integers stay integers, NULL is null. A repeated column
    // name (SELECT a.id, b.id) gets a suffix rather than hiding the first.
    std::vector<std::string> keys;
    for (const auto& c : r.columns) {
      std::string k = c;
      for (int n = 1; std::find(keys.begin(), keys.end(), k) != keys.end(); ++n) k = c + ":" + std::to_string(n);
      keys.push_back(k);
    }
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& row : r.rows) {
      nlohmann::json o = nlohmann::json::object();
      for (size_t i = 0; i < row.size(); ++i) {
        const Cell& c = row[i];
        if (std::holds_alternative<std::monostate>(c)) o[keys[i]] = nullptr;
        else if (auto* v = std::get_if<int64_t>(&c)) o[keys[i]] = *v;
        else if (auto* d = std::get_if<double>(&c)) o[keys[i]] = *d;
        else o[keys[i]] = std::get<std::string>(c);
      }
      arr.push_back(std::move(o));
    }
    out << arr.dump(2) << "\n";
    return;
  }
  const std::vector<ColumnStyle> style = column_styles(r);
  if (f == OutputFormat::csv) {
    for (size_t i = 0; i < r.columns.size(); ++i) out << (i ? "," : "") << csv_escape(r.columns[i]);
    out << "\n";
    for (const auto& row : r.rows) {
      for (size_t i = 0; i < row.size(); ++i) {
        const auto* text = std::get_if<std::string>(&row[i]);
        out << (i ? "," : "") << csv_escape(text && style[i].fold ? short_name(*text) : cell_text(row[i]));
      }
      out << "\n";
    }
    return;
  }
  // Numbers are right-aligned, but only in columns holding nothing else.
  std::vector<bool> numeric(r.columns.size(), true);
  for (const auto& row : r.rows)
    for (size_t i = 0; i < row.size(); ++i) numeric[i] = numeric[i] && !std::holds_alternative<std::string>(row[i]);
  std::vector<size_t> width(r.columns.size());
  std::vector<std::string> heads;
  for (const auto& c : r.columns) heads.push_back(terminal_safe(c));
  for (size_t i = 0; i < r.columns.size(); ++i) width[i] = heads[i].size();
  for (const auto& row : r.rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], table_text(row[i], style[i]).size());
  std::vector<size_t> number_width(r.columns.size(), 0);  // the widest number of each column
  for (const auto& row : r.rows)
    for (size_t i = 0; i < row.size(); ++i)
      if (std::holds_alternative<int64_t>(row[i]) || std::holds_alternative<double>(row[i]))
        number_width[i] = std::max(number_width[i], table_text(row[i], style[i]).size());
  if (g_table_layout.max_width) fit_widths(width, number_width, g_table_layout.max_width);
  auto line = [&](auto get, auto right) {
    for (size_t i = 0; i < r.columns.size(); ++i) {
      std::string t = cut_to(get(i), width[i]);
      if (i) out << "  ";
      if (right(i)) out << std::string(width[i] - t.size(), ' ') << t;
      else out << t << (i + 1 < r.columns.size() ? std::string(width[i] - t.size(), ' ') : "");
    }
    out << "\n";
  };
  line([&](size_t i) { return heads[i]; }, [](size_t) { return false; });
  line([&](size_t i) { return std::string(width[i], '-'); }, [](size_t) { return false; });
  for (const auto& row : r.rows)
    line([&](size_t i) { return table_text(row[i], style[i]); },
         [&](size_t i) { return static_cast<bool>(numeric[i]); });
  if (r.rows.empty()) out << "(no rows)\n";
}

void set_table_layout(const TableLayout& layout) { g_table_layout = layout; }

Result<double> time_unit_divisor(std::string_view unit, std::string* suffix) {
  static const std::pair<std::string_view, std::pair<double, const char*>> kUnits[] = {
      {"ns", {1, "_ns"}},   {"nsec", {1, "_ns"}},   {"us", {1e3, "_us"}}, {"usec", {1e3, "_us"}},
      {"ms", {1e6, "_ms"}}, {"msec", {1e6, "_ms"}}, {"s", {1e9, "_s"}},   {"sec", {1e9, "_s"}}};
  for (const auto& [name, v] : kUnits)
    if (name == unit) {
      if (suffix) *suffix = v.second;
      return v.first;
    }
  return make_error("unknown time unit '" + std::string(unit) + "'", "use ns, us, ms or s (nsec, usec, msec, sec)", 2);
}

namespace {

// A duration column: *_ns, but not a timestamp (*_mono_ns).
bool is_duration_column(const std::string& c) { return c.ends_with("_ns") && !c.ends_with("_mono_ns"); }

// Column i divided by divisor and renamed *_ns -> *<suffix>.
void convert_column(QueryResult& r, size_t i, double divisor, const std::string& suffix) {
  std::string& c = r.columns[i];
  c = c.substr(0, c.size() - 3) + suffix;
  for (auto& row : r.rows) {
    if (auto* v = std::get_if<int64_t>(&row[i])) row[i] = static_cast<double>(*v) / divisor;
    else if (auto* d = std::get_if<double>(&row[i])) row[i] = *d / divisor;
  }
}

}  // namespace

// One unit for every duration column of a report (never total_ms beside
// avg_us): the one in which its typical value (the median of the nonzero
// durations) reads between 1 and 1000; the unit is in each column's name.
void convert_time_units_for_reading(QueryResult& r) {
  std::vector<double> values;
  for (size_t i = 0; i < r.columns.size(); ++i) {
    if (!is_duration_column(r.columns[i])) continue;
    for (const auto& row : r.rows) {
      double v = 0;
      if (auto* n = std::get_if<int64_t>(&row[i])) v = std::fabs(static_cast<double>(*n));
      else if (auto* d = std::get_if<double>(&row[i])) v = std::fabs(*d);
      if (v > 0) values.push_back(v);
    }
  }
  if (values.empty()) return;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
  const double typical = values[values.size() / 2];
  static const std::pair<double, const char*> kUnits[] = {{1e9, "_s"}, {1e6, "_ms"}, {1e3, "_us"}};
  for (const auto& [divisor, suffix] : kUnits)
    if (typical >= divisor) {
      for (size_t i = 0; i < r.columns.size(); ++i)
        if (is_duration_column(r.columns[i])) convert_column(r, i, divisor, suffix);
      return;
    }
}

void convert_time_unit(QueryResult& r, double divisor, const std::string& suffix) {
  if (divisor == 1) return;
  for (size_t i = 0; i < r.columns.size(); ++i)
    if (is_duration_column(r.columns[i])) convert_column(r, i, divisor, suffix);
}

std::vector<std::string> report_names() {
  std::vector<std::string> out;
  for (const auto& r : sql::reports()) out.emplace_back(r.name);
  return out;
}

Result<std::string_view> report_sql(std::string_view name) {
  for (const auto& r : sql::reports())
    if (r.name == name) return r.text;
  std::string known;
  for (const auto& n : report_names()) known += (known.empty() ? "" : ", ") + n;
  return make_error("unknown report '" + std::string(name) + "'", "reports: " + known, 2);
}

}  // namespace gpuobs
