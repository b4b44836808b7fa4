// gpuobs_bench: what a probe costs the application, always against its floor.
//
//   gpuobs_bench launch-loop --lib LIBCUDA [--calls N] [--rounds R]
//     Times a tight cuLaunchKernel loop (in a child process) three ways in one
//     run, alternating rounds: no probe, an empty uprobe on the same symbols
//     (the floor: the trap alone), and gpuobs recording it. Prints ns per call,
//     the medians, and gpuobs's added cost as a multiple of the floor's.
//   gpuobs_bench floor --libcuda LIBCUDA -- CMD ARGS...
//     Runs CMD with only the empty uprobes attached on the launch symbols, for
//     timing real programs (bench/h100/) against the same floor.
#include <dlfcn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capture/session.h"
#include "common/log.h"
#include "loader/engine.h"

using namespace gpuobs;

namespace {

constexpr long kWarmupCalls = 1000;

using LaunchFn = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                         void**, void**);

double now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

// Forks a child that waits for `release`, runs the loop and sends back ns/call.
struct LoopChild {
  pid_t pid = -1;
  int go_w = -1, res_r = -1;
};

LoopChild spawn_loop(const std::string& lib, long calls) {
  int go[2], res[2];
  if (pipe(go) || pipe(res)) std::exit(1);
  pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    close(res[0]);
    void* h = dlopen(lib.c_str(), RTLD_NOW);
    auto fn = h ? reinterpret_cast<LaunchFn>(dlsym(h, "cuLaunchKernel")) : nullptr;
    char c;
    if (!fn || read(go[0], &c, 1) != 1) _exit(1);
    void* f = reinterpret_cast<void*>(0x1234);
    void* stream = reinterpret_cast<void*>(0x5000);
    for (long i = 0; i < kWarmupCalls; ++i) fn(f, 1, 1, 1, 32, 1, 1, 0, stream, nullptr, nullptr);  // warm up
    double t0 = now_ns();
    for (long i = 0; i < calls; ++i) fn(f, 1, 1, 1, 32, 1, 1, 0, stream, nullptr, nullptr);
    double per_call = (now_ns() - t0) / static_cast<double>(calls);
    if (write(res[1], &per_call, sizeof per_call) != sizeof per_call) _exit(1);
    _exit(0);
  }
  close(go[0]);
  close(res[1]);
  return LoopChild{pid, go[1], res[0]};
}

double finish_loop(LoopChild& c) {
  double v = -1;
  if (read(c.res_r, &v, sizeof v) != sizeof v) v = -1;
  waitpid(c.pid, nullptr, 0);
  close(c.res_r);
  return v;
}

void release(LoopChild& c) {
  if (write(c.go_w, "g", 1) != 1) std::exit(1);
  close(c.go_w);
}

double run_none(const std::string& lib, long calls) {
  LoopChild c = spawn_loop(lib, calls);
  release(c);
  return finish_loop(c);
}

double run_empty(const LibraryFile& lib, long calls) {
  EngineOptions o;
  o.attach_ioctl = o.attach_process = false;
  auto e = Engine::create(o);
  if (!e) { print_error("gpuobs_bench", e.error()); std::exit(1); }
  for (auto& r : (*e)->attach_empty_probes(lib))
    if (r.status != "attached") { std::fprintf(stderr, "empty probe %s: %s\n", r.symbol.c_str(), r.error.c_str()); std::exit(1); }
  LoopChild c = spawn_loop(lib.path, calls);
  release(c);
  return finish_loop(c);
}

double run_gpuobs(const LibraryFile& lib, long calls, uint64_t* stored) {
  char tmpl[] = "/tmp/gpuobs-bench-XXXXXX";
  if (!mkdtemp(tmpl)) std::exit(1);
  std::string out = std::string(tmpl) + "/bench.gpuobs";
  SessionOptions so;
  so.output = out;
  so.mode = "record";
  so.only_tracked = true;
  so.libcuda_paths = {lib.path};
  so.gpu_devices = false;
  auto s = Session::create(so);
  if (!s) { print_error("gpuobs_bench", s.error()); std::exit(1); }
  LoopChild c = spawn_loop(lib.path, calls);
  if (!(*s)->track_root(static_cast<uint32_t>(c.pid))) std::exit(1);
  release(c);
  double v = -1;
  // The recorder consumes while the loop runs, as gpuobs record does.
  for (;;) {
    (*s)->poll(50);
    int st;
    if (waitpid(c.pid, &st, WNOHANG) == c.pid) {
      if (read(c.res_r, &v, sizeof v) != sizeof v) v = -1;
      break;
    }
  }
  auto sum = (*s)->finish(0);
  *stored = sum ? sum->launches : 0;
  std::string cleanup = std::string("rm -rf ") + tmpl;
  if (std::system(cleanup.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", tmpl);
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int launch_loop(int argc, char** argv) {
  std::string lib_path;
  long calls = 200000;
  int rounds = 5;
  for (int i = 0; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--lib")) lib_path = argv[i + 1];
    else if (!std::strcmp(argv[i], "--calls")) calls = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
  }
  auto lib = library_file(lib_path);
  if (!lib) { print_error("gpuobs_bench", lib.error()); return 2; }
  std::vector<double> none, empty, full;
  std::printf("launch loop: %ld cuLaunchKernel calls per run, %d rounds, library %s\n", calls, rounds,
              lib->realpath.c_str());
  std::printf("%-6s %14s %14s %14s %12s\n", "round", "none ns/call", "empty ns/call", "gpuobs ns/call",
              "stored");
  std::printf("(stored counts the %ld warm-up calls too)\n", kWarmupCalls);
  for (int r = 0; r < rounds; ++r) {
    uint64_t stored = 0;
    none.push_back(run_none(lib->path, calls));
    empty.push_back(run_empty(*lib, calls));
    full.push_back(run_gpuobs(*lib, calls, &stored));
    std::printf("%-6d %14.1f %14.1f %14.1f %12llu%s\n", r, none.back(), empty.back(), full.back(),
                static_cast<unsigned long long>(stored), stored == static_cast<uint64_t>(calls + kWarmupCalls) ? "" : "  (LOST)");
  }
  double n = median(none), e = median(empty), g = median(full);
  std::printf("median: none %.1f ns, empty uprobe (floor) %.1f ns, gpuobs %.1f ns per call\n", n, e, g);
  std::printf("added per call: floor %.1f ns, gpuobs %.1f ns = %.2fx the floor\n", e - n, g - n, (g - n) / (e - n));
  return 0;
}

int floor_cmd(int argc, char** argv) {
  std::vector<std::string> libs;
  int i = 0;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
    if (!std::strcmp(argv[i], "--libcuda") && i + 1 < argc) libs.push_back(argv[++i]);
  if (i >= argc - 1) { std::fprintf(stderr, "usage: gpuobs_bench floor --libcuda LIB -- CMD...\n"); return 2; }
  EngineOptions o;
  o.attach_ioctl = o.attach_process = false;
  auto e = Engine::create(o);
  if (!e) { print_error("gpuobs_bench", e.error()); return 1; }
  if (libs.empty())
    for (auto& f : discover_libcuda()) libs.push_back(f.path);
  int attached = 0;
  for (auto& p : libs) {
    auto f = library_file(p);
    if (!f) { print_error("gpuobs_bench", f.error()); return 2; }
    for (auto& r : (*e)->attach_empty_probes(*f)) attached += r.status == "attached";
  }
  std::fprintf(stderr, "gpuobs_bench floor: %d empty uprobes attached\n", attached);
  pid_t pid = fork();
  if (pid == 0) {
    execvp(argv[i + 1], argv + i + 1);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  log_init("warn");
  if (argc >= 2 && !std::strcmp(argv[1], "launch-loop")) return launch_loop(argc - 2, argv + 2);
  if (argc >= 2 && !std::strcmp(argv[1], "floor")) return floor_cmd(argc - 2, argv + 2);
  std::fprintf(stderr, "usage: gpuobs_bench launch-loop --lib LIB [--calls N] [--rounds R]\n"
                       "       gpuobs_bench floor [--libcuda LIB] -- CMD ARGS...\n");
  return 2;
}
