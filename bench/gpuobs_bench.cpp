// gpuobs_bench: what a probe costs the application, always against its floor.
//
//   gpuobs_bench launch-loop --lib LIBCUDA [--calls N] [--rounds R]
//     Times a tight cuLaunchKernel loop (in a child process) three ways in one
//     run, alternating rounds: no probe, an empty uprobe on the same symbols
//     (the floor: the trap alone), and gpuobs recording it. Prints ns per call,
//     the medians, and gpuobs's added cost as a multiple of the floor's.
//   gpuobs_bench api-loop --lib LIBCUDA [--calls N] [--rounds R]
//     The same for one API of each probe shape (entry only, config blob,
//     entry + return, out-value, string blob); for calls gpuobs probes at
//     entry and return, the floor is an empty entry and an empty return probe.
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

using LaunchFn = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                         void**);

double now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

// One benchmarked call: the symbol, whether gpuobs probes its return too, and
// how to call it (canned arguments with the real ABI).
struct ApiCase {
  const char* symbol;
  bool with_return;
  void (*call)(void* fn);
};

struct LaunchConfig {
  unsigned g[3], b[3], shmem, pad;
  void* stream;
  void* attrs;
  unsigned n, pad2;
};

const ApiCase kCases[] = {
    {"cuLaunchKernel", false,
     [](void* fn) {
       reinterpret_cast<LaunchFn>(fn)(reinterpret_cast<void*>(0x1234), 1, 1, 1, 32, 1, 1, 0,
                                      reinterpret_cast<void*>(0x5000), nullptr, nullptr);
     }},
    {"cuLaunchKernelEx", false,
     [](void* fn) {
       static LaunchConfig cfg{{1, 1, 1}, {32, 1, 1}, 0, 0, reinterpret_cast<void*>(0x5000), nullptr, 0, 0};
       reinterpret_cast<int (*)(const void*, void*, void**, void**)>(fn)(&cfg, reinterpret_cast<void*>(0x1234), nullptr,
                                                                         nullptr);
     }},
    {"cuMemcpyHtoDAsync_v2", true,
     [](void* fn) {
       static char host[64];
       reinterpret_cast<int (*)(unsigned long long, const void*, size_t, void*)>(fn)(
           0x7f0000000000ull, host, sizeof host, reinterpret_cast<void*>(0x5000));
     }},
    {"cuEventRecord", true,
     [](void* fn) {
       reinterpret_cast<int (*)(void*, void*)>(fn)(reinterpret_cast<void*>(0xe0), reinterpret_cast<void*>(0x5000));
     }},
    {"cuMemAlloc_v2", true,
     [](void* fn) {
       unsigned long long p = 0;
       reinterpret_cast<int (*)(unsigned long long*, size_t)>(fn)(&p, 4096);
     }},
    {"cuModuleGetFunction", true,
     [](void* fn) {
       void* f = nullptr;
       reinterpret_cast<int (*)(void**, void*, const char*)>(fn)(&f, reinterpret_cast<void*>(0x3000), "_Z6squarePfi");
     }},
};

// The timed loop, run 64 KiB below the child's initial stack pointer: a
// --unwind dwarf stack copy then reads its full size, as it does in deep
// real stacks (PyTorch), instead of stopping at the top of a shallow one.
__attribute__((noinline)) double deep_loop(void* fn, long calls, const ApiCase& c) {
  volatile char depth[64 << 10];
  depth[0] = 1;  // touched at both ends (two statements: C++20 deprecates chained volatile assignment)
  depth[sizeof depth - 1] = 1;
  for (long i = 0; i < kWarmupCalls; ++i) c.call(fn);  // warm up
  // The recorder has seen the process now: give it time to read its mappings
  // and, with --unwind bpf, to load its unwind tables before the timed loop.
  usleep(300000);
  double t0 = now_ns();
  for (long i = 0; i < calls; ++i) c.call(fn);
  double per_call = (now_ns() - t0) / static_cast<double>(calls);
  return per_call + depth[0] * 0.0;
}

// Forks a child that waits for `release`, runs the loop and sends back ns/call.
struct LoopChild {
  pid_t pid = -1;
  int go_w = -1, res_r = -1;
};

LoopChild spawn_loop(const std::string& lib, long calls, const ApiCase& c) {
  int go[2], res[2];
  if (pipe(go) || pipe(res)) std::exit(1);
  pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    close(res[0]);
    void* h = dlopen(lib.c_str(), RTLD_NOW);
    void* fn = h ? dlsym(h, c.symbol) : nullptr;
    char go_byte;
    if (!fn || read(go[0], &go_byte, 1) != 1) _exit(1);
    double per_call = deep_loop(fn, calls, c);
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

double run_none(const std::string& lib, long calls, const ApiCase& ac) {
  LoopChild c = spawn_loop(lib, calls, ac);
  release(c);
  return finish_loop(c);
}

double run_empty(const LibraryFile& lib, long calls, const ApiCase& ac) {
  EngineOptions o;
  o.attach_ioctl = o.attach_process = false;
  auto e = Engine::create(o);
  if (!e) {
    print_error("gpuobs_bench", e.error());
    std::exit(1);
  }
  for (auto& r : (*e)->attach_empty_probes(lib, {ac.symbol}, ac.with_return))
    if (r.status != ProbeStatus::attached) {
      std::fprintf(stderr, "empty probe %s: %s\n", r.symbol.c_str(), r.error.c_str());
      std::exit(1);
    }
  LoopChild c = spawn_loop(lib.path, calls, ac);
  release(c);
  return finish_loop(c);
}

double run_gpuobs(const LibraryFile& lib, long calls, const ApiCase& ac, uint64_t* stored, uint32_t stack_depth,
                  uint32_t copy_bytes = 0, bool bpf_unwind = false) {
  char tmpl[] = "/tmp/gpuobs-bench-XXXXXX";
  if (!mkdtemp(tmpl)) std::exit(1);
  std::string out = std::string(tmpl) + "/bench.gpuobs";
  SessionOptions so;
  so.output = out;
  so.mode = CaptureMode::record;
  so.only_tracked = true;
  so.libcuda_paths = {lib.path};
  so.gpu_devices = false;
  so.stack_depth = stack_depth;
  so.unwind = bpf_unwind ? UnwindMode::bpf : copy_bytes ? UnwindMode::dwarf : UnwindMode::fp;
  so.stack_copy_bytes = copy_bytes ? copy_bytes : so.stack_copy_bytes;
  so.ring_bytes = 256u << 20;
  auto s = Session::create(so);
  if (!s) {
    print_error("gpuobs_bench", s.error());
    std::exit(1);
  }
  LoopChild c = spawn_loop(lib.path, calls, ac);
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
  *stored = sum ? sum->launches + sum->api_calls : 0;
  std::string cleanup = std::string("rm -rf ") + tmpl;
  if (std::system(cleanup.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", tmpl);
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Medians {
  // gpuobs: frame-pointer stacks (64 frames); nostack: --stack-depth 0;
  // dwarf16/dwarf32: --unwind dwarf with a 16/32 KiB stack copy
  double none, floor, gpuobs, nostack, dwarf16, dwarf32, bpf;  // bpf: --unwind bpf
};

Medians run_case(const LibraryFile& lib, const ApiCase& ac, long calls, int rounds, bool verbose) {
  std::vector<double> none, empty, full, nostack, dwarf16, dwarf32, bpf;
  if (verbose) {
    std::printf("%-6s %14s %14s %14s %16s %12s\n", "round", "none ns/call", "empty ns/call", "gpuobs ns/call",
                "no-stack ns/call", "stored");
    std::printf("(stored counts the %ld warm-up calls too)\n", kWarmupCalls);
  }
  for (int r = 0; r < rounds; ++r) {
    uint64_t stored = 0;
    none.push_back(run_none(lib.path, calls, ac));
    empty.push_back(run_empty(lib, calls, ac));
    full.push_back(run_gpuobs(lib, calls, ac, &stored, 64));
    uint64_t stored_nostack = 0;
    nostack.push_back(run_gpuobs(lib, calls, ac, &stored_nostack, 0));
    uint64_t stored_d16 = 0, stored_d32 = 0;
    dwarf16.push_back(run_gpuobs(lib, calls, ac, &stored_d16, 64, 16384));
    dwarf32.push_back(run_gpuobs(lib, calls, ac, &stored_d32, 64, 32768));
    uint64_t stored_bpf = 0;
    bpf.push_back(run_gpuobs(lib, calls, ac, &stored_bpf, 64, 0, true));
    bool lost = stored != static_cast<uint64_t>(calls + kWarmupCalls) ||
                stored_nostack != static_cast<uint64_t>(calls + kWarmupCalls) ||
                stored_d16 != static_cast<uint64_t>(calls + kWarmupCalls) ||
                stored_d32 != static_cast<uint64_t>(calls + kWarmupCalls);
    if (verbose || lost)
      std::printf("%-6d %14.1f %14.1f %14.1f %16.1f %12llu%s\n", r, none.back(), empty.back(), full.back(),
                  nostack.back(), static_cast<unsigned long long>(stored), lost ? "  (LOST)" : "");
  }
  return {median(none), median(empty), median(full), median(nostack), median(dwarf16), median(dwarf32), median(bpf)};
}

struct LoopArgs {
  std::string lib;
  long calls = 200000;
  int rounds = 5;
};

LoopArgs parse_loop_args(int argc, char** argv) {
  LoopArgs a;
  for (int i = 0; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--lib")) a.lib = argv[i + 1];
    else if (!std::strcmp(argv[i], "--calls")) a.calls = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds")) a.rounds = std::atoi(argv[i + 1]);
  }
  return a;
}

int launch_loop(int argc, char** argv) {
  LoopArgs a = parse_loop_args(argc, argv);
  auto lib = library_file(a.lib);
  if (!lib) {
    print_error("gpuobs_bench", lib.error());
    return 2;
  }
  std::printf("launch loop: %ld cuLaunchKernel calls per run, %d rounds, library %s\n", a.calls, a.rounds,
              lib->realpath.c_str());
  Medians m = run_case(*lib, kCases[0], a.calls, a.rounds, true);
  std::printf("median: none %.1f ns, empty uprobe (floor) %.1f ns, gpuobs %.1f ns per call\n", m.none, m.floor,
              m.gpuobs);
  std::printf("added per call: floor %.1f ns, gpuobs %.1f ns = %.2fx the floor\n", m.floor - m.none, m.gpuobs - m.none,
              (m.gpuobs - m.none) / (m.floor - m.none));
  std::printf(
      "without stacks (--stack-depth 0): %.1f ns per call, %.1f ns added = %.2fx the floor; "
      "the stack costs %.1f ns per call\n",
      m.nostack, m.nostack - m.none, (m.nostack - m.none) / (m.floor - m.none), m.gpuobs - m.nostack);
  std::printf(
      "--unwind dwarf: 16 KiB copy %.1f ns per call (%.1f ns more than no stack), "
      "32 KiB copy %.1f ns (%.1f ns more)\n",
      m.dwarf16, m.dwarf16 - m.nostack, m.dwarf32, m.dwarf32 - m.nostack);
  std::printf("--unwind bpf: %.1f ns per call (%.1f ns more than no stack)\n", m.bpf, m.bpf - m.nostack);
  return 0;
}

int api_loop(int argc, char** argv) {
  LoopArgs a = parse_loop_args(argc, argv);
  auto lib = library_file(a.lib);
  if (!lib) {
    print_error("gpuobs_bench", lib.error());
    return 2;
  }
  std::printf("api loop: %ld calls per run, %d rounds per API, medians in ns per call, library %s\n", a.calls, a.rounds,
              lib->realpath.c_str());
  std::printf("%-22s %-13s %9s %9s %9s %9s %9s %9s %9s %11s %11s %8s\n", "api", "probes", "none", "floor", "gpuobs",
              "no-stack", "dwarf16k", "dwarf32k", "bpf", "floor+", "gpuobs+", "x floor");
  for (const ApiCase& ac : kCases) {
    Medians m = run_case(*lib, ac, a.calls, a.rounds, false);
    std::printf("%-22s %-13s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %11.1f %11.1f %8.2f\n", ac.symbol,
                ac.with_return ? "entry+return" : "entry", m.none, m.floor, m.gpuobs, m.nostack, m.dwarf16, m.dwarf32,
                m.bpf, m.floor - m.none, m.gpuobs - m.none, (m.gpuobs - m.none) / (m.floor - m.none));
  }
  return 0;
}

int floor_cmd(int argc, char** argv) {
  std::vector<std::string> libs;
  int i = 0;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
    if (!std::strcmp(argv[i], "--libcuda") && i + 1 < argc) libs.push_back(argv[++i]);
  if (i >= argc - 1) {
    std::fprintf(stderr, "usage: gpuobs_bench floor --libcuda LIB -- CMD...\n");
    return 2;
  }
  EngineOptions o;
  o.attach_ioctl = o.attach_process = false;
  auto e = Engine::create(o);
  if (!e) {
    print_error("gpuobs_bench", e.error());
    return 1;
  }
  if (libs.empty())
    for (auto& f : discover_libcuda()) libs.push_back(f.path);
  int attached = 0;
  for (auto& p : libs) {
    auto f = library_file(p);
    if (!f) {
      print_error("gpuobs_bench", f.error());
      return 2;
    }
    for (auto& r : (*e)->attach_empty_probes(
             *f, {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz"}))
      attached += r.status == ProbeStatus::attached;
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
  if (argc >= 2 && !std::strcmp(argv[1], "api-loop")) return api_loop(argc - 2, argv + 2);
  if (argc >= 2 && !std::strcmp(argv[1], "floor")) return floor_cmd(argc - 2, argv + 2);
  std::fprintf(stderr,
               "usage: gpuobs_bench launch-loop --lib LIB [--calls N] [--rounds R]\n"
               "       gpuobs_bench api-loop --lib LIB [--calls N] [--rounds R]\n"
               "       gpuobs_bench floor [--libcuda LIB] -- CMD ARGS...\n");
  return 2;
}
