// The SQL in schema/ (migrations, report queries and the fleet's reports), embedded at build time
// by schema/embed_sql.cmake.
#pragma once

#include <string_view>
#include <vector>

namespace gpuobs::sql {

struct EmbeddedSql {
  std::string_view name;  // file name without .sql, e.g. "001_initial", "launches"
  std::string_view text;
};

const std::vector<EmbeddedSql>& migrations();  // sorted by name = by version
const std::vector<EmbeddedSql>& reports();
// schema/fleet_reports/*.sql: the fleet's reports in ClickHouse's dialect
// (NAME) and the pieces they include (_name), sorted by name.
const std::vector<EmbeddedSql>& fleet_reports();

}  // namespace gpuobs::sql
