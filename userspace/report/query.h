// Run a read-only query and print its result as a table, JSON or CSV. Every
// read command uses these, so every command takes the same --format.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"
#include "store/db.h"

namespace gpuobs {

using Cell = std::variant<std::monostate, int64_t, double, std::string>;

struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
};

enum class OutputFormat { table, json, csv };

Result<OutputFormat> parse_format(std::string_view s);
// Named parameters (:name, @name or $name in the SQL) by name without the
// prefix; a parameter not given is NULL, so `(:pid IS NULL OR tgid = :pid)`
// reads "every process" unless --pid is given. The same files run in a plain
// sqlite3 shell, where unset parameters are NULL too.
using Params = std::map<std::string, Cell>;
// Reports rely on that; a user's own query (gpuobs sql) passes
// ParamPolicy::all_given, so a parameter left without -p is an error rather
// than a NULL that silently matches nothing.
enum class ParamPolicy { unset_is_null, all_given };
Result<QueryResult> run_query(Db& db, std::string_view sql, const Params& params = {},
                              ParamPolicy policy = ParamPolicy::unset_is_null);
// A user's value for -p name=value: an integer, a real, or text.
Cell parse_param_value(const std::string& v);
void print_result(const QueryResult& r, OutputFormat f, std::ostream& out);

// Durations are nanoseconds in every report (columns named *_ns). A report's
// result in another unit, as nsys's --timeunit: every *_ns column but
// timestamps (*_mono_ns) divided and renamed (total_ns -> total_us).
// Units: ns, us, ms, s (also nsec, usec, msec, sec).
Result<double> time_unit_divisor(std::string_view unit, std::string* suffix);
void convert_time_unit(QueryResult& r, double divisor, const std::string& suffix);
// Tables without --timeunit: each *_ns column in the largest unit in which its
// largest value is at least 1 (434269 ns -> 434.269 us), renamed to match.
void convert_time_units_for_reading(QueryResult& r);
// Tables: a number as a person reads it (4 significant digits, integers whole).
std::string table_number_text(double d);

// How tables are laid out, for the whole process (the CLI sets it once from
// the terminal and --wide): cells cut at 96 characters unless cut_cells is
// off, and rows narrowed to max_width (0: no limit) by cutting the widest text
// columns, each marked "...". JSON and CSV are never cut.
struct TableLayout {
  size_t max_width = 0;
  bool cut_cells = true;
  // Tables and CSV: demangled names in name columns (kernel, name, symbol,
  // call_site, ...) folded by common/short_name.h; --full-names: false.
  bool fold_names = true;
};
void set_table_layout(const TableLayout& layout);

// Report SQL embedded from schema/reports/NAME.sql.
std::vector<std::string> report_names();
Result<std::string_view> report_sql(std::string_view name);

}  // namespace gpuobs
