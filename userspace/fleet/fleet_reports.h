// The report catalogue on ClickHouse: the same columns, in the same order
// and of the same kinds as the local reports (schema/reports/NAME.sql), over
// every shipped host or one (--host), in a wall-clock window. Each report's
// SQL is schema/fleet_reports/NAME.sql, in ClickHouse 18.16's dialect (no
// window functions: medians as the mean of the middle two of the sorted
// values, standard deviations in two passes; rounded half away from zero
// by SQLite afterwards, as the local reports round), with the pieces it
// shares as _name.sql files it includes by {{_name}}; embedded at build
// time. The filter's values are never in the SQL: they are sent beside it
// as the one-row table `filter` (ClickHouse's external data; 18.16 has no
// query parameters). tests/integration/fleet_test.cpp runs both engines
// and compares.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "fleet/clickhouse_client.h"
#include "report/query.h"

namespace gpuobs::fleet {

struct FleetFilter {
  std::string host;                        // empty: every host
  std::optional<int64_t> pid;              // on one host, with --host
  std::string process;                     // comm
  std::optional<double> since_s, until_s;  // Unix seconds
};

// What a report's SQL depends on in the database (older ones lack them).
struct FleetDatabase {
  bool gpu_times = true;  // the gpu_times table
  bool copy_ids = true;   // copies.copy_id
};

std::vector<std::string> fleet_report_names();  // schema/fleet_reports/NAME.sql, sorted
// The statement run_fleet_report sends (before its FORMAT): the report's
// file with its pieces in place; the same text whatever the filter.
Result<std::string> fleet_report_sql(const std::string& name, const FleetDatabase& db = {});
Result<QueryResult> run_fleet_report(const ClickHouse& ch, const std::string& name, const FleetFilter& f);

}  // namespace gpuobs::fleet
