// The report catalogue on ClickHouse: the same columns, in the same order
// and of the same kinds as the local reports (schema/reports/NAME.sql), over
// every shipped host or one (--host), in a wall-clock window. One SQL per
// engine where the dialects differ (ClickHouse 18.16 has no window
// functions): medians as the mean of the middle two of the sorted values,
// standard deviations in two passes, rounding half away from zero, as
// SQLite does; tests/integration/fleet_test.cpp runs both and compares.
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

std::vector<std::string> fleet_report_names();
Result<QueryResult> run_fleet_report(const ClickHouse& ch, const std::string& name, const FleetFilter& f);

}  // namespace gpuobs::fleet
