// gpuobs report NAME FILE: the SQL in schema/reports/NAME.sql over a capture.
#include <iostream>

#include "cli/commands.h"
#include "common/log.h"
#include "report/query.h"
#include "store/schema.h"

namespace gpuobs::cli {

int run_report(const ReportArgs& a) {
  if (a.list) {
    for (const auto& n : report_names()) std::cout << n << "\n";
    return 0;
  }
  auto fmt = parse_format(a.format);
  if (!fmt) { print_error("gpuobs report", fmt.error()); return 2; }
  auto sql = report_sql(a.name);
  if (!sql) { print_error("gpuobs report", sql.error()); return 2; }
  if (a.file.empty()) {
    print_error("gpuobs report", make_error("no capture file given", "gpuobs report " + a.name + " FILE"));
    return 2;
  }
  auto db = open_capture_readonly(a.file);
  if (!db) { print_error("gpuobs report", db.error()); return db.error().exit_code; }
  auto res = run_query(*db, *sql);
  if (!res) { print_error("gpuobs report", res.error()); return res.error().exit_code; }
  print_result(*res, *fmt, std::cout);
  return 0;
}

}  // namespace gpuobs::cli
