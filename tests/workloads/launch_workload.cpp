// Test workload with known ground truth: worker threads (and optionally a
// forked child process) call cuLaunchKernel / cuLaunchKernel_ptsz through a
// libcuda chosen at run time, with the arguments of launch_truth.h, and write
// what they did (pids, tids, counts) as JSON for the test to compare.
//
// usage: launch_workload --lib PATH --threads T --launches N
//                        [--child-launches M] --truth FILE
//        launch_workload --lib PATH --leader-exits-first --launches N --truth FILE
//          the main thread pthread_exit()s at once; a worker launches later:
//          the process is still alive and must still be recorded
//        launch_workload --lib PATH --die-in-sync THREADS
//          THREADS threads block in cuStreamSynchronize; exit() kills them inside it
//          [--hold-ms MS]: ... MS ms after they started (default 100)
//        [--rate R]: each thread launches at most R times per second
//        [--progress FILE]: every 50 ms, appends "MONO_NS COUNT" to FILE: COUNT
//          launches had returned (all threads) by CLOCK_MONOTONIC time MONO_NS
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "launch_truth.h"

using LaunchFn = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                         void**);

namespace {

LaunchFn g_launch, g_launch_ptsz;
uint32_t g_rate = 0;  // per thread and second; 0: as fast as it goes
// Launches returned, per worker (own cache line each), for --progress.
struct alignas(64) Progress {
  std::atomic<uint64_t> done{0};
};
Progress g_progress[64];

uint32_t run_worker(uint32_t worker, uint32_t launches, uint32_t* ptsz_calls) {
  uint32_t ptsz = 0;
  auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < launches; ++i) {
    if (g_rate && i % 64 == 0)
      std::this_thread::sleep_until(start + std::chrono::nanoseconds(uint64_t{i} * 1000000000ull / g_rate));
    auto a = gpuobs::testing::launch_args(worker, i);
    LaunchFn fn = a.ptsz && g_launch_ptsz ? g_launch_ptsz : g_launch;
    ptsz += fn == g_launch_ptsz;
    fn(reinterpret_cast<void*>(a.function), a.grid_x, a.grid_y, a.grid_z, a.block_x, a.block_y, a.block_z,
       a.shared_mem_bytes, reinterpret_cast<void*>(a.stream), reinterpret_cast<void**>(a.kernel_params), nullptr);
    if (worker < 64) g_progress[worker].done.store(i + 1, std::memory_order_release);
  }
  *ptsz_calls = ptsz;
  return static_cast<uint32_t>(::syscall(SYS_gettid));
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib, truth_path, progress_path;
  uint32_t threads = 1, launches = 1000, child_launches = 0, die_in_sync = 0, hold_ms = 100, linger_ms = 0;
  bool leader_exits_first = false;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--leader-exits-first") leader_exits_first = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--leader-exits-first") {
      --i;
      continue;
    }
    if (k == "--die-in-sync") die_in_sync = std::stoul(argv[i + 1]);
    else if (k == "--hold-ms") hold_ms = std::stoul(argv[i + 1]);
    else if (k == "--linger-ms") linger_ms = std::stoul(argv[i + 1]);
    else if (k == "--lib") lib = argv[i + 1];
    else if (k == "--threads") threads = std::stoul(argv[i + 1]);
    else if (k == "--launches") launches = std::stoul(argv[i + 1]);
    else if (k == "--child-launches") child_launches = std::stoul(argv[i + 1]);
    else if (k == "--truth") truth_path = argv[i + 1];
    else if (k == "--rate") g_rate = std::stoul(argv[i + 1]);
    else if (k == "--progress") progress_path = argv[i + 1];
  }
  void* h = dlopen(lib.c_str(), RTLD_NOW);
  if (!h) {
    std::fprintf(stderr, "launch_workload: %s\n", dlerror());
    return 1;
  }
  g_launch = reinterpret_cast<LaunchFn>(dlsym(h, "cuLaunchKernel"));
  g_launch_ptsz = reinterpret_cast<LaunchFn>(dlsym(h, "cuLaunchKernel_ptsz"));
  if (!g_launch) {
    std::fprintf(stderr, "launch_workload: no cuLaunchKernel in %s\n", lib.c_str());
    return 1;
  }

  if (leader_exits_first) {
    static std::string path;
    path = truth_path;
    static uint32_t n;
    n = launches;
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the leader is gone by now
      uint32_t ptsz = 0;
      uint32_t tid = run_worker(0, n, &ptsz);
      nlohmann::json t;
      t["pid"] = ::getpid();
      t["workers"].push_back({{"worker", 0}, {"tid", tid}, {"launches", n}, {"ptsz", ptsz}});
      std::ofstream(path) << t.dump(2);
      std::exit(0);
    }).detach();
    ::pthread_exit(nullptr);
  }
  if (die_in_sync) {
    using SyncFn = int (*)(void*);
    auto sync = reinterpret_cast<SyncFn>(dlsym(h, "cuStreamSynchronize"));
    if (!sync) return 1;
    for (uint32_t t = 0; t < die_in_sync; ++t)
      std::thread([sync] {
        for (;;) sync(nullptr);
      }).detach();
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    std::exit(0);  // every worker is inside cuStreamSynchronize (FAKE_CUDA_SYNC_US set high)
  }

  if (!progress_path.empty()) {
    int fd = ::open(progress_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      std::perror(progress_path.c_str());
      return 1;
    }
    std::thread([fd] {
      for (;;) {
        // The count first, then the time: every launch counted returned before it.
        uint64_t n = 0;
        for (auto& p : g_progress) n += p.done.load(std::memory_order_acquire);
        timespec ts{};
        ::clock_gettime(CLOCK_MONOTONIC, &ts);
        char line[64];
        int len = std::snprintf(line, sizeof line, "%lld %llu\n",
                                static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec,
                                static_cast<unsigned long long>(n));
        (void)!::write(fd, line, static_cast<size_t>(len));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }).detach();
  }

  nlohmann::json truth;
  truth["pid"] = ::getpid();
  std::vector<uint32_t> tids(threads), ptsz(threads);
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < threads; ++t) pool.emplace_back([&, t] { tids[t] = run_worker(t, launches, &ptsz[t]); });
  for (auto& th : pool) th.join();
  for (uint32_t t = 0; t < threads; ++t)
    truth["workers"].push_back({{"worker", t}, {"tid", tids[t]}, {"launches", launches}, {"ptsz", ptsz[t]}});

  if (child_launches) {
    // The child is worker number `threads`, on its main thread.
    int fds[2];
    if (::pipe(fds) != 0) return 1;
    pid_t child = ::fork();
    if (child == 0) {
      uint32_t p = 0;
      uint32_t tid = run_worker(threads, child_launches, &p);
      uint32_t msg[2] = {tid, p};
      (void)!::write(fds[1], msg, sizeof msg);
      ::_exit(0);
    }
    uint32_t msg[2] = {0, 0};
    (void)!::read(fds[0], msg, sizeof msg);
    int st = 0;
    ::waitpid(child, &st, 0);
    truth["child"] = {{"pid", child},   {"worker", threads},
                      {"tid", msg[0]},  {"launches", child_launches},
                      {"ptsz", msg[1]}, {"exit_ok", WIFEXITED(st) && WEXITSTATUS(st) == 0}};
  }
  std::ofstream(truth_path) << truth.dump(2);
  // Alive a while after the last launch, as every real GPU program is (tests
  // that are not about processes gone before their stacks are named).
  std::this_thread::sleep_for(std::chrono::milliseconds(linger_ms));
  return 0;
}
