// gpuobs sql "SELECT ..." [FILE] [-p name=value]: the user's own query over
// a capture, read-only by construction: the file is opened read-only with
// query_only set, so no statement can change it.
#include <iostream>

#include "cli/commands.h"
#include "common/log.h"
#include "common/progress.h"
#include "report/query.h"
#include "store/schema.h"

namespace gpuobs::cli {

int run_sql(const SqlArgs& a) {
  auto fmt = parse_format(a.format);
  if (!fmt) {
    print_error("gpuobs sql", fmt.error());
    return 2;
  }
  Params params;
  for (const auto& p : a.params) {
    size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0) {
      print_error("gpuobs sql", make_error("bad parameter '" + p + "'", "use -p name=value (the query says :name)", 2));
      return 2;
    }
    params[p.substr(0, eq)] = parse_param_value(p.substr(eq + 1));
  }
  std::string file = a.file.empty() ? kDaemonCapture : a.file;
  auto db = open_capture_readonly(file);
  if (!db) {
    Error e = db.error();
    if (a.file.empty()) e.hint = "no file given, and gpuobsd's capture is not readable: gpuobs sql QUERY FILE";
    print_error("gpuobs sql", e);
    return e.exit_code;
  }
  auto res = [&] {
    Progress progress("gpuobs sql");  // erased before the result or an error is printed
    return run_query(*db, a.query, params, ParamPolicy::all_given);
  }();
  if (!res) {
    print_error("gpuobs sql", res.error());
    return res.error().exit_code;
  }
  print_result(*res, *fmt, std::cout);
  return 0;
}

}  // namespace gpuobs::cli
