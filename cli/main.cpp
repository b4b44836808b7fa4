// gpuobs: record a command's GPU activity, and query captures.
#include <sys/ioctl.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "capture/capture_options.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/number_checks.h"
#include "diff/diff_fail_on.h"
#include "report/query.h"
#include "version.h"

namespace {

using namespace gpuobs;

// Seconds since the capture started: a finite number >= 0 ("nan", "inf" and
// negative values would silently select nothing or everything).
const CLI::Validator kSeconds(
    [](std::string& v) -> std::string {
      try {
        size_t used = 0;
        double d = std::stod(v, &used);
        if (used == v.size() && std::isfinite(d) && d >= 0) return {};
      } catch (const std::exception&) {}
      return "'" + v + "' is not a number of seconds >= 0";
    },
    "SECONDS>=0");

// The terminal's width when standard output is one (its size, else
// $COLUMNS), or 0: output to a pipe or a file is never narrowed.
size_t terminal_columns() {
  if (!::isatty(STDOUT_FILENO)) return 0;
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* cols = std::getenv("COLUMNS")) return std::strtoul(cols, nullptr, 10);
  return 0;
}

// Every subcommand's arguments, as CLI11 fills them.
struct Args {
  std::string log_level = "warn";
  bool wide = false;        // report, sql: tables never cut
  bool full_names = false;  // report, sql, diff: demangled names not folded
  cli::RecordArgs rec;
  uint32_t ring_mb = kRingMbDefault;
  // Which captures: files, --segment in --state-dir, or gpuobsd's current segment.
  std::vector<std::string> files;
  std::string segment, state_dir = cli::kDaemonStateDir;
  cli::ReportArgs rep;
  cli::SqlArgs sq;
  cli::StackArgs stk, fold, ppf;
  cli::TimelineExportArgs pft, chr;
  cli::HtmlExportArgs html;
  cli::ReplayArgs rpl;
  cli::StatusArgs status_args;
  cli::SegmentsArgs seg_args;
  cli::CheckArgs check_args;
  cli::SummaryArgs summary_args;
  cli::UpgradeArgs upgrade_args;
  cli::DiffArgs diff_args;
  cli::FleetArgs ship_args, ch_args;
};

// The subcommands, to tell which one was given.
struct Commands {
  CLI::App *record = nullptr, *report = nullptr, *sql = nullptr, *stacks = nullptr, *folded = nullptr,
           *perfetto = nullptr, *chrome = nullptr, *pprof = nullptr, *replay = nullptr, *status = nullptr,
           *segs = nullptr, *check = nullptr, *upgrade = nullptr, *html = nullptr, *diff = nullptr, *ship = nullptr,
           *ch_init = nullptr, *summary = nullptr;
};

void add_record(CLI::App& app, Args& a, Commands& c) {
  auto* record = c.record =
      app.add_subcommand("record", "run a command and record its GPU activity and that of its children");
  record->add_option("-o,--output", a.rec.session.output,
                     "capture file to write (SQLite; default: gpuobs-COMMAND-YYYYMMDD-HHMMSS.gpuobs here)");
  record->add_flag("-f,--force", a.rec.session.force, "overwrite an existing output file");
  record->add_flag("--verbose", a.rec.verbose,
                   "the summary adds the library probes attached, process events, stacks and absent GPU metrics");
  // The options gpuobsd shares: one definition (capture/capture_options.h).
  // One exception in the defaults: a recording is a run being studied, so
  // GPM and per-process utilization come every 1 s, not the always-on daemon's 10 s.
  a.rec.session.detail_interval_ms = kRecordDetailIntervalMs;
  add_capture_options(
      *record,
      CaptureOptionFields{&a.rec.session.libcuda_paths, &a.rec.session.libhip_paths, &a.rec.session.device_specs,
                          &a.rec.session.gpu_devices, &a.ring_mb, &a.rec.session.stack_depth, &a.rec.session.unwind,
                          &a.rec.session.stack_copy_bytes, &a.rec.session.nccl_stall_s, &a.rec.session.python_stacks,
                          &a.rec.session.metrics_hz, &a.rec.session.detail_interval_ms,
                          &a.rec.session.python_main_thread},
      false);
  record->add_flag("--gpu-time", a.rec.gpu_time,
                   "also measure each kernel, copy and memset on the GPU: the command starts with CUPTI's activity "
                   "API injected (CUDA_INJECTION64_PATH), and the capture gets their GPU start and duration "
                   "(gpuobs report kern_sum, copy_sum; docs/gpu_time.md). Off: nothing is injected");
  record->footer("The command starts after -- or at the first word that is not an option.");
}

const char* add_capture_options(CLI::App* cmd, Args& a, const char* files_help) {
  cmd->add_option("--segment", a.segment,
                  "gpuobsd segments to read: N, all or FROM..TO (sequence numbers; `gpuobs segments` lists them)");
  cmd->add_option("--state-dir", a.state_dir, "gpuobsd's state directory")->capture_default_str();
  return files_help;
}

// report and sql: queries over one capture or several.
void add_queries(CLI::App& app, Args& a, Commands& c) {
  auto* report = c.report = app.add_subcommand("report", "print a report over a capture");
  report->add_flag("--list", a.rep.list, "list the reports: description, columns, filters");
  std::string names;
  for (const auto& n : report_names()) names += (names.empty() ? "" : ", ") + n;
  report->add_option("name", a.rep.name, "report, or several separated by commas (kern_sum,api_sum): " + names);
  report->add_option(
      "files", a.files,
      add_capture_options(
          report, a,
          "capture files (default: gpuobsd's current segment); with several, the report runs once per file, "
          "each headed by its path: sums are per segment"));
  report->add_option("--format", a.rep.format, "table, json or csv")->capture_default_str();
  report
      ->add_option("--timeunit", a.rep.timeunit,
                   "durations (the *_ns columns) in ns, us, ms or s, renamed to match (like nsys --timeunit); "
                   "default: ns in json and csv, in a table each column in the unit that reads best")
      ->capture_default_str();
  report->add_flag("--wide", a.wide, "tables: never cut a cell (default: fit the terminal, each cell at most 96)");
  report->add_flag("--full-names", a.full_names,
                   "tables and CSV: whole demangled names (default: templates and parameters folded to <...> and "
                   "(...), as nsys stats; JSON always has them whole)");
  report->add_option("--pid", a.rep.pid, "only this process id")->check(whole_number(1, kPidMaxLimit));
  report->add_option("--process", a.rep.process, "only processes with this name (comm)");
  report->add_option("--clickhouse", a.rep.clickhouse,
                     "run it in ClickHouse over the shipped hosts (URL as for gpuobs ship; reports: " +
                         cli::fleet_report_names() + "); --since/--until are then Unix seconds");
  report->add_option("--credentials", a.rep.credentials, "with --clickhouse: the credentials file");
  report->add_option("--host", a.rep.host, "with --clickhouse: only this host");
  report->add_option("--since", a.rep.since_s, "only activity from this many seconds after the capture started")
      ->check(kSeconds);
  report->add_option("--until", a.rep.until_s, "only activity up to this many seconds after the capture started")
      ->check(kSeconds);

  auto* sql = c.sql = app.add_subcommand("sql", "run a read-only SQL query over a capture (docs/schema.md)");
  sql->add_option("query", a.sq.query, "one SQL statement; :name parameters come from -p")->required();
  sql->add_option("files", a.files,
                  add_capture_options(
                      sql, a,
                      "capture files (default: gpuobsd's current segment); with several, the query runs once per file, "
                      "each result headed by its path"));
  sql->add_option("-p,--param", a.sq.params, "parameter name=value (repeatable)");
  sql->add_option("--format", a.sq.format, "table, json or csv")->capture_default_str();
  sql->add_flag("--wide", a.wide, "tables: never cut a cell (default: fit the terminal, each cell at most 96)");
  sql->add_flag("--full-names", a.full_names, "tables and CSV: whole demangled names (default: folded)");
}

// stacks and export: stacks weighted by a measure, and the timeline formats.
void add_stacks_and_exports(CLI::App& app, Args& a, Commands& c) {
  auto add_stack_options = [](CLI::App* cmd, cli::StackArgs& s) {
    cmd->add_option("file", s.file, "capture file (default: gpuobsd's current segment)");
    cmd->add_option("--by", s.by, "weight: launches, calls, copied, allocated, blocked (ns), ioctls")
        ->capture_default_str();
    cmd->add_option("--kernel", s.kernel, "only launches of kernels whose name contains this");
    cmd->add_option("--api", s.api, "only calls of this API (e.g. cuMemcpyHtoD_v2)");
    cmd->add_option("--pid", s.pid, "only this process id")->check(whole_number(1, kPidMaxLimit));
  };
  auto* stacks = c.stacks =
      app.add_subcommand("stacks", "the call stacks behind the most launches, bytes or blocked time");
  add_stack_options(stacks, a.stk);
  stacks->add_flag("--full-names", a.stk.full_names,
                   "whole demangled names (default: templates and parameters folded to <...> and (...))");
  stacks->add_option("--top", a.stk.top, "how many stacks (at least 1)")->check(whole_number(1))->capture_default_str();
  stacks->add_option("--format", a.stk.format, "table, json or csv (a row per frame)")->capture_default_str();

  auto* exp = app.add_subcommand("export", "write a capture in another format");
  exp->require_subcommand(1);
  auto* folded = c.folded =
      exp->add_subcommand("folded", "folded stacks (flamegraph.pl, speedscope): root;...;leaf weight");
  add_stack_options(folded, a.fold);
  folded->add_option("-o,--output", a.fold.output, "file to write (default: standard output)");
  folded->add_flag("-f,--force", a.fold.force, "replace an existing output file");
  folded->add_flag("--by-process", a.fold.by_process,
                   "root each stack at its process (COMM;pid N), so stacks of different processes never merge");

  auto* perfetto = c.perfetto = exp->add_subcommand("perfetto",
                                                    "Perfetto trace (ui.perfetto.dev): host calls per thread, replayed "
                                                    "GPU streams, flows, device memory and queue depth counters");
  perfetto->add_option("file", a.pft.file,
                       std::string("capture file (default: gpuobsd's, ") + cli::kDaemonCapture + ")");
  perfetto->add_option("-o,--output", a.pft.output, "trace file to write (.pftrace)")->required();
  perfetto->add_flag("-f,--force", a.pft.force, "replace an existing output file");
  auto* chrome = c.chrome = exp->add_subcommand("chrome", "the same timeline as Chrome JSON trace events");
  chrome->add_option("file", a.chr.file, std::string("capture file (default: gpuobsd's, ") + cli::kDaemonCapture + ")");
  chrome->add_option("-o,--output", a.chr.output, "JSON file to write")->required();
  chrome->add_flag("-f,--force", a.chr.force, "replace an existing output file");
  a.chr.chrome = true;
  auto* html = c.html = exp->add_subcommand(
      "html",
      "one self-contained HTML page (no network): summary, top tables, a flame graph of the stacks by measure "
      "(search, zoom) and the timeline of a window");
  html->add_option("file", a.html.file, std::string("capture file (default: gpuobsd's, ") + cli::kDaemonCapture + ")");
  html->add_option("-o,--output", a.html.output, "HTML file to write")->required();
  html->add_flag("-f,--force", a.html.force, "replace an existing output file");
  html->add_option("--since", a.html.since_s, "timeline from this many seconds after the capture started")
      ->check(kSeconds);
  html->add_option("--until", a.html.until_s, "timeline up to this many seconds after the capture started")
      ->check(kSeconds);
  auto* pprof = c.pprof =
      exp->add_subcommand("pprof",
                          "gzip-compressed pprof profile of the stacks, one sample type per measure "
                          "(--by picks the default)");
  add_stack_options(pprof, a.ppf);
  pprof->add_option("-o,--output", a.ppf.output, "profile file to write (.pb.gz)")->required();
  pprof->add_flag("-f,--force", a.ppf.force, "replace an existing output file");
  pprof->add_flag("--by-process", a.ppf.by_process,
                  "root each stack at its process (COMM, pid N frames; pid and comm labels)");
}

// replay, and what reads gpuobsd's state: status, segments; check.
void add_replay_status_check(CLI::App& app, Args& a, Commands& c) {
  auto* replay = c.replay = app.add_subcommand("replay",
                                               "rebuild the GPU queues, their ordering and hazards from a capture "
                                               "(writes the replay_* tables; docs/replay.md)");
  replay->add_option("file", a.rpl.file, "capture file")->required();
  replay->add_option("--format", a.rpl.format, "table, json or csv")->capture_default_str();
  replay->add_flag("--no-write", a.rpl.no_write, "only print: do not write the replay tables into the capture");
  replay->add_flag("--check", a.rpl.check,
                   "check the replay against the GPU times measured with record --gpu-time: every measured "
                   "kernel, copy and memset must lie inside its operation's window (exit 1 if one does not); "
                   "implies --no-write");
  replay->add_option("--schedule-out", a.rpl.schedule_out,
                     "write the capture's schedule (streams, each thread's calls in order with their host gaps, "
                     "each operation's GPU work; docs/replay.md \"Schedule\") as JSON to this file; implies "
                     "--no-write");
  replay->add_option("--chakra-out", a.rpl.chakra_out,
                     "write the same schedule as an MLCommons Chakra execution trace (protobuf nodes with "
                     "their stream and event dependencies, for simulators; docs/export.md \"Chakra\") to this file");
  replay->add_option("--pid", a.rpl.pid, "schedule: only this process");
  replay->add_option("--window", a.rpl.window, "schedule: only calls entered in FROM:TO, seconds after the start");
  replay->add_option("--speed", a.rpl.speed, "schedule: host gaps divided by this factor")->check(CLI::PositiveNumber);
  replay->add_flag("--no-host-gaps", a.rpl.no_host_gaps, "schedule, what if: the host issues each call at once");
  replay->add_flag("--drop-syncs", a.rpl.drop_syncs, "schedule, what if: every host synchronization removed");
  replay->add_option("--drop-sync", a.rpl.drop_sync,
                     "schedule, what if: this synchronization removed (its id in replay_observations)");
  replay->add_option("--merge", a.rpl.merge, "schedule, what if: queue FROM's work goes on queue INTO (FROM:INTO)");
  replay->add_flag("--execute", a.rpl.execute,
                   "run the schedule (with the part and edits above) on this host's GPU under gpuobs record and "
                   "compare each run with the original: per-stream busy time, end to end, idle split, launch gaps "
                   "(writes replay_exec_*; report replay_exec_sum; docs/replay.md \"Execute\")");
  replay->add_option("--runs", a.rpl.runs, "execute: this many runs (the summary gives medians)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  replay->add_option(
      "--exec-out", a.rpl.exec_out,
      "execute: file prefix of the schedule, the runs' captures and reports (default: FILE's stem + .exec)");
  replay->add_option("--cuda-lib", a.rpl.cuda_lib, "execute: the libcuda.so.1 to run on (default: the loader's)");
  replay
      ->add_option("--exec-gpu-time", a.rpl.exec_gpu_time,
                   "execute: record the runs with --gpu-time: on, off, auto (when the original has GPU times)")
      ->check(CLI::IsMember({"on", "off", "auto"}))
      ->capture_default_str();

  auto* status = c.status = app.add_subcommand("status",
                                               "is gpuobsd up, what it probes, events/s, drops, its segments "
                                               "(exit status 0: up, 3: not running, 4: permission denied)");
  status->add_option("--status-file", a.status_args.status_file, "gpuobsd's status file")->capture_default_str();
  status->add_option("--format", a.status_args.format, "table, json or csv (key,value rows)")->capture_default_str();

  auto* segs = c.segs = app.add_subcommand("segments", "list gpuobsd's segment files: start, end, size, launches");
  segs->add_option("--state-dir", a.seg_args.state_dir, "gpuobsd's state directory")->capture_default_str();
  segs->add_option("--format", a.seg_args.format, "table, json or csv")->capture_default_str();

  auto* summary = c.summary = app.add_subcommand(
      "summary", "a capture on one screen: what ran, what gpuobs saw, the top stack, what to try next");
  summary->add_option("file", a.summary_args.file, "capture (default: gpuobsd's current segment)");
  summary->add_option("--html", a.summary_args.html, "name this HTML report (gpuobs export html) beside the capture");

  auto* check = c.check = app.add_subcommand("check",
                                             "PRAGMA integrity_check over captures: exit status 0 intact, 1 corrupt, "
                                             "2 not a readable capture");
  check->add_option("files", a.check_args.files, "capture files")->required();

  auto* upgrade = c.upgrade = app.add_subcommand("upgrade",
                                                 "bring captures of older gpuobs versions up to this schema, "
                                                 "in place (other commands read them as they are)");
  upgrade->add_option("files", a.upgrade_args.files, "capture files")->required();
}

// diff: two runs compared (docs/diff.md).
void add_diff(CLI::App& app, Args& a, Commands& c) {
  auto& d = a.diff_args;
  auto* diff = c.diff = app.add_subcommand(
      "diff",
      "what changed between two runs: launches, API latency, syncs, copies, memory, launch gaps, GPU times "
      "and collectives, keyed by kernel/API, stream and stack, each tested for significance "
      "(exit 1: a --fail-on threshold crossed; docs/diff.md)");
  diff->add_option("files", d.files, "BASE NEW captures, or one capture with two windows")->expected(0, 2);
  diff->add_option("--base-segment", d.base_segment, "gpuobsd segments of the base: N or FROM..TO");
  diff->add_option("--segment", d.segment, "gpuobsd segments of the new side: N or FROM..TO");
  diff->add_option("--state-dir", d.state_dir, "gpuobsd's state directory")->capture_default_str();
  diff->add_option("--base-since", d.base_since_s, "base window: from this many seconds after its capture started")
      ->check(kSeconds);
  diff->add_option("--base-until", d.base_until_s, "base window: up to this many seconds after its capture started")
      ->check(kSeconds);
  diff->add_option("--since", d.since_s, "new window: from this many seconds after its capture started")
      ->check(kSeconds);
  diff->add_option("--until", d.until_s, "new window: up to this many seconds after its capture started")
      ->check(kSeconds);
  diff->add_option("--pid", d.pid, "only this process id (both sides)")->check(whole_number(1, kPidMaxLimit));
  diff->add_option("--process", d.process, "only processes with this name (comm)");
  diff->add_option("--kernel", d.kernel, "only kernels whose name contains this (launch and GPU time rows)");
  diff->add_flag("--no-stacks", d.no_stacks, "key rows without their stack (stacks unwound differently, or too many)");
  diff->add_option("--per", d.per,
                   "counts per run (the two sides did the same work), per second (windows of different "
                   "lengths) or per step (--step-kernel/--step-api)")
      ->capture_default_str();
  diff->add_option("--step-kernel", d.step_kernel, "a kernel launched once per step (its name as kern_sum prints it)");
  diff->add_option("--step-api", d.step_api, "an API called once per step");
  diff->add_option("--alpha", d.alpha, "false discovery rate: rows significant at q <= this")
      ->capture_default_str()
      ->check(decimal_number(1e-12, 0.5));
  diff->add_option("--min-change", d.min_change_pct, "percent a value must move to count as changed")
      ->capture_default_str()
      ->check(decimal_number(0.0, 1e6));
  diff->add_option("--min-effect", d.min_effect,
                   "distributions: |Cliff's delta| a row must reach (docs/diff.md: what runs of one unchanged "
                   "program differ by)")
      ->capture_default_str()
      ->check(decimal_number(0.0, 1.0));
  diff->add_option("--min-impact", d.min_impact_pct,
                   "rows with a time: percent of the activity time they must add or remove (calls of a "
                   "microsecond move by half between identical runs; docs/diff.md)")
      ->capture_default_str()
      ->check(decimal_number(0.0, 100.0));
  diff->add_option("--fail-on", d.fail_on,
                   "thresholds, e.g. 'p95_latency>+10%,new_kernels>0': exit 1 with a one-line verdict when one "
                   "is crossed. Metrics: " +
                       diff::fail_on_metrics());
  diff->add_flag("--all", d.all, "print every row, unchanged ones too");
  diff->add_option("--format", d.format, "table, json or csv")->capture_default_str();
  diff->add_option("--timeunit", d.timeunit, "impact_ns in ns, us, ms or s");
  diff->add_flag("--wide", a.wide, "tables: never cut a cell");
  diff->add_flag("--full-names", a.full_names, "tables and CSV: whole demangled names (default: folded)");
}

// ship and clickhouse init: captures to ClickHouse (docs/operations.md, "Fleet").
void add_fleet(CLI::App& app, Args& a, Commands& c) {
  auto& s = a.ship_args;
  auto* ship = c.ship = app.add_subcommand(
      "ship",
      "send captures (files, or gpuobsd's segments) to ClickHouse: each row with its host and segment, "
      "never twice (docs/operations.md, Fleet)");
  ship->add_option("files", s.files, "capture files");
  ship->add_option("--segment", s.segment, "gpuobsd segments: N, FROM..TO or all");
  ship->add_option("--state-dir", s.state_dir, "gpuobsd's state directory")->capture_default_str();
  ship->add_option("--to", s.url, "ClickHouse HTTP URL, e.g. http://HOST:8123/?database=gpuobs")->required();
  ship->add_option("--credentials", s.credentials, "file with 'user = NAME' and 'password = SECRET' (mode 600)");
  ship->add_option("--format", s.format, "table, json or csv")->capture_default_str();
  auto* ch = app.add_subcommand("clickhouse", "ClickHouse for a fleet of gpuobs hosts");
  ch->require_subcommand(1);
  auto* init = c.ch_init = ch->add_subcommand("init", "create the gpuobs database and tables (idempotent)");
  init->add_option("url", a.ch_args.url, "ClickHouse HTTP URL, e.g. http://HOST:8123/?database=gpuobs")->required();
  init->add_option("--credentials", a.ch_args.credentials,
                   "file with 'user = NAME' and 'password = SECRET' (mode 600)");
  init->add_option("--distributed", a.ch_args.cluster,
                   "a query node's database instead: Distributed tables over this cluster (remote_servers) for "
                   "gpuobs report --clickhouse; each shard needs gpuobs clickhouse init first");
  init->add_option("--shard-database", a.ch_args.shard_database,
                   "with --distributed: the database gpuobs ships to on every shard (default gpuobs)");
}

// Checks that involve two options (CLI11 validators see one value): the exit
// status of a usage error, or nullopt.
std::optional<int> check_option_pairs(const Args& a, const Commands& c) {
  auto usage_error = [](const std::string& msg, const std::string& hint) {
    print_error("gpuobs", make_error(msg, hint));
    return 2;
  };
  if (c.record->parsed())
    if (auto st = check_capture_options(a.rec.session.unwind, a.rec.session.stack_copy_bytes, "--stack-copy"); !st)
      return usage_error(st.error().message, st.error().hint);
  if (c.html->parsed() && a.html.since_s >= 0 && a.html.until_s >= 0 && a.html.until_s <= a.html.since_s)
    return usage_error(
        "--until " + std::to_string(a.html.until_s) + " is not after --since " + std::to_string(a.html.since_s),
        "--since and --until are seconds after the capture started; --until must be the later one");
  if (c.report->parsed() && a.rep.since_s >= 0 && a.rep.until_s >= 0 && a.rep.until_s <= a.rep.since_s)
    return usage_error(
        "--until " + std::to_string(a.rep.until_s) + " is not after --since " + std::to_string(a.rep.since_s),
        "--since and --until are seconds after the capture started; --until must be the later one");
  return std::nullopt;
}

// report and sql, once per capture: several are headed by their paths.
int run_on_captures(Args& a, const Commands& c) {
  auto captures = cli::resolve_captures(a.files, a.segment, a.state_dir);
  if (!captures) {
    print_error("gpuobs", captures.error());
    return captures.error().exit_code;
  }
  int rc = 0;
  for (const auto& f : *captures) {
    if (captures->size() > 1) std::printf("%s== %s ==\n", &f == &captures->front() ? "" : "\n", f.c_str());
    std::fflush(stdout);
    int r;
    if (c.sql->parsed()) {
      a.sq.file = f;
      r = cli::run_sql(a.sq);
    } else {
      a.rep.file = f;
      r = cli::run_report(a.rep);
    }
    std::fflush(stdout);
    if (r != 0) rc = r;
  }
  return rc;
}

// The one subcommand given, run.
int dispatch(Args& a, const Commands& c) {
  if (c.record->parsed()) {
    a.rec.session.ring_bytes = a.ring_mb << 20;
    return cli::run_record(a.rec);
  }
  if (c.status->parsed()) return cli::run_status(a.status_args);
  if (c.check->parsed()) return cli::run_check(a.check_args);
  if (c.summary->parsed()) return cli::run_summary(a.summary_args);
  if (c.upgrade->parsed()) return cli::run_upgrade(a.upgrade_args);
  if (c.segs->parsed()) return cli::run_segments(a.seg_args);
  // The default capture is the daemon's current segment.
  auto current_if_unset = [&](std::string& file) -> bool {
    if (!file.empty()) return true;
    auto r = cli::resolve_captures({}, "", a.state_dir);
    if (!r) {
      print_error("gpuobs", r.error());
      return false;
    }
    file = r->front();
    return true;
  };
  if (c.stacks->parsed()) return current_if_unset(a.stk.file) ? cli::run_stacks(a.stk) : 2;
  if (c.folded->parsed()) return current_if_unset(a.fold.file) ? cli::run_export_folded(a.fold) : 2;
  if (c.perfetto->parsed()) return current_if_unset(a.pft.file) ? cli::run_export_timeline(a.pft) : 2;
  if (c.chrome->parsed()) return current_if_unset(a.chr.file) ? cli::run_export_timeline(a.chr) : 2;
  if (c.pprof->parsed()) return current_if_unset(a.ppf.file) ? cli::run_export_pprof(a.ppf) : 2;
  if (c.html->parsed()) return current_if_unset(a.html.file) ? cli::run_export_html(a.html) : 2;
  if (c.replay->parsed()) return cli::run_replay(a.rpl);
  if (c.diff->parsed()) return cli::run_diff(a.diff_args);
  if (c.ship->parsed()) return cli::run_ship(a.ship_args);
  if (c.ch_init->parsed()) return cli::run_clickhouse_init(a.ch_args);
  if (c.report->parsed() && !a.rep.clickhouse.empty()) return cli::run_fleet_report(a.rep);
  if (c.report->parsed() && a.rep.list) return cli::run_report(a.rep);
  return run_on_captures(a, c);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpuobs;
  CLI::App app{"gpuobs " GPUOBS_VERSION ": system-wide GPU observer (BPF on CUDA/HIP libraries and GPU driver ioctls)"};
  app.require_subcommand(1);
  Args a;
  app.add_option("-v,--log-level", a.log_level, "trace, debug, info, warn, error, off")->capture_default_str();
  app.set_version_flag("--version", GPUOBS_VERSION);
  Commands c;
  add_record(app, a, c);
  add_queries(app, a, c);
  add_stacks_and_exports(app, a, c);
  add_replay_status_check(app, a, c);
  add_diff(app, a, c);
  add_fleet(app, a, c);

  // The recorded command's words go to it untouched (CLI11 would reorder them),
  // so they are split off before CLI11 parses the rest.
  std::vector<std::string> args(argv + 1, argv + argc);
  a.rec.command = cli::split_record_command(args);
  std::vector<const char*> cargv{argv[0]};
  for (auto& w : args) cargv.push_back(w.c_str());
  try {
    app.parse(static_cast<int>(cargv.size()), const_cast<char**>(cargv.data()));
  } catch (const CLI::ParseError& e) { return app.exit(e) == 0 ? 0 : 2; }
  log_init(a.log_level);
  if (auto rc = check_option_pairs(a, c)) return *rc;
  set_table_layout(TableLayout{a.wide ? 0 : terminal_columns(), !a.wide, !a.full_names});
  return dispatch(a, c);
}
