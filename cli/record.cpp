// gpuobs record: start a command stopped, attach, let it run, follow its
// process tree, exit with its status.
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>

#include "capture/gpu_time_import.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/split.h"
#include "common/terminal_text.h"

namespace gpuobs::cli {
namespace {

std::atomic<pid_t> g_child{0};

void forward_signal(int sig) {
  pid_t c = g_child.load();
  if (c > 0) ::kill(c, sig);
}

// Like execvp's search, so a missing command fails before anything starts.
bool command_exists(const std::string& cmd) {
  if (cmd.find('/') != std::string::npos) return ::access(cmd.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  for (std::string dir : split_list(path ? path : "/usr/local/bin:/usr/bin:/bin")) {
    // An empty PATH element means the current directory. (push_back: GCC 12
    // warns a false -Wrestrict on assigning "." once this is inlined.)
    if (dir.empty()) dir.push_back('.');
    if (::access((dir + "/" + cmd).c_str(), X_OK) == 0) return true;
  }
  return false;
}

int exit_status_of(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 1;
}

}  // namespace

std::vector<std::string> split_record_command(std::vector<std::string>& args) {
  // Options of gpuobs and of record that take a value: main.cpp's own, and
  // the capture options (one list, checked where they are defined).
  static const std::set<std::string> kTakesValue = [] {
    std::set<std::string> s = {"-o", "--output", "-v", "--log-level"};
    for (const char* n : kCaptureValueOptions) s.insert(n);
    return s;
  }();
  size_t i = 0;
  while (i < args.size() && args[i] != "record") i += kTakesValue.count(args[i]) ? 2 : 1;
  if (i >= args.size()) return {};
  for (++i; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      std::vector<std::string> cmd(args.begin() + static_cast<long>(i) + 1, args.end());
      args.resize(i);
      return cmd;
    }
    if (a.empty() || a[0] != '-') break;
    if (kTakesValue.count(a)) ++i;  // "--opt value"; "--opt=value" is one word
  }
  std::vector<std::string> cmd(args.begin() + static_cast<long>(std::min(i, args.size())), args.end());
  args.resize(std::min(i, args.size()));
  return cmd;
}

namespace {

// What every `gpuobs record` session is: the command's tree only, its GPU
// libraries found where its processes map them (exec, dlopen), and those its
// LD_LIBRARY_PATH names attached before it starts, so its first call is seen
// whatever the attach latency.
void set_record_options(RecordArgs& a) {
  a.session.mode = CaptureMode::record;
  a.session.only_tracked = true;
  a.session.watch_libraries = true;
  if (const char* llp = std::getenv("LD_LIBRARY_PATH"))
    for (const auto& f : gpu_libraries_on_search_path(llp)) a.session.preload_libraries.push_back(f.path);
  a.session.command = shell_quote(a.command);
}

// The command, forked and held before exec: it waits on `go` until it is
// tracked, so its first instruction after exec is already observed. `err`
// (close-on-exec) reports an exec failure.
struct HeldCommand {
  pid_t pid = -1;
  int go = -1;   // write 'g' to release it
  int err = -1;  // the exec errno, or EOF once exec succeeded
};

Result<HeldCommand> fork_held(std::vector<std::string>& command) {
  int go[2], err[2];
  if (::pipe2(go, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    return make_error(std::string("pipe: ") + std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) return make_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(go[1]);
    ::close(err[0]);
    char c = 0;
    if (::read(go[0], &c, 1) != 1 || c != 'g') ::_exit(126);
    std::vector<char*> argv;
    for (auto& s : command) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    int e = errno;
    (void)!::write(err[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(go[0]);
  ::close(err[1]);
  return HeldCommand{pid, go[1], err[0]};
}

// SIGTERM/SIGHUP sent to gpuobs are passed on to pid. ^C and ^\ from the
// terminal already reach the child (same process group): gpuobs ignores them
// rather than deliver a second one, and goes on recording until the child exits.
void forward_signals_to(pid_t pid) {
  g_child = pid;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGQUIT, SIG_IGN);
}

// Lets the held command exec; logs why when exec fails.
void release(HeldCommand& c, const std::string& name) {
  (void)!::write(c.go, "g", 1);
  ::close(c.go);
  int exec_errno = 0;
  if (::read(c.err, &exec_errno, sizeof exec_errno) == sizeof exec_errno)
    spdlog::error("cannot execute {}: {}", name, std::strerror(exec_errno));
  ::close(c.err);
}

// Records until the command exits; its exit status (128+N for signal N, 1
// when it was reaped behind our back and the status is lost).
int record_until_exit(Session& session, pid_t pid) {
  for (;;) {
    session.poll(50);
    // Look without reaping, stop forwarding signals, then reap: the pid is
    // never signalled after it may have been reused.
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      g_child = 0;
      int wstatus = 0;
      ::waitpid(pid, &wstatus, 0);
      return exit_status_of(wstatus);
    }
    if (errno == ECHILD) {  // reaped behind our back: the status is lost
      g_child = 0;
      return 1;
    }
  }
}

// What a user needs at the end of a recording, a line each and only the
// lines that say something: what ran and what was seen, where the capture is
// and whether it is complete; losses and failed probes when there are any.
// Probe counts and an absent GPU-metrics source are details (--verbose): a
// libcuda that lacks 8 of the 142 symbols (an older driver) is normal.
void print_summary(const RecordArgs& a, int status, double seconds, const SessionSummary& sum) {
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::string cmd = terminal_safe(a.session.command);
  if (cmd.size() > 64) cmd = cmd.substr(0, 61) + "...";
  std::fprintf(stderr, "gpuobs: recorded %s (exit status %d, %.2f s)\n", cmd.c_str(), status, seconds);
  // Only the families seen: "0 driver ioctls" says nothing.
  std::string seen;
  auto count = [&](uint64_t n, const char* what) {
    if (n) seen += (seen.empty() ? "" : ", ") + std::to_string(n) + what;
  };
  count(sum.launches, " kernel launches");
  count(sum.api_calls, " other GPU API calls");
  count(sum.ioctls, " driver ioctls");
  if (seen.empty()) std::fprintf(stderr, "gpuobs: no GPU calls seen\n");
  else
    std::fprintf(stderr, "gpuobs: %s from %llu %s\n", seen.c_str(), u(sum.processes),
                 sum.processes == 1 ? "process" : "processes");
  std::fprintf(stderr, "gpuobs: capture written to %s (%s)\n", terminal_safe(a.session.output).c_str(),
               terminal_safe(sum.state).c_str());
  std::string lost;
  auto add = [&](uint64_t n, const char* what) {
    if (n) lost += (lost.empty() ? "" : ", ") + std::to_string(n) + what;
  };
  add(sum.dropped, " events dropped (ring buffer full)");
  add(sum.decode_errors, " records not decoded");
  add(sum.store_failed, sum.disk_full ? " events not stored (the disk was full)" : " events not stored (store errors)");
  if (!lost.empty()) std::fprintf(stderr, "gpuobs: lost: %s (gpuobs report capture)\n", lost.c_str());
  if (sum.probes_failed)
    std::fprintf(stderr, "gpuobs: %d library probes failed to attach (gpuobs report probes)\n", sum.probes_failed);
  if (a.verbose) {
    std::fprintf(stderr,
                 "gpuobs: %d of %d library probes attached (%d symbols the libraries do not export: gpuobs report "
                 "probes); %llu process events; %llu distinct stacks\n",
                 sum.probes_attached, sum.probes_planned, sum.probes_planned - sum.probes_attached - sum.probes_failed,
                 u(sum.process_events), u(sum.stacks));
  }
  if (!sum.gpu_metrics.empty() && (a.verbose || !sum.gpu_metrics_absent))
    std::fprintf(stderr, "gpuobs: GPU metrics: %s (gpuobs report gpu_sum)\n", terminal_safe(sum.gpu_metrics).c_str());
}

// --gpu-time, after the capture is complete: the activity file joined into
// it. Its losses are said and stored; the file is kept when it could not be
// read, so nothing measured is thrown away.
void import_gpu_time(const std::string& capture, const std::string& file, const std::string& cupti) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0 || (S_ISREG(st.st_mode) && st.st_size == 0)) {
    std::fprintf(stderr,
                 "gpuobs: GPU times: none recorded (%s was not written: the command made no CUDA call, or its "
                 "CUDA driver did not load the injection library)\n",
                 terminal_safe(file).c_str());
    ::unlink(file.c_str());
    return;
  }
  auto r = import_gpu_times(capture, file);
  if (!r) {
    print_error("gpuobs record", r.error());
    std::fprintf(stderr, "gpuobs: GPU times: kept in %s\n", terminal_safe(file).c_str());
    return;
  }
  const auto& j = r->join;
  const unsigned long long joined = j.joined_by_correlation + j.joined_by_order;
  const unsigned long long unjoined_calls = j.rows_without_activity + j.rows_without_process;
  std::fprintf(stderr,
               "gpuobs: GPU times: %llu of %llu kernels, copies and memsets measured by CUPTI joined to the "
               "capture's %llu calls (%llu by correlation id, %llu by call order); not joined: %llu without a "
               "captured call, %llu ambiguous; %llu calls without a GPU time; %llu records dropped by CUPTI "
               "(CUPTI %s%s%s; driver API entries %lld ns after the probe, median)\n",
               joined, (unsigned long long)r->gpu_activities, (unsigned long long)r->calls,
               (unsigned long long)j.joined_by_correlation, (unsigned long long)j.joined_by_order,
               (unsigned long long)j.activities_without_row, (unsigned long long)j.activities_ambiguous, unjoined_calls,
               (unsigned long long)r->cupti_dropped, terminal_safe(cupti).c_str(),
               r->processes_clock_pair ? ", clock converted by a pair read at start" : "",
               r->processes_without_tids ? ", no thread ids" : "", (long long)r->entry_lag_median_ns);
  ::unlink(file.c_str());
}

// Without -o: gpuobs-<command>-<YYYYMMDD-HHMMSS>.gpuobs in the current
// directory (local time), -2, -3, ... when that name is taken, as nsys names
// report files; the command's base name keeps only [A-Za-z0-9._-] so no name a
// program chose reaches the file system or the terminal as it is.
std::string default_output(const std::string& command) {
  std::string base = command.substr(command.rfind('/') + 1), clean;
  for (char c : base.substr(0, 40))
    clean += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '_';
  if (clean.empty() || clean[0] == '.') clean = "cmd" + clean;
  std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  std::string stem = "gpuobs-" + clean + "-" + stamp;
  std::string name = stem + ".gpuobs";
  for (int n = 2; n < 1000 && ::access(name.c_str(), F_OK) == 0; ++n) name = stem + "-" + std::to_string(n) + ".gpuobs";
  return name;
}

}  // namespace

int run_record(RecordArgs& a) {
  if (a.command.empty()) {
    print_error("gpuobs record", make_error("no command given", "gpuobs record -o out.gpuobs -- CMD ARGS..."));
    return 2;
  }
  if (!command_exists(a.command[0])) {
    print_error("gpuobs record", make_error("command not found: " + a.command[0]));
    return 127;
  }
  if (a.session.output == kStdoutPath) {
    print_error(
        "gpuobs record",
        make_error("-o -: a capture is an SQLite database and needs a file",
                   "record into a file, then stream it: gpuobs export perfetto FILE -o - (or chrome, folded)", 2));
    return 2;
  }
  if (a.session.output.empty()) {
    a.session.output = default_output(a.command[0]);
    std::fprintf(stderr, "gpuobs: recording into %s\n", terminal_safe(a.session.output).c_str());
  }
  // An inherited "ignore SIGCHLD" would make the kernel reap the child and
  // lose its exit status.
  ::signal(SIGCHLD, SIG_DFL);
  set_record_options(a);
  // --gpu-time: the pieces found before anything starts (a missing one is an
  // error now, not a capture without GPU times), and the command's
  // environment set for the CUDA driver to load the library.
  std::string gpu_time_file, gpu_time_cupti;
  if (a.gpu_time) {
    auto setup = find_gpu_time_setup(self_exe(), a.command[0]);
    if (!setup) {
      print_error("gpuobs record", setup.error());
      return setup.error().exit_code;
    }
    // Absolute: the command may change directory before CUDA loads the library.
    gpu_time_file = std::filesystem::absolute(a.session.output + ".gputime").lexically_normal().string();
    gpu_time_cupti = setup->cupti;
    // Made here, empty, 0600, never through a link: the command (as root)
    // appends to this file only (a stale one from an earlier run is removed).
    ::unlink(gpu_time_file.c_str());
    int fd = ::open(gpu_time_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      print_error("gpuobs record",
                  make_error("--gpu-time: cannot create " + gpu_time_file + ": " + std::strerror(errno), "", 2));
      return 2;
    }
    ::close(fd);
    ::setenv("CUDA_INJECTION64_PATH", setup->inject_library.c_str(), 1);
    ::setenv("GPUOBS_CUPTI_PATH", setup->cupti.c_str(), 1);
    ::setenv("GPUOBS_GPU_TIME_FILE", gpu_time_file.c_str(), 1);
    spdlog::info("--gpu-time: {} with {}", setup->inject_library, setup->cupti);
  }
  auto session = Session::create(a.session);
  if (!session) {
    print_error("gpuobs record", session.error());
    return session.error().exit_code;
  }
  auto child = fork_held(a.command);
  if (!child) {
    print_error("gpuobs record", child.error());
    return 1;
  }
  forward_signals_to(child->pid);
  if (auto st = (*session)->track_root(static_cast<uint32_t>(child->pid)); !st) {
    ::kill(child->pid, SIGKILL);
    print_error("gpuobs record", st.error());
    return 1;
  }
  release(*child, a.command[0]);
  auto started = std::chrono::steady_clock::now();
  int status = record_until_exit(**session, child->pid);
  Result<SessionSummary> sum = make_error("not finished");
  {
    // The ring's last records and the writer's backlog are stored now: on a
    // busy capture that takes a while, so say what is happening.
    Session& s = **session;
    Progress progress("gpuobs record: storing the capture", [&s] {
      WriterStats w = s.writer_stats();
      return w.launches + w.api_calls + w.ioctls + w.process_events;
    });
    sum = s.finish(status);
  }
  if (!sum) {
    print_error("gpuobs record", sum.error());
    return 1;
  }
  print_summary(a, status, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), *sum);
  if (a.gpu_time) import_gpu_time(a.session.output, gpu_time_file, gpu_time_cupti);
  return status;
}

// gpuobs's own file (the injection library and the schedule executor are installed next to it).
std::string self_exe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("gpuobs");
}

}  // namespace gpuobs::cli
