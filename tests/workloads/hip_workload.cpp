// Test workload for the HIP runtime probes: several threads call every probed
// family through a real libamdhip64 (Debian's libamdhip64-5). Without a GPU
// each call fails (hipErrorNoDevice) but runs inside the library, so its
// probes fire with the arguments given here. Ground truth as JSON: per
// thread, how often each symbol was called, and the arguments that identify
// the calls (sizes, grids, streams).
//
// usage: hip_workload --lib PATH --threads T --iterations N --truth FILE
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "workload_args.h"

namespace {

// HIP's dim3 (hip_runtime_api.h): 12 bytes, passed by value in two registers.
struct dim3 {
  uint32_t x, y, z;
};
using H = void*;

void* g_lib;

// Host stubs: hipLaunchKernel receives the address of one of these, which
// __hipRegisterFunction has mapped to the kernel's device name.
extern "C" void stub_axpy() { asm volatile(""); }
extern "C" void stub_scale() { asm volatile(""); }

struct Thread {
  std::map<std::string, int> counts;
  int last = 0;

  template <class... A>
  int call(const char* name, A... args) {
    ++counts[name];
    auto fn = reinterpret_cast<int (*)(A...)>(dlsym(g_lib, name));
    if (!fn) {
      std::fprintf(stderr, "hip_workload: %s missing\n", name);
      std::exit(1);
    }
    return last = fn(args...);
  }
};

// Thread t's arguments are distinct: sizes and grids carry t, so every
// captured row can be traced to its thread.
void run(uint32_t t, uint32_t iterations, Thread& th) {
  H stream = reinterpret_cast<H>(0x5000 + t), event = reinterpret_cast<H>(0x6000 + t);
  H fn = reinterpret_cast<H>(0x7000 + t);
  char host[256];
  void* dev = nullptr;
  for (uint32_t i = 0; i < iterations; ++i) {
    th.call("hipMalloc", &dev, size_t{4096} * (t + 1));
    th.call("hipHostMalloc", &dev, size_t{8192} * (t + 1), 0u);
    th.call("hipMemcpy", static_cast<void*>(host), static_cast<const void*>(host), size_t{100 + t}, 1);
    th.call("hipMemcpyAsync", static_cast<void*>(host), static_cast<const void*>(host), size_t{200 + t}, 2, stream);
    th.call("hipMemsetAsync", static_cast<void*>(host), 7, size_t{64 + t}, stream);
    th.call("hipLaunchKernel", reinterpret_cast<const void*>(&stub_axpy), dim3{4 + t, 2, 1}, dim3{64, 2, 1},
            static_cast<void**>(nullptr), size_t{256}, stream);
    th.call("hipLaunchKernel_spt", reinterpret_cast<const void*>(&stub_scale), dim3{8, 1, 3}, dim3{32, 1, 1},
            static_cast<void**>(nullptr), size_t{0}, static_cast<H>(nullptr));
    th.call("hipModuleLaunchKernel", fn, 3u, 2u, 1u, 128u, 1u, 1u, 512u, stream, static_cast<void**>(nullptr),
            static_cast<void**>(nullptr));
    th.call("hipEventRecord", event, stream);
    th.call("hipStreamWaitEvent", stream, event, 0u);
    th.call("hipStreamSynchronize", stream);
    th.call("hipDeviceSynchronize");
    th.call("hipFree", dev);
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto args = gpuobs::testing::parse_workload_args(argc, argv, 1, 1);
  const std::string& truth_path = args.truth_path;
  const uint32_t threads = args.threads, iterations = args.iterations;
  g_lib = gpuobs::testing::open_runtime(args, "hip_workload");
  if (!g_lib) return 1;
  // What a HIP binary's constructors do: register each kernel's host stub.
  Thread main_thread;
  static void* modules[4];
  char axpy[] = "_Z4axpyfPKfPf", scale[] = "_Z5scalePf";
  main_thread.call("__hipRegisterFunction", static_cast<void**>(modules), reinterpret_cast<const void*>(&stub_axpy),
                   axpy, static_cast<const char*>(axpy), -1, H{}, H{}, H{}, H{}, static_cast<int*>(nullptr));
  main_thread.call("__hipRegisterFunction", static_cast<void**>(modules), reinterpret_cast<const void*>(&stub_scale),
                   scale, static_cast<const char*>(scale), -1, H{}, H{}, H{}, H{}, static_cast<int*>(nullptr));
  std::vector<Thread> state(threads);
  std::vector<std::thread> pool;
  nlohmann::json truth = {{"pid", ::getpid()}, {"threads", nlohmann::json::array()}};
  std::vector<long> tids(threads);
  for (uint32_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      tids[t] = ::syscall(SYS_gettid);
      run(t, iterations, state[t]);
    });
  for (auto& th : pool) th.join();
  for (uint32_t t = 0; t < threads; ++t)
    truth["threads"].push_back({{"index", t}, {"tid", tids[t]}, {"counts", state[t].counts}});
  truth["main_counts"] = main_thread.counts;
  truth["stub_axpy"] = reinterpret_cast<uint64_t>(&stub_axpy);
  truth["stub_scale"] = reinterpret_cast<uint64_t>(&stub_scale);
  truth["error"] = state.empty() ? 0 : state[0].last;  // what the runtime returns without a GPU
  std::ofstream(truth_path) << truth.dump(2);
  return 0;
}
