// GPU verification program for the full CUDA driver API capture: every
// probed family against the real driver (4 streams, events across streams,
// async copies in every direction, memsets, pinned, pitched and managed
// memory, a captured graph, a cooperative launch, cuLaunchKernelEx, a host
// function), each call checked for CUDA_SUCCESS and counted per symbol.
// Writes {pid, counts} as JSON for bench/h100/check_families.py.
//
// usage: all_families [--lib libcuda.so.1] [--iterations N] --truth FILE
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "../../examples/cuda_streams/add_one_ptx.h"

namespace {

using D = unsigned long long;
using H = void*;
void* g_lib;
std::map<std::string, int> g_counts;

template <class... A>
void call(const char* name, A... args) {
  ++g_counts[name];
  auto fn = reinterpret_cast<int (*)(A...)>(dlsym(g_lib, name));
  if (!fn) {
    std::fprintf(stderr, "all_families: no %s\n", name);
    std::exit(1);
  }
  int r = fn(args...);
  if (r != 0) {
    std::fprintf(stderr, "all_families: %s failed: %d\n", name, r);
    std::exit(1);
  }
}

void host_fn(void*) {}

}  // namespace

int main(int argc, char** argv) {
  std::string lib = "libcuda.so.1", truth;
  unsigned iterations = 500;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--lib")) lib = argv[i + 1];
    else if (!std::strcmp(argv[i], "--iterations")) iterations = std::strtoul(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--truth")) truth = argv[i + 1];
  }
  g_lib = dlopen(lib.c_str(), RTLD_NOW);
  if (!g_lib) {
    std::fprintf(stderr, "all_families: %s\n", dlerror());
    return 1;
  }
  int dev = 0;
  H ctx = nullptr, mod = nullptr, fn = nullptr;
  call("cuInit", 0u);
  call("cuDeviceGet", &dev, 0);
  call("cuDevicePrimaryCtxRetain", &ctx, dev);
  call("cuCtxSetCurrent", ctx);
  call("cuModuleLoadData", &mod, static_cast<const void*>(gpuobs::example::kAddOnePtx));
  call("cuModuleGetFunction", &fn, mod, "add_one");

  const unsigned n = 1 << 16, ns = 4;
  const size_t bytes = n * sizeof(float);
  H streams[ns + 1], events[ns];
  D buf[ns], scratch[ns];
  for (unsigned s = 0; s < ns; ++s) {
    call("cuStreamCreate", &streams[s], 1u);  // CU_STREAM_NON_BLOCKING
    call("cuEventCreate", &events[s], 2u);    // CU_EVENT_DISABLE_TIMING
    call("cuMemAlloc_v2", &buf[s], bytes);
    call("cuMemAlloc_v2", &scratch[s], bytes);
  }
  call("cuStreamCreateWithPriority", &streams[ns], 1u, -1);
  void *pinned = nullptr, *pinned2 = nullptr;
  D managed = 0, pitched = 0, async_buf = 0;
  size_t pitch = 0;
  call("cuMemAllocHost_v2", &pinned, bytes);
  call("cuMemHostAlloc", &pinned2, bytes, 0u);
  call("cuMemAllocManaged", &managed, bytes, 1u);  // CU_MEM_ATTACH_GLOBAL
  call("cuMemAllocPitch_v2", &pitched, &pitch, size_t{1024}, size_t{64}, 4u);
  call("cuMemAllocAsync", &async_buf, bytes, streams[ns]);
  std::memset(pinned, 0, bytes);

  unsigned nn = n, grid = (n + 255) / 256;
  for (unsigned i = 0; i < iterations; ++i) {
    unsigned s = i % ns;
    void* params[] = {&buf[s], &nn};
    call("cuMemcpyHtoDAsync_v2", buf[s], reinterpret_cast<D>(pinned), bytes, streams[s]);
    call("cuMemsetD32Async", scratch[s], 0u, size_t{n}, streams[s]);
    call("cuLaunchKernel", fn, grid, 1u, 1u, 256u, 1u, 1u, 0u, streams[s], static_cast<void**>(params),
         (void**)nullptr);
    call("cuEventRecord", events[s], streams[s]);
    call("cuStreamWaitEvent", streams[(s + 1) % ns], events[s], 0u);
    call("cuMemcpyDtoDAsync_v2", scratch[s], buf[s], bytes, streams[s]);
    call("cuMemcpyDtoHAsync_v2", reinterpret_cast<D>(pinned2), buf[s], bytes, streams[s]);
  }
  for (unsigned s = 0; s < ns; ++s) call("cuStreamSynchronize", streams[s]);
  call("cuEventSynchronize", events[0]);
  call("cuEventQuery", events[1]);
  call("cuStreamQuery", streams[2]);

  // Synchronous copies and memsets, a 2D copy into pitched memory.
  call("cuMemcpyHtoD_v2", buf[0], static_cast<const void*>(pinned), bytes);
  call("cuMemcpyDtoH_v2", pinned2, buf[0], bytes);
  call("cuMemcpyDtoD_v2", scratch[0], buf[0], bytes);
  call("cuMemcpy", scratch[1], buf[1], bytes);
  call("cuMemsetD8_v2", scratch[2], static_cast<unsigned char>(0), bytes);
  call("cuMemsetD2D8_v2", pitched, pitch, static_cast<unsigned char>(1), size_t{1024}, size_t{64});
  uint64_t c2[16] = {};
  c2[2] = 1;
  c2[3] = reinterpret_cast<uint64_t>(pinned);
  c2[6] = 1024;  // src: host, pitch 1024
  c2[9] = 2;
  c2[11] = pitched;
  c2[13] = pitch;
  c2[14] = 1024;
  c2[15] = 64;  // dst: device, 1024 B x 64 rows
  call("cuMemcpy2D_v2", static_cast<const void*>(c2));

  // Managed memory: touched by a kernel.
  void* mparams[] = {&managed, &nn};
  call("cuLaunchKernel", fn, grid, 1u, 1u, 256u, 1u, 1u, 0u, streams[0], static_cast<void**>(mparams), (void**)nullptr);
  call("cuStreamSynchronize", streams[0]);

  // A graph captured from 10 launches, launched 5 times on another stream.
  H graph = nullptr, exec = nullptr;
  void* p0[] = {&buf[0], &nn};
  call("cuStreamBeginCapture_v2", streams[0], 0);  // CU_STREAM_CAPTURE_MODE_GLOBAL
  for (int k = 0; k < 10; ++k)
    call("cuLaunchKernel", fn, grid, 1u, 1u, 256u, 1u, 1u, 0u, streams[0], static_cast<void**>(p0), (void**)nullptr);
  call("cuStreamEndCapture", streams[0], &graph);
  call("cuGraphInstantiateWithFlags", &exec, graph, 0ull);
  for (int k = 0; k < 5; ++k) call("cuGraphLaunch", exec, streams[1]);

  // Cooperative launch, cuLaunchKernelEx, a host function.
  void* p2[] = {&buf[2], &nn};
  call("cuLaunchCooperativeKernel", fn, 4u, 1u, 1u, 256u, 1u, 1u, 0u, streams[2], static_cast<void**>(p2));
  struct Config {
    unsigned g[3], b[3], shmem, pad;
    H stream;
    void* attrs;
    unsigned n, pad2;
  };
  Config cfg{{grid, 1, 1}, {256, 1, 1}, 0, 0, streams[3], nullptr, 0, 0};
  void* p3[] = {&buf[3], &nn};
  for (int k = 0; k < 10; ++k)
    call("cuLaunchKernelEx", static_cast<const void*>(&cfg), fn, static_cast<void**>(p3), (void**)nullptr);
  call("cuLaunchHostFunc", streams[0], reinterpret_cast<void*>(&host_fn), (void*)nullptr);
  call("cuMemFreeAsync", async_buf, streams[ns]);
  call("cuCtxSynchronize");

  // Cleanup: everything freed, so the capture shows no leaks.
  for (unsigned s = 0; s < ns; ++s) {
    call("cuMemFree_v2", buf[s]);
    call("cuMemFree_v2", scratch[s]);
    call("cuEventDestroy_v2", events[s]);
  }
  call("cuMemFree_v2", managed);
  call("cuMemFree_v2", pitched);
  call("cuMemFreeHost", pinned);
  call("cuMemFreeHost", pinned2);
  for (unsigned s = 0; s <= ns; ++s) call("cuStreamDestroy_v2", streams[s]);
  std::ofstream out(truth);
  out << "{\"pid\": " << ::getpid() << ", \"counts\": {";
  bool first = true;
  for (auto& [k, v] : g_counts) {
    out << (first ? "" : ", ") << "\"" << k << "\": " << v;
    first = false;
  }
  out << "}}\n";
  std::printf("all_families: %u iterations on %u streams, every call succeeded\n", iterations, ns);
  return 0;
}
