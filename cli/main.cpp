// gpuobs: record a command's GPU activity, and query captures.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "common/log.h"
#include "version.h"

namespace {

// Seconds since the capture started: a finite number >= 0 ("nan", "inf" and
// negative values would silently select nothing or everything).
const CLI::Validator kSeconds(
    [](std::string& v) -> std::string {
      try {
        size_t used = 0;
        double d = std::stod(v, &used);
        if (used == v.size() && std::isfinite(d) && d >= 0) return {};
      } catch (const std::exception&) {
      }
      return "'" + v + "' is not a number of seconds >= 0";
    },
    "SECONDS>=0");

// --unwind dwarf copies this many bytes of stack per event: whole 8-byte
// words, at least one, at most 64 KiB (the BPF side's per-CPU buffer).
const CLI::Validator kStackCopy(
    [](std::string& v) -> std::string {
      try {
        size_t used = 0;
        long long n = std::stoll(v, &used);
        if (used == v.size() && n >= 8 && n <= 65536 && n % 8 == 0) return {};
      } catch (const std::exception&) {
      }
      return "'" + v + "' is not a multiple of 8 from 8 to 65536";
    },
    "BYTES");

}  // namespace

int main(int argc, char** argv) {
  using namespace gpuobs;
  CLI::App app{"gpuobs " GPUOBS_VERSION ": system-wide GPU observer (BPF on CUDA/HIP libraries and GPU driver ioctls)"};
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("-v,--log-level", log_level, "trace, debug, info, warn, error, off")->capture_default_str();
  app.set_version_flag("--version", GPUOBS_VERSION);

  cli::RecordArgs rec;
  auto* record = app.add_subcommand("record", "run a command and record its GPU activity and that of its children");
  record->add_option("-o,--output", rec.session.output, "capture file to write (SQLite)")->required();
  record->add_flag("-f,--force", rec.session.force, "overwrite an existing output file");
  record->add_option("--libcuda", rec.session.libcuda_paths,
                     "libcuda file to probe (repeatable; default: the system's libcuda.so.1)");
  record->add_option("--libhip", rec.session.libhip_paths,
                     "HIP runtime file to probe (repeatable; default: the system's libamdhip64.so)");
  record->add_option("--watch-dev", rec.session.device_specs,
                     "also watch ioctls on this character device: MAJOR, MAJOR:MINOR or /dev/PATH, optionally "
                     "DRIVER=... to decode its ioctls as nvidia, nvidia-uvm or kfd (repeatable)");
  record->add_flag("!--no-gpu-devices", rec.session.gpu_devices,
                   "do not watch the GPU drivers' devices found in /proc/devices");
  uint32_t ring_mb = 16;
  record->add_option("--ring-mb", ring_mb, "ring buffer size in MiB, 1 to 1024 (rounded up to a power of two)")
      ->check(CLI::Range(1u, 1024u))->capture_default_str();
  record->add_option("--stack-depth", rec.session.stack_depth,
                     "user-stack frames per event, 0 to 127 (0: no stacks)")
      ->check(CLI::Range(0, 127))->capture_default_str();
  record->add_option("--unwind", rec.session.unwind,
                     "fp: frame pointers (cheapest); dwarf: also copy the stack and unwind it with .eh_frame "
                     "in user space; bpf: unwind in BPF from .eh_frame tables (both go through code built "
                     "without frame pointers)")
      ->check(CLI::IsMember({"fp", "dwarf", "bpf"}))->capture_default_str();
  auto* stack_copy = record->add_option("--stack-copy", rec.session.stack_copy_bytes,
                                        "--unwind dwarf: bytes of stack copied per event (multiple of 8, <= 65536)")
                         ->check(kStackCopy)->capture_default_str();
  record->footer("The command starts after -- or at the first word that is not an option.");

  // Which captures: files, --segment in --state-dir, or gpuobsd's current segment.
  std::vector<std::string> files;
  std::string segment, state_dir = cli::kDaemonStateDir;
  auto add_capture_options = [&](CLI::App* cmd, const char* files_help) {
    cmd->add_option("--segment", segment,
                    "gpuobsd segments to read: N, all or FROM..TO (sequence numbers; `gpuobs segments` lists them)");
    cmd->add_option("--state-dir", state_dir, "gpuobsd's state directory")->capture_default_str();
    return files_help;
  };

  cli::ReportArgs rep;
  auto* report = app.add_subcommand("report", "print a report over a capture");
  report->add_flag("--list", rep.list, "list the reports");
  report->add_option("name", rep.name, "report: launches, ioctls, capture, probes");
  report->add_option("files", files, add_capture_options(report,
      "capture files (default: gpuobsd's current segment); with several, the report runs once per file, "
      "each headed by its path: sums are per segment"));
  report->add_option("--format", rep.format, "table, json or csv")->capture_default_str();
  report->add_option("--pid", rep.pid, "only this process id")->check(CLI::PositiveNumber);
  report->add_option("--process", rep.process, "only processes with this name (comm)");
  report->add_option("--since", rep.since_s, "only activity from this many seconds after the capture started")
      ->check(kSeconds);
  report->add_option("--until", rep.until_s, "only activity up to this many seconds after the capture started")
      ->check(kSeconds);

  cli::SqlArgs sq;
  auto* sql = app.add_subcommand("sql", "run a read-only SQL query over a capture (docs/schema.md)");
  sql->add_option("query", sq.query, "one SQL statement; :name parameters come from -p")->required();
  sql->add_option("files", files, add_capture_options(sql,
      "capture files (default: gpuobsd's current segment); with several, the query runs once per file, "
      "each result headed by its path"));
  sql->add_option("-p,--param", sq.params, "parameter name=value (repeatable)");
  sql->add_option("--format", sq.format, "table, json or csv")->capture_default_str();

  auto add_stack_options = [](CLI::App* cmd, cli::StackArgs& s) {
    cmd->add_option("file", s.file, "capture file (default: gpuobsd's current segment)");
    cmd->add_option("--by", s.by, "weight: launches, calls, copied, allocated, blocked (ns), ioctls")
        ->capture_default_str();
    cmd->add_option("--kernel", s.kernel, "only launches of kernels whose name contains this");
    cmd->add_option("--api", s.api, "only calls of this API (e.g. cuMemcpyHtoD_v2)");
    cmd->add_option("--pid", s.pid, "only this process id")->check(CLI::PositiveNumber);
  };
  cli::StackArgs stk;
  auto* stacks = app.add_subcommand("stacks", "the call stacks behind the most launches, bytes or blocked time");
  add_stack_options(stacks, stk);
  stacks->add_option("--top", stk.top, "how many stacks (at least 1)")->check(CLI::PositiveNumber)->capture_default_str();
  stacks->add_option("--format", stk.format, "table, json")->capture_default_str();

  cli::StackArgs fold;
  auto* exp = app.add_subcommand("export", "write a capture in another format");
  exp->require_subcommand(1);
  auto* folded = exp->add_subcommand("folded", "folded stacks (flamegraph.pl, speedscope): root;...;leaf weight");
  add_stack_options(folded, fold);
  folded->add_option("-o,--output", fold.output, "file to write (default: standard output)");

  cli::TimelineExportArgs pft, chr;
  auto* perfetto = exp->add_subcommand("perfetto", "Perfetto trace (ui.perfetto.dev): host calls per thread, replayed "
                                                   "GPU streams, flows, device memory and queue depth counters");
  perfetto->add_option("file", pft.file, std::string("capture file (default: gpuobsd's, ") + cli::kDaemonCapture + ")");
  perfetto->add_option("-o,--output", pft.output, "trace file to write (.pftrace)")->required();
  auto* chrome = exp->add_subcommand("chrome", "the same timeline as Chrome JSON trace events");
  chrome->add_option("file", chr.file, std::string("capture file (default: gpuobsd's, ") + cli::kDaemonCapture + ")");
  chrome->add_option("-o,--output", chr.output, "JSON file to write")->required();
  chr.chrome = true;
  cli::StackArgs ppf;
  auto* pprof = exp->add_subcommand("pprof", "gzip-compressed pprof profile of the stacks, one sample type per measure "
                                             "(--by picks the default)");
  add_stack_options(pprof, ppf);
  pprof->add_option("-o,--output", ppf.output, "profile file to write (.pb.gz)")->required();

  cli::ReplayArgs rpl;
  auto* replay = app.add_subcommand("replay", "rebuild the GPU queues, their ordering and hazards from a capture "
                                              "(writes the replay_* tables; docs/replay.md)");
  replay->add_option("file", rpl.file, "capture file")->required();
  replay->add_option("--format", rpl.format, "table or json")->capture_default_str();
  replay->add_flag("--no-write", rpl.no_write, "only print: do not write the replay tables into the capture");

  cli::StatusArgs status_args;
  auto* status = app.add_subcommand("status", "is gpuobsd up, what it probes, events/s, drops, its segments "
                                               "(exit status 0: up, 3: not running, 4: permission denied)");
  status->add_option("--status-file", status_args.status_file, "gpuobsd's status file")->capture_default_str();
  status->add_option("--format", status_args.format, "table or json")->capture_default_str();

  cli::SegmentsArgs seg_args;
  auto* segs = app.add_subcommand("segments", "list gpuobsd's segment files: start, end, size, launches");
  segs->add_option("--state-dir", seg_args.state_dir, "gpuobsd's state directory")->capture_default_str();
  segs->add_option("--format", seg_args.format, "table or json")->capture_default_str();

  cli::CheckArgs check_args;
  auto* check = app.add_subcommand("check", "PRAGMA integrity_check over captures: exit status 0 intact, 1 corrupt, "
                                             "2 not a readable capture");
  check->add_option("files", check_args.files, "capture files")->required();

  cli::UpgradeArgs upgrade_args;
  auto* upgrade = app.add_subcommand("upgrade", "bring captures of older gpuobs versions up to this schema, in place "
                                                 "(other commands read them as they are)");
  upgrade->add_option("files", upgrade_args.files, "capture files")->required();

  // The recorded command's words go to it untouched (CLI11 would reorder them),
  // so they are split off before CLI11 parses the rest.
  std::vector<std::string> args(argv + 1, argv + argc);
  rec.command = cli::split_record_command(args);
  std::vector<const char*> cargv{argv[0]};
  for (auto& a : args) cargv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargv.size()), const_cast<char**>(cargv.data()));
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  log_init(log_level);
  // Checks that involve two options (CLI11 validators see one value).
  auto usage_error = [](const std::string& msg, const std::string& hint) {
    print_error("gpuobs", make_error(msg, hint));
    return 2;
  };
  if (record->parsed() && stack_copy->count() && rec.session.unwind != "dwarf")
    return usage_error("--stack-copy applies only to --unwind dwarf (it sizes the stack copy that unwinds in user space)",
                       "add --unwind dwarf, or drop --stack-copy");
  if (report->parsed() && rep.since_s >= 0 && rep.until_s >= 0 && rep.until_s <= rep.since_s)
    return usage_error("--until " + std::to_string(rep.until_s) + " is not after --since " + std::to_string(rep.since_s),
                       "--since and --until are seconds after the capture started; --until must be the later one");
  if (record->parsed()) {
    rec.session.ring_bytes = ring_mb << 20;
    return cli::run_record(rec);
  }
  if (status->parsed()) return cli::run_status(status_args);
  if (check->parsed()) return cli::run_check(check_args);
  if (upgrade->parsed()) return cli::run_upgrade(upgrade_args);
  if (segs->parsed()) return cli::run_segments(seg_args);
  // The default capture is the daemon's current segment.
  auto current_if_unset = [&](std::string& file) -> bool {
    if (!file.empty()) return true;
    auto r = cli::resolve_captures({}, "", state_dir);
    if (!r) {
      print_error("gpuobs", r.error());
      return false;
    }
    file = r->front();
    return true;
  };
  if (stacks->parsed()) return current_if_unset(stk.file) ? cli::run_stacks(stk) : 2;
  if (folded->parsed()) return current_if_unset(fold.file) ? cli::run_export_folded(fold) : 2;
  if (perfetto->parsed()) return current_if_unset(pft.file) ? cli::run_export_timeline(pft) : 2;
  if (chrome->parsed()) return current_if_unset(chr.file) ? cli::run_export_timeline(chr) : 2;
  if (pprof->parsed()) return current_if_unset(ppf.file) ? cli::run_export_pprof(ppf) : 2;
  if (replay->parsed()) return cli::run_replay(rpl);
  if (report->parsed() && rep.list) return cli::run_report(rep);
  auto captures = cli::resolve_captures(files, segment, state_dir);
  if (!captures) {
    print_error("gpuobs", captures.error());
    return captures.error().exit_code;
  }
  // Several captures: one section each, headed by its path.
  int rc = 0;
  for (const auto& f : *captures) {
    if (captures->size() > 1) std::printf("%s== %s ==\n", &f == &captures->front() ? "" : "\n", f.c_str());
    std::fflush(stdout);
    int r;
    if (sql->parsed()) {
      sq.file = f;
      r = cli::run_sql(sq);
    } else {
      rep.file = f;
      r = cli::run_report(rep);
    }
    std::fflush(stdout);
    if (r != 0) rc = r;
  }
  return rc;
}
