// gpuobs diff BASE NEW: what changed between two runs (userspace/diff/, docs/diff.md).
#include <cmath>
#include <iostream>

#include "cli/commands.h"
#include "common/log.h"
#include "common/progress.h"
#include "daemon_state/segments.h"
#include "diff/diff_compare.h"
#include "diff/diff_fail_on.h"
#include "report/query.h"

namespace gpuobs::cli {

namespace {

Cell num(double v) {
  if (std::isnan(v)) return std::monostate{};
  if (std::isinf(v)) return std::string(v > 0 ? "inf" : "-inf");
  return v;
}

Cell rounded(double v, double scale) { return std::isfinite(v) ? Cell(std::round(v * scale) / scale) : num(v); }

QueryResult to_table(const diff::DiffResult& d, diff::Per per, bool all) {
  QueryResult r;
  r.columns = {"verdict", "measure",    "process",  "name",    "stream",    "unit",    "base",
               "new",     "change_pct", "base_p95", "new_p95", "base_p99",  "new_p99", "base_n",
               "new_n",   "p_value",    "q_value",  "effect",  "impact_ns", "stack"};
  for (const auto& row : d.rows) {
    if (!all && row.verdict == diff::Verdict::same) continue;
    r.rows.push_back({std::string(diff::to_string(row.verdict)),
                      std::string(diff::to_string(row.key.measure)),
                      row.key.process,
                      row.key.name,
                      row.key.stream,
                      diff::unit_of(row.key.measure, per),
                      rounded(row.base, 1000),
                      rounded(row.next, 1000),
                      rounded(row.change * 100, 10),
                      num(row.base_p95),
                      num(row.next_p95),
                      num(row.base_p99),
                      num(row.next_p99),
                      int64_t(row.base_n),
                      int64_t(row.next_n),
                      row.tested ? num(row.p) : Cell{},
                      row.tested ? num(row.q) : Cell{},
                      rounded(row.effect, 1000),
                      rounded(row.impact_ns, 1),
                      row.stack_text});
  }
  return r;
}

// The files of one side: a segment range, or the file given.
Result<std::vector<std::string>> side_files(const std::string& file, const std::string& segment,
                                            const std::string& state_dir) {
  if (!segment.empty()) return resolve_captures({}, segment, state_dir);
  return std::vector<std::string>{file};
}

std::string summary(const diff::DiffResult& d, const diff::CompareOptions& o) {
  char b[256];
  std::snprintf(b, sizeof b,
                "%llu regressed, %llu improved of %zu rows (%llu tested; q <= %g, |change| >= %g%%, |delta| >= %g, "
                "|impact| >= %g%%)",
                static_cast<unsigned long long>(d.regressed), static_cast<unsigned long long>(d.improved),
                d.rows.size(), static_cast<unsigned long long>(d.tested), o.alpha, o.min_change * 100, o.min_effect,
                o.min_impact * 100);
  std::string s = b;
  s += "; " + std::to_string(d.new_kernels.size()) + " new and " + std::to_string(d.vanished_kernels.size()) +
       " vanished kernels, " + std::to_string(d.new_stacks) + " new and " + std::to_string(d.vanished_stacks) +
       " vanished stacks";
  return s;
}

}  // namespace

int run_diff(const DiffArgs& a) {
  auto fmt = parse_format(a.format);
  if (!fmt) {
    print_error("gpuobs diff", fmt.error());
    return 2;
  }
  std::string unit_suffix;
  auto divisor = time_unit_divisor(a.timeunit.empty() ? "ns" : a.timeunit, &unit_suffix);
  if (!divisor) {
    print_error("gpuobs diff", divisor.error());
    return 2;
  }
  auto usage = [](const std::string& msg, const std::string& hint) {
    print_error("gpuobs diff", make_error(msg, hint, 2));
    return 2;
  };
  // Which two sides: two files, two segment ranges, or two windows of one file.
  std::string base_file, new_file;
  bool segments = !a.base_segment.empty() || !a.segment.empty();
  if (segments) {
    if (a.base_segment.empty() || a.segment.empty())
      return usage("--base-segment and --segment go together", "gpuobs diff --base-segment 3..5 --segment 9..11");
    if (!a.files.empty()) return usage("give segments or files, not both", "gpuobs segments lists the segments");
  } else if (a.files.size() == 2) {
    base_file = a.files[0];
    new_file = a.files[1];
  } else if (a.files.size() == 1) {
    base_file = new_file = a.files[0];
    if (a.base_since_s < 0 && a.base_until_s < 0 && a.since_s < 0 && a.until_s < 0)
      return usage("one capture and no windows: it would be compared with itself",
                   "give two windows of it (--base-since/--base-until and --since/--until), or two captures");
  } else {
    return usage("gpuobs diff needs BASE and NEW captures",
                 "gpuobs diff BASE NEW, gpuobs diff FILE --base-until 60 --since 60, or "
                 "gpuobs diff --base-segment A..B --segment C..D");
  }
  diff::CompareOptions opt;
  if (a.per == "run") opt.per = diff::Per::run;
  else if (a.per == "second") opt.per = diff::Per::second;
  else if (a.per == "step") opt.per = diff::Per::step;
  else return usage("--per " + a.per + ": expected run, second or step", "");
  diff::Filters filters;
  filters.pid = a.pid;
  filters.process = a.process;
  filters.kernel = a.kernel;
  filters.stacks = !a.no_stacks;
  filters.step_kernel = a.step_kernel;
  filters.step_api = a.step_api;
  if (opt.per == diff::Per::step && a.step_kernel.empty() && a.step_api.empty())
    return usage("--per step needs a step marker", "--step-kernel NAME or --step-api NAME: called once per step");
  if (!a.step_kernel.empty() && !a.step_api.empty()) return usage("give one step marker", "");
  opt.alpha = a.alpha;
  opt.min_change = a.min_change_pct / 100;
  opt.min_effect = a.min_effect;
  opt.min_impact = a.min_impact_pct / 100;
  std::vector<diff::Threshold> thresholds;
  if (!a.fail_on.empty()) {
    auto t = diff::parse_fail_on(a.fail_on);
    if (!t) {
      print_error("gpuobs diff", t.error());
      return 2;
    }
    thresholds = std::move(*t);
  }
  auto base_files = side_files(base_file, a.base_segment, a.state_dir);
  if (!base_files) {
    print_error("gpuobs diff", base_files.error());
    return base_files.error().exit_code;
  }
  auto new_files = side_files(new_file, a.segment, a.state_dir);
  if (!new_files) {
    print_error("gpuobs diff", new_files.error());
    return new_files.error().exit_code;
  }
  Result<diff::DiffResult> d = make_error("not run");
  {
    Progress progress("gpuobs diff");
    auto base = diff::read_side(diff::WindowSpec{*base_files, a.base_since_s, a.base_until_s}, filters);
    if (!base) {
      print_error("gpuobs diff", base.error());
      return base.error().exit_code;
    }
    auto next = diff::read_side(diff::WindowSpec{*new_files, a.since_s, a.until_s}, filters);
    if (!next) {
      print_error("gpuobs diff", next.error());
      return next.error().exit_code;
    }
    d = diff::compare(*base, *next, opt);
  }
  if (!d) {
    print_error("gpuobs diff", d.error());
    return d.error().exit_code;
  }
  for (const auto& n : d->notes) std::cerr << "gpuobs diff: note: " << n << "\n";
  auto table = to_table(*d, opt.per, a.all);
  if (a.timeunit.empty()) {
    if (*fmt == OutputFormat::table) convert_time_units_for_reading(table);
  } else {
    convert_time_unit(table, *divisor, unit_suffix);
  }
  print_result(table, *fmt, std::cout);
  std::cout.flush();
  // One verdict line on stderr: what a CI log shows.
  if (thresholds.empty()) {
    std::cerr << "gpuobs diff: " << summary(*d, opt) << "\n";
    return 0;
  }
  auto breaches = diff::evaluate(thresholds, *d);
  if (breaches.empty()) {
    std::cerr << "gpuobs diff: PASS (" << thresholds.size() << " thresholds): " << summary(*d, opt) << "\n";
    return 0;
  }
  std::cerr << "gpuobs diff: FAIL (" << breaches.size() << " of " << thresholds.size() << " thresholds):";
  for (size_t i = 0; i < breaches.size(); ++i)
    std::cerr << (i ? ";" : "") << " " << breaches[i].threshold << ": " << breaches[i].detail;
  std::cerr << "\n";
  return 1;
}

}  // namespace gpuobs::cli
