// A workload with knobs that change it in known ways, for gpuobs diff and
// the idle-time reports. Three threads each run --steps iterations:
//   launcher: stepA and stepB on stream 1, then cuStreamSynchronize(stream 1)
//             (200 us in the fake); --extra-kernel 1 adds extraKernel on
//             stream 3 (created in every run, used only then);
//   idler:    stepC on stream 2, cuStreamSynchronize(stream 2), then sleeps
//             --idle-ms ms (stream 2 idle for that long each iteration);
//   copier:   a 4 KiB cuMemcpyHtoD_v2 (FAKE_CUDA_DELAY_US sets its time).
// Each change touches its own thread and stream only, so a diff of two runs
// has exactly one row per change. Streams are created by main, in order.
//
// usage: step_workload --lib PATH --steps N [--extra-kernel 1] [--idle-ms MS]
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

using H = void*;
void* g_lib;

template <class... A>
int call(const char* name, A... args) {
  auto fn = reinterpret_cast<int (*)(A...)>(dlsym(g_lib, name));
  if (!fn) {
    std::fprintf(stderr, "step_workload: %s missing\n", name);
    std::exit(1);
  }
  return fn(args...);
}

__attribute__((noinline)) void launch(H fn, H stream) {
  call("cuLaunchKernel", fn, 1u, 1u, 1u, 32u, 1u, 1u, 0u, stream, (void**)nullptr, (void**)nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib;
  uint32_t steps = 100;
  bool extra = false;
  long idle_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--lib") lib = v;
    else if (k == "--steps") steps = std::stoul(v);
    else if (k == "--extra-kernel") extra = v == "1";
    else if (k == "--idle-ms") idle_ms = std::stol(v);
  }
  g_lib = dlopen(lib.c_str(), RTLD_NOW);
  if (!g_lib) {
    std::fprintf(stderr, "step_workload: %s\n", dlerror());
    return 1;
  }
  static const char image[] = "fake cubin";
  H mod = nullptr, a = nullptr, b = nullptr, c = nullptr, x = nullptr, s1 = nullptr, s2 = nullptr, s3 = nullptr;
  unsigned long long dev = 0;
  call("cuInit", 0u);
  call("cuModuleLoadData", &mod, static_cast<const void*>(image));
  call("cuModuleGetFunction", &a, mod, "stepA");
  call("cuModuleGetFunction", &b, mod, "stepB");
  call("cuModuleGetFunction", &c, mod, "stepC");
  call("cuModuleGetFunction", &x, mod, "extraKernel");
  call("cuStreamCreate", &s1, 0u);
  call("cuStreamCreate", &s2, 0u);
  call("cuStreamCreate", &s3, 0u);
  call("cuMemAlloc_v2", &dev, size_t{4096});
  std::thread launcher([&] {
    for (uint32_t i = 0; i < steps; ++i) {
      launch(a, s1);
      launch(b, s1);
      if (extra) launch(x, s3);
      call("cuStreamSynchronize", s1);
    }
  });
  std::thread idler([&] {
    for (uint32_t i = 0; i < steps; ++i) {
      launch(c, s2);
      call("cuStreamSynchronize", s2);
      if (idle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
    }
  });
  std::thread copier([&] {
    static char host[4096];
    for (uint32_t i = 0; i < steps; ++i)
      call("cuMemcpyHtoD_v2", dev, reinterpret_cast<unsigned long long>(host), size_t{sizeof host});
  });
  launcher.join();
  idler.join();
  copier.join();
  call("cuMemFree_v2", dev);
  return 0;
}
