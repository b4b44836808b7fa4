// gpuobs report NAME FILE: the SQL in schema/reports/NAME.sql over a capture.
#include <iostream>

#include "cli/commands.h"
#include "common/log.h"
#include "report/query.h"
#include "store/schema.h"

namespace gpuobs::cli {

// The oldest capture schema the reports read (issue 17: a capture written before
// the compact launch tables still reports).
constexpr int kOldestReportedSchema = 10;

int run_report(const ReportArgs& a) {
  if (a.list) {
    for (const auto& n : report_names()) std::cout << n << "\n";
    return 0;
  }
  auto fmt = parse_format(a.format);
  if (!fmt) {
    print_error("gpuobs report", fmt.error());
    return 2;
  }
  auto sql = report_sql(a.name);
  if (!sql) {
    print_error("gpuobs report", sql.error());
    return 2;
  }
  std::string file = a.file.empty() ? kDaemonCapture : a.file;
  auto db = open_capture_readonly(file);
  if (!db) {
    Error e = db.error();
    if (a.file.empty())
      e.hint = "no file given, and gpuobsd's capture is not readable: gpuobs report " + a.name + " FILE";
    print_error("gpuobs report", e);
    return e.exit_code;
  }
  // Reports read the documented tables and views, which schema 10 and later
  // have (an older capture's later columns read as NULL: store/schema.cpp).
  if (auto v = db->scalar("PRAGMA user_version"); v && *v < kOldestReportedSchema) {
    print_error("gpuobs report",
                make_error(file + " has schema version " + std::to_string(*v) + "; the reports of this gpuobs read " +
                               std::to_string(kOldestReportedSchema) + " and later",
                           "gpuobs upgrade " + file +
                               " (converts it in place; copy it first to keep the original), "
                               "or query it as it is with gpuobs sql (docs/schema.md)",
                           2));
    return 2;
  }
  Params params;
  if (a.pid) params["pid"] = a.pid;
  if (!a.process.empty()) params["process"] = a.process;
  if (a.since_s >= 0) params["since_s"] = a.since_s;
  if (a.until_s >= 0) params["until_s"] = a.until_s;
  // Each report says which filters it takes (schema/reports/NAME.sql header).
  const std::pair<const char*, const char*> flags[] = {
      {"pid", "--pid"}, {"process", "--process"}, {"since_s", "--since"}, {"until_s", "--until"}};
  for (auto [param, flag] : flags)
    if (params.count(param) && sql->find(std::string(":") + param) == std::string_view::npos) {
      print_error("gpuobs report", make_error("report " + a.name + " does not take " + flag, "", 2));
      return 2;
    }
  auto res = run_query(*db, *sql, params);
  if (!res) {
    print_error("gpuobs report", res.error());
    return res.error().exit_code;
  }
  print_result(*res, *fmt, std::cout);
  return 0;
}

}  // namespace gpuobs::cli
