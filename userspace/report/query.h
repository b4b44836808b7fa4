// Run a read-only query and print its result as a table, JSON or CSV. Every
// read command uses these, so every command takes the same --format.
#pragma once

#include <cstdint>
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
Result<QueryResult> run_query(Db& db, std::string_view sql);
void print_result(const QueryResult& r, OutputFormat f, std::ostream& out);

// Report SQL embedded from schema/reports/NAME.sql.
std::vector<std::string> report_names();
Result<std::string_view> report_sql(std::string_view name);

}  // namespace gpuobs
