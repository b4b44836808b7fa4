// gpuobs report NAME FILE: the SQL in schema/reports/NAME.sql over a capture.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/split.h"
#include "common/terminal_text.h"
#include "report/query.h"
#include "report/report_catalogue.h"
#include "store/schema.h"

namespace gpuobs::cli {

// The oldest capture schema the reports read (issue 17: a capture written before
// the compact launch tables still reports).
constexpr int kOldestReportedSchema = 10;

namespace {

// --list: name, description, columns and filters of every report.
int list_reports(OutputFormat fmt) {
  auto all = report_catalogue();
  if (!all) {
    print_error("gpuobs report", all.error());
    return 1;
  }
  auto joined = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
  };
  QueryResult r;
  r.columns = {"report", "description", "columns", "filters"};
  for (const auto& info : *all)
    r.rows.push_back({info.name, info.description, joined(info.columns), joined(info.filters)});
  print_result(r, fmt, std::cout);
  return 0;
}

// One report over one open capture.
Result<QueryResult> one_report(Db& db, const std::string& name, const Params& params) {
  auto sql = report_sql(name);
  if (!sql) return sql.error();
  // Each report says which filters it takes (schema/reports/NAME.sql header).
  for (const auto& f : kReportFilters)
    if (params.count(f.param) && sql->find(std::string(":") + f.param) == std::string_view::npos)
      return make_error("report " + name + " does not take " + f.flag,
                        "gpuobs report --list shows the filters each report takes", 2);
  return run_query(db, *sql, params);
}

// The replay reports read tables only `gpuobs replay FILE` writes: on a
// capture it has not replayed they print no rows, so say why on stderr (the
// rows on stdout stay what the query gave). A capture replayed by a gpuobs
// older than schema 21 has the replay but not its idle-time tables.
void note_missing_replay(Db& db, const std::string& file, const std::vector<std::string>& names) {
  bool replay = false, idle = false, exec = false;
  for (const auto& n : names) {
    auto sql = report_sql(n);
    if (!sql) continue;
    bool e = sql->find("FROM replay_exec_") != std::string_view::npos;
    exec = exec || e;
    replay = replay || (!e && sql->find("FROM replay_") != std::string_view::npos);
    idle = idle || sql->find("replay_idle_") != std::string_view::npos;
  }
  std::string why, how = "gpuobs replay " + file;
  if (exec) {  // replay_exec_sum: written by --execute on a host with a GPU
    auto runs = db.scalar("SELECT count(*) FROM replay_exec_runs");
    if (!runs || *runs == 0) {
      why = file + " has not been re-executed: replay_exec_* is empty until gpuobs replay --execute writes it";
      how += " --execute (on the host with the GPU)";
    }
  }
  if (replay && why.empty()) {
    auto runs = db.scalar("SELECT count(*) FROM replay_runs");
    auto version = db.scalar("PRAGMA user_version");
    if (!runs || *runs == 0)
      why = file + " has not been replayed: the replay tables are empty until gpuobs replay writes them";
    else if (idle && version && *version < 21)
      why = file + " was replayed by an older gpuobs: it has no idle-time tables (schema 21)";
  }
  if (why.empty()) return;
  std::fprintf(stderr, "gpuobs report: note: %s\nhint: run %s first (docs/replay.md)\n", terminal_safe(why).c_str(),
               terminal_safe(how).c_str());
}

}  // namespace

int run_report(const ReportArgs& a) {
  auto fmt = parse_format(a.format);
  if (!fmt) {
    print_error("gpuobs report", fmt.error());
    return 2;
  }
  std::string unit_suffix;
  auto divisor = time_unit_divisor(a.timeunit.empty() ? "ns" : a.timeunit, &unit_suffix);
  if (!divisor) {
    print_error("gpuobs report", divisor.error());
    return 2;
  }
  if (a.list) return list_reports(*fmt);
  // "a,b,c" runs several, like nsys stats -r: every name checked first.
  std::vector<std::string> names = split_list(a.name, ',');
  for (const auto& n : names)
    if (auto sql = report_sql(n); !sql) {
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
  std::vector<QueryResult> results;
  std::optional<Error> failed;
  {
    Progress progress("gpuobs report " + a.name);  // a report over a big capture can take seconds
    for (const auto& n : names) {
      auto res = one_report(*db, n, params);
      if (!res) {
        failed = res.error();  // printed once the progress line is erased
        break;
      }
      results.push_back(std::move(*res));
    }
  }
  if (failed) {
    print_error("gpuobs report", *failed);
    return failed->exit_code;
  }
  note_missing_replay(*db, file, names);
  for (auto& r : results) {
    if (a.timeunit.empty() && *fmt == OutputFormat::table) convert_time_units_for_reading(r);
    else convert_time_unit(r, *divisor, unit_suffix);
  }
  if (names.size() == 1) {
    print_result(results[0], *fmt, std::cout);
    return 0;
  }
  // Several: JSON is one object keyed by report; tables and CSV are headed
  // "== name ==", each CSV block with its own header row.
  if (*fmt == OutputFormat::json) {
    std::cout << "{";
    for (size_t i = 0; i < names.size(); ++i) {
      std::ostringstream one;
      print_result(results[i], OutputFormat::json, one);
      std::string body = one.str();
      while (!body.empty() && body.back() == '\n') body.pop_back();
      std::cout << (i ? ",\n" : "\n") << nlohmann::json(names[i]).dump() << ": " << body;
    }
    std::cout << "\n}\n";
    return 0;
  }
  for (size_t i = 0; i < names.size(); ++i) {
    std::cout << (i ? "\n" : "") << "== " << names[i] << " ==\n";
    print_result(results[i], *fmt, std::cout);
  }
  return 0;
}

}  // namespace gpuobs::cli
