// What `gpuobs report --list` prints: each report's one-line description
// (the first sentence of its SQL file's header), the columns it returns (its
// statement prepared against this build's schema, so the list cannot drift
// from the SQL) and the filters it takes (the parameters its SQL names).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace gpuobs {

struct ReportInfo {
  std::string name;
  std::string description;
  std::vector<std::string> columns;
  std::vector<std::string> filters;  // command-line flags: --pid, --process, --since, --until
};

Result<std::vector<ReportInfo>> report_catalogue();

// The filters a report's SQL takes, as (parameter, flag) pairs, in the order
// the command line documents them.
struct ReportFilter {
  const char* param;
  const char* flag;
};
inline constexpr ReportFilter kReportFilters[] = {
    {"pid", "--pid"}, {"process", "--process"}, {"since_s", "--since"}, {"until_s", "--until"}};

// First sentence of the header comment ("-- name: text. More text.").
std::string report_description(std::string_view sql);

}  // namespace gpuobs
