// gpuobs replay --execute: see replay_execute.h and docs/replay.md "Execute".
#include "cli/replay_execute.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/output_file.h"
#include "common/log.h"
#include "replay/exec_compare.h"
#include "replay/replay.h"
#include "report/query.h"
#include "store/schema.h"

extern char** environ;

namespace gpuobs::cli {
namespace fs = std::filesystem;
namespace {

constexpr const char* kExecProgram = "gpuobs replay --execute";

// gpuobs_replay_exec: GPUOBS_REPLAY_EXEC, else next to gpuobs, under
// lib/gpuobs, or in the build tree.
Result<std::string> find_executor() {
  if (const char* env = std::getenv("GPUOBS_REPLAY_EXEC"); env && *env) {
    if (::access(env, X_OK) == 0) return std::string(env);
    return make_error(std::string("GPUOBS_REPLAY_EXEC names ") + env + ", which cannot be run", "", 2);
  }
  fs::path dir = fs::path(self_exe()).parent_path();
  std::string tried;
  for (const fs::path& p :
       {dir / "gpuobs_replay_exec", dir / "../lib/gpuobs/gpuobs_replay_exec", dir / "../exec/gpuobs_replay_exec"}) {
    std::string s = p.lexically_normal().string();
    if (::access(s.c_str(), X_OK) == 0) return s;
    tried += (tried.empty() ? "" : ", ") + s;
  }
  return make_error("the schedule executor gpuobs_replay_exec is not installed (looked at " + tried + ")",
                    "set GPUOBS_REPLAY_EXEC to its path", 2);
}

// Runs argv, its output to `out_file` ("" keeps it), and returns its exit status (-1: not started).
int run_program(const std::vector<std::string>& argv, const std::string& out_file) {
  std::vector<char*> args;
  for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!out_file.empty()) {  // stdout and stderr both
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  }
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string edits_text(const replay::ScheduleOptions& o) {
  std::string e;
  auto add = [&](const std::string& x) { e += (e.empty() ? "" : ",") + x; };
  if (o.no_host_gaps) add("no-host-gaps");
  if (o.speed != 1.0) {
    char b[32];
    std::snprintf(b, sizeof b, "speed=%g", o.speed);
    add(b);
  }
  if (o.drop_syncs) add("drop-syncs");
  for (int64_t n : o.drop_observations) add("drop-sync=" + std::to_string(n));
  for (auto [f, t] : o.merge) add("merge=" + std::to_string(f) + ":" + std::to_string(t));
  return e;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f%%", x * 100);
  return b;
}

std::string ms(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", ns / 1e6);
  return b;
}

// One re-execution: the executor under `gpuobs record`, its capture replayed and compared.
Result<replay::ExecRun> one_run(int run, const std::string& prefix, const std::string& executor,
                                const std::string& schedule, const ReplayArgs& a, bool gpu_time,
                                const std::optional<replay::SpinFit>& fit, const replay::Schedule& orig,
                                const replay::Result& orig_replay) {
  replay::ExecRun r;
  r.run = run;
  r.exec_capture = prefix + "." + std::to_string(run) + ".gpuobs";
  std::string report = prefix + "." + std::to_string(run) + ".report.jsonl";
  ::unlink(report.c_str());
  std::vector<std::string> argv{self_exe(), "record", "-f", "-o", r.exec_capture};
  if (gpu_time) argv.emplace_back("--gpu-time");
  if (!a.cuda_lib.empty()) argv.insert(argv.end(), {"--libcuda", a.cuda_lib});
  argv.insert(argv.end(), {"--", executor, schedule, "--report", report});
  if (!a.cuda_lib.empty()) argv.insert(argv.end(), {"--cuda-lib", a.cuda_lib});
  if (fit) {
    char f[64], c[64];
    std::snprintf(f, sizeof f, "%.3f", fit->fixed_ns);
    std::snprintf(c, sizeof c, "%.9g", fit->ns_per_cycle);
    argv.insert(argv.end(), {"--fixed-ns", f, "--ns-per-cycle", c});
  }
  int rc = run_program(argv, r.exec_capture + ".log");
  if (rc != 0)
    return make_error(
        "run " + std::to_string(run) + ": gpuobs record of the executor exited with " + std::to_string(rc),
        "its output is in " + r.exec_capture + ".log");
  auto parts = replay::read_exec_report(report);
  if (!parts) return parts.error();
  auto edb = open_capture_readonly(r.exec_capture);
  if (!edb) return edb.error();
  auto src = replay::load_schedule_source(*edb);  // read and replayed once: the schedule and the comparison
  if (!src) return src.error();
  replay::ScheduleOptions eo;
  int64_t start = src->capture_start_ns;
  int64_t t0 = parts->front().t0_mono_ns, issued = parts->front().issued_mono_ns;
  for (const auto& p : *parts) t0 = std::min(t0, p.t0_mono_ns), issued = std::max(issued, p.issued_mono_ns);
  // The executor's calls from the schedule's start until its last step was
  // issued: its set-up, calibration and final wait are not the schedule's.
  eo.from_ns = std::max<int64_t>(0, t0 - start);
  eo.to_ns = std::max<int64_t>(*eo.from_ns + 1, issued - start + 1);
  auto exec = replay::build_schedule(*src, eo);
  if (!exec) return exec.error();
  r.calibration = parts->front().calibration == "given" ? "cupti" : parts->front().calibration;
  r.ns_per_cycle = parts->front().ns_per_cycle;
  r.fixed_ns = parts->front().fixed_ns;
  r.cmp = replay::compare_execution(orig, orig_replay, *exec, src->replay, *parts);
  return r;
}

void print_summary(const std::vector<replay::ExecRun>& runs, bool written, std::ostream& out) {
  const auto& first = runs.front().cmp;
  // measured: work operations with a GPU time, of all, each side (the worst
  // run's): a stream short of them has replay windows in its busy time.
  QueryResult t{{"stream", "kind", "priority", "orig_busy_ms", "exec_busy_ms", "busy_error", "worst_error", "measured"},
                {}};
  size_t unused = 0;
  for (size_t i = 0; i < first.streams.size(); ++i) {
    if (first.streams[i].orig.work_ops == 0 && first.streams[i].exec.work_ops == 0) {
      ++unused;  // created and never used (PyTorch's stream pool): noise in the table
      continue;
    }
    std::vector<double> busy, err;
    for (const auto& r : runs) {
      busy.push_back(static_cast<double>(r.cmp.streams[i].exec.busy_ns));
      err.push_back(r.cmp.streams[i].busy_error());
    }
    auto worst_at =
        std::max_element(err.begin(), err.end(), [](double x, double y) { return std::abs(x) < std::abs(y); });
    const auto& s = first.streams[i];
    const auto& w = runs[static_cast<size_t>(worst_at - err.begin())].cmp.streams[i];
    std::string measured = std::to_string(w.orig.measured_ops) + "/" + std::to_string(w.orig.work_ops) + ", " +
                           std::to_string(w.exec.measured_ops) + "/" + std::to_string(w.exec.work_ops);
    t.rows.push_back({s.label.empty() ? s.kind : s.label, s.kind, int64_t{s.priority},
                      ms(static_cast<double>(s.orig.busy_ns)), ms(median(busy)), pct(median(err)), pct(*worst_at),
                      measured});
  }
  std::vector<double> e2e, err, gap;
  for (const auto& r : runs) {
    e2e.push_back(static_cast<double>(r.cmp.exec_e2e_ns));
    err.push_back(r.cmp.e2e_error());
    gap.push_back(static_cast<double>(r.cmp.exec_gap_p50_ns));
  }
  out << "== per stream (median of " << runs.size() << " run" << (runs.size() == 1 ? "" : "s") << ")\n";
  print_result(t, OutputFormat::table, out);
  if (unused) out << unused << " stream" << (unused == 1 ? "" : "s") << " with no work on either side not shown\n";
  out << "\nend to end: original " << ms(static_cast<double>(first.orig_e2e_ns)) << " ms, re-executed "
      << ms(median(e2e)) << " ms (" << pct(median(err)) << "); launch gap p50: original "
      << first.orig_gap_p50_ns / 1000.0 << " us, re-executed " << median(gap) / 1000.0 << " us\n";
  // The idle split, summed over the compared streams: why the GPU waited, each side (the first run's).
  const auto& o = first.orig_total;
  const auto& e = first.exec_total;
  out << "idle (host wait / sync wait / dependency / other), ms: original " << ms(double(o.host_wait_ns)) << " / "
      << ms(double(o.sync_wait_ns)) << " / " << ms(double(o.dependency_wait_ns)) << " / " << ms(double(o.other_ns))
      << ", re-executed " << ms(double(e.host_wait_ns)) << " / " << ms(double(e.sync_wait_ns)) << " / "
      << ms(double(e.dependency_wait_ns)) << " / " << ms(double(e.other_ns)) << "\n";
  if (written) out << "tables replay_exec_runs and replay_exec_streams written: gpuobs report replay_exec_sum FILE\n";
}

// With --gpu-time: the spin kernel measured the way the comparison measures
// kernels. The executor launches kernels of known cycles under gpuobs record
// --gpu-time; their CUPTI durations, in launch order, give the fit every run
// then uses. None (the runs time it with CUDA events) when nothing was measured.
std::optional<replay::SpinFit> cupti_fit(const std::string& prefix, const std::string& executor, const ReplayArgs& a) {
  std::string cap = prefix + ".calibration.gpuobs", report = prefix + ".calibration.jsonl";
  ::unlink(report.c_str());
  std::vector<std::string> argv{self_exe(), "record", "-f", "--gpu-time", "-o", cap};
  if (!a.cuda_lib.empty()) argv.insert(argv.end(), {"--libcuda", a.cuda_lib});
  argv.insert(argv.end(), {"--", executor, "--calibrate-only", "--report", report});
  if (!a.cuda_lib.empty()) argv.insert(argv.end(), {"--cuda-lib", a.cuda_lib});
  auto warn = [&](const std::string& why) {
    std::cerr << "gpuobs replay: the spin kernel is timed with CUDA events instead: " << why << "\n";
    return std::nullopt;
  };
  if (int rc = run_program(argv, cap + ".log"); rc != 0)
    return warn("the calibration run exited with " + std::to_string(rc) + " (" + cap + ".log)");
  std::ifstream in(report);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("calibration_sequence")) return warn("no calibration sequence in " + report);
  std::vector<uint64_t> cycles;
  for (const auto& g : j["calibration_sequence"])
    for (int i = 0; i < g.at(1).get<int>(); ++i) cycles.push_back(g.at(0).get<uint64_t>());
  auto db = open_capture_readonly(cap);
  if (!db) return warn(db.error().message);
  std::vector<std::pair<uint64_t, int64_t>> samples;
  Stmt st(db->get(), "SELECT duration_ns FROM gpu_times WHERE call_table = 'kernel_launches' ORDER BY start_mono_ns");
  while (st.valid() && st.step() == SQLITE_ROW && samples.size() < cycles.size())
    samples.emplace_back(cycles[samples.size()], sqlite3_column_int64(st.get(), 0));
  if (samples.size() != cycles.size())
    return warn(std::to_string(samples.size()) + " of " + std::to_string(cycles.size()) +
                " calibration kernels have a GPU time");
  auto fit = replay::fit_spin_kernel(samples);
  if (!fit) return warn("the calibration kernels' GPU times give no fit");
  std::cerr << "gpuobs replay: spin kernel (CUPTI, " << samples.size() << " kernels): " << fit->fixed_ns << " ns + "
            << fit->ns_per_cycle << " ns/cycle\n";
  return fit;
}

}  // namespace

int execute_preflight(const ReplayArgs& a) {
  auto fail = [](const Error& e) {
    print_error(kExecProgram, e);
    return e.exit_code ? e.exit_code : 1;
  };
  if (a.runs < 1) return fail(make_error("--runs wants at least 1", "", 2));
  auto executor = find_executor();
  if (!executor) return fail(executor.error());
  // No GPU, no driver: said before the capture is opened.
  std::vector<std::string> probe{*executor, "--probe"};
  if (!a.cuda_lib.empty()) probe.insert(probe.end(), {"--cuda-lib", a.cuda_lib});
  if (int rc = run_program(probe, ""); rc != 0)
    return fail(make_error("this host cannot re-execute a schedule: no CUDA GPU (gpuobs_replay_exec said why above)",
                           "run it on the host with the GPU; without one, gpuobs replay FILE --schedule-out s.json "
                           "writes the schedule for later",
                           1));
  return 0;
}

int execute_schedule(Db& db, const ReplayArgs& a, const replay::ScheduleOptions& planned_opts) {
  auto fail = [](const Error& e) {
    print_error(kExecProgram, e);
    return e.exit_code ? e.exit_code : 1;
  };
  auto executor = find_executor();
  if (!executor) return fail(executor.error());
  // The capture read and replayed once: the edited schedule, the original
  // one and the comparison's replay all come from it.
  auto src = replay::load_schedule_source(db);
  if (!src) return fail(src.error());
  auto planned = replay::build_schedule(*src, planned_opts);
  if (!planned) return fail(planned.error());
  if (planned->steps.empty()) return fail(make_error("the schedule is empty: nothing to execute", "", 2));
  replay::ScheduleOptions part;
  part.pid = planned_opts.pid, part.from_ns = planned_opts.from_ns, part.to_ns = planned_opts.to_ns;
  auto orig = replay::build_schedule(*src, part);
  if (!orig) return fail(orig.error());
  const replay::Result& orig_replay = src->replay;

  std::string prefix = a.exec_out;
  if (prefix.empty()) {
    fs::path p(a.file);
    prefix = (p.parent_path() / p.stem()).string() + ".exec";
  }
  std::string schedule = prefix + ".schedule.json";
  {
    std::string text = replay::schedule_json(*planned);
    Status st = write_output(schedule, /*force=*/true, [&](std::ostream& out) -> Status {
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      if (!out) return make_error("cannot write " + schedule + " (disk full?)");
      return {};
    });
    if (!st) return fail(st.error());
  }
  bool gpu_time = a.exec_gpu_time == "on" ||
                  (a.exec_gpu_time == "auto" && db.scalar("SELECT count(*) FROM gpu_times").value_or(0) > 0);
  std::optional<replay::SpinFit> fit;
  if (gpu_time) fit = cupti_fit(prefix, *executor, a);
  std::vector<replay::ExecRun> runs;
  for (int i = 1; i <= a.runs; ++i) {
    auto r = one_run(i, prefix, *executor, schedule, a, gpu_time, fit, *orig, orig_replay);
    if (!r) return fail(r.error());
    r->edits = edits_text(planned_opts);
    std::cerr << "gpuobs replay: run " << i << "/" << a.runs << ": end to end " << ms(double(r->cmp.exec_e2e_ns))
              << " ms (original " << ms(double(r->cmp.orig_e2e_ns)) << " ms, " << pct(r->cmp.e2e_error()) << ")\n";
    runs.push_back(std::move(*r));
  }
  if (!a.no_write)
    if (auto s = replay::write_exec_runs(db, runs); !s) return fail(s.error());
  print_summary(runs, !a.no_write, std::cout);
  return 0;
}

}  // namespace gpuobs::cli
