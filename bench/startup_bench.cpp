// What gpuobsd's hold costs a process start (issue 37): the wall time from
// spawn to exit of a short CUDA program (lib_needed_workload: libcuda.so.1
// through LD_LIBRARY_PATH, one cuInit and LAUNCHES launches, no delay), in
// three cases measured in one run:
//   none   no gpuobsd (the floor), before and after the daemon's rounds;
//   known  gpuobsd running, the library already carries probes (a root-owned
//          file in a root-only directory, kept attached): no hold;
//   new    gpuobsd running, a copy of the library made just before each run
//          in a new directory: held at its mapping until its probes exist.
// known and new alternate run by run. Then the daemon's capture gives the
// holds' distribution (library_maps.held_ns) and whether every mapping was
// attached before the process could call it.
//
// usage: startup_bench --gpuobsd PATH --workload PATH --lib PATH [--runs N]
//          [--launches N] [--gpuobs PATH]
// Root; run by hand, never by the test suite (bench/README.md).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <sqlite3.h>

#include "store/db.h"
#include "store/schema.h"

extern char** environ;
namespace fs = std::filesystem;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One run of argv with LD_LIBRARY_PATH=llp: spawn to exit, in ms (-1: failed).
double time_run(const std::vector<std::string>& argv, const std::string& llp) {
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "LD_LIBRARY_PATH=", 16) != 0) env_s.emplace_back(*e);
  env_s.push_back("LD_LIBRARY_PATH=" + llp);
  std::vector<char*> env, args;
  for (auto& e : env_s) env.push_back(e.data());
  env.push_back(nullptr);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  double t0 = now_ms();
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
  return now_ms() - t0;
}

struct Stats {
  double min = 0, median = 0, p90 = 0, max = 0;
};
Stats stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.median = v[v.size() / 2];
  s.p90 = v[std::min(v.size() - 1, v.size() * 9 / 10)];
  s.max = v.back();
  return s;
}
void print(const char* what, const std::vector<double>& v) {
  Stats s = stats(v);
  std::printf("%-34s %5zu runs  min %7.2f  median %7.2f  p90 %7.2f  max %7.2f ms\n", what, v.size(), s.min, s.median,
              s.p90, s.max);
}

}  // namespace

int main(int argc, char** argv) {
  std::string gpuobsd, workload, lib;
  int runs = 100, launches = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--gpuobsd") gpuobsd = argv[i + 1];
    else if (k == "--workload") workload = argv[i + 1];
    else if (k == "--lib") lib = argv[i + 1];
    else if (k == "--runs") runs = std::atoi(argv[i + 1]);
    else if (k == "--launches") launches = std::atoi(argv[i + 1]);
  }
  if (gpuobsd.empty() || workload.empty() || lib.empty() || runs < 1) {
    std::fprintf(stderr, "usage: startup_bench --gpuobsd PATH --workload PATH --lib PATH [--runs N] [--launches N]\n");
    return 2;
  }
  // Under /run (root's, mode 755): a trusted location, so the "known" copy
  // stays attached between its processes, as the system's libcuda does.
  char tmpl[] = "/run/gpuobs-startup-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  ::chmod(dir.c_str(), 0755);
  fs::create_directories(dir + "/known");
  fs::create_directories(dir + "/empty");
  fs::copy_file(lib, dir + "/known/libcuda.so.1");
  const std::vector<std::string> cmd = {workload, std::to_string(launches), "0"};

  std::vector<double> none, known, fresh;
  for (int i = 0; i < runs / 2 + 2; ++i) {  // 2 warm-up runs
    double t = time_run(cmd, dir + "/known");
    if (t < 0) {
      std::fprintf(stderr, "the workload failed: %s\n", workload.c_str());
      return 1;
    }
    if (i >= 2) none.push_back(t);
  }

  const std::string db = dir + "/d.gpuobs", log = dir + "/daemon.log";
  pid_t d = fork();
  if (d == 0) {
    if (!freopen(log.c_str(), "w", stderr)) _exit(126);
    setenv("GPUOBS_LIBCUDA_SEARCH_PATH", (dir + "/empty").c_str(), 1);
    setenv("GPUOBS_LIBHIP_SEARCH_PATH", (dir + "/empty").c_str(), 1);
    execl(gpuobsd.c_str(), gpuobsd.c_str(), "--db", db.c_str(), "--no-gpu-devices", "--status-file",
          (dir + "/status.json").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto log_has = [&](const char* s) {
    FILE* f = fopen(log.c_str(), "r");
    if (!f) return false;
    char buf[4096];
    bool found = false;
    while (!found && fgets(buf, sizeof buf, f)) found = std::strstr(buf, s) != nullptr;
    fclose(f);
    return found;
  };
  for (int i = 0; i < 600 && !log_has("capturing to"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // The known copy's first process is held once; later ones find it attached.
  time_run(cmd, dir + "/known");
  time_run(cmd, dir + "/known");
  for (int i = 0; i < runs; ++i) {
    known.push_back(time_run(cmd, dir + "/known"));
    const std::string nd = dir + "/new" + std::to_string(i);
    fs::create_directories(nd);
    fs::copy_file(lib, nd + "/libcuda.so.1");
    fresh.push_back(time_run(cmd, nd));
    // Gone again, as a pip cache or a test's copy goes: its probes are
    // released at the next rescan (a root-owned file in a root-only
    // directory stays attached while installed, and 64 such files would
    // reach library_max_files).
    fs::remove_all(nd);
  }
  kill(d, SIGTERM);
  waitpid(d, nullptr, 0);
  for (int i = 0; i < runs / 2; ++i) none.push_back(time_run(cmd, dir + "/known"));

  std::printf("process start to exit (%s, %d launch%s):\n", fs::path(workload).filename().c_str(), launches,
              launches == 1 ? "" : "es");
  print("no gpuobsd (floor)", none);
  print("gpuobsd, library attached before", known);
  print("gpuobsd, new library (held)", fresh);
  Stats n = stats(none), k = stats(known), f = stats(fresh);
  std::printf("median cost: %+.2f ms with the library attached before, %+.2f ms for a new library (the hold)\n",
              k.median - n.median, f.median - n.median);

  auto cap = gpuobs::open_capture_readonly(db);
  if (!cap) {
    std::fprintf(stderr, "%s\n", cap.error().message.c_str());
    return 1;
  }
  std::vector<double> holds;
  long long maps = 0, missed = 0;
  {
    sqlite3_stmt* q = nullptr;
    sqlite3_prepare_v2(cap->get(), "SELECT hold = 'held', coalesce(held_ns, 0), calls_before_attach FROM library_maps",
                       -1, &q, nullptr);
    while (q && sqlite3_step(q) == SQLITE_ROW) {
      ++maps;
      if (sqlite3_column_int(q, 0)) holds.push_back(static_cast<double>(sqlite3_column_int64(q, 1)) / 1e6);
      missed += sqlite3_column_int(q, 2);
    }
    sqlite3_finalize(q);
  }
  print("hold (mapping to SIGCONT)", holds);
  std::printf("mappings: %lld, attached before the process could call: %lld (%.1f%%)\n", maps, maps - missed,
              maps ? 100.0 * static_cast<double>(maps - missed) / static_cast<double>(maps) : 0.0);
  {
    // What the misses were, if any.
    sqlite3_stmt* q = nullptr;
    sqlite3_prepare_v2(cap->get(),
                       "SELECT hold, coalesce(reason, ''), count(*) FROM library_maps WHERE calls_before_attach = 1"
                       " GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 5",
                       -1, &q, nullptr);
    while (q && sqlite3_step(q) == SQLITE_ROW)
      std::printf("  could call unseen: %d x %s: %s\n", sqlite3_column_int(q, 2),
                  reinterpret_cast<const char*>(sqlite3_column_text(q, 0)),
                  reinterpret_cast<const char*>(sqlite3_column_text(q, 1)));
    sqlite3_finalize(q);
  }
  if (std::getenv("GPUOBS_BENCH_KEEP")) std::printf("kept %s\n", dir.c_str());
  else fs::remove_all(dir);
  return 0;
}
