// Test workload for the full CUDA driver API capture: several threads call
// every probed family through a libcuda chosen at run time (the fake, which
// fills out-parameters), and write their ground truth as JSON: per thread,
// how often each symbol was called and the handles the driver handed out.
//
// usage: api_workload --lib PATH --threads T --iterations N --truth FILE
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "api_truth.h"
#include "workload_args.h"

namespace {

using D = unsigned long long;  // CUdeviceptr
using H = void*;               // every other handle

void* g_lib;

struct Thread {
  std::map<std::string, int> counts;
  nlohmann::json handles;

  // Calls `name` with exactly these argument types (they must match the ABI).
  template <class... A>
  int call(const char* name, A... args) {
    ++counts[name];
    auto fn = reinterpret_cast<int (*)(A...)>(dlsym(g_lib, name));
    if (!fn) {
      std::fprintf(stderr, "api_workload: %s missing\n", name);
      std::exit(1);
    }
    return fn(args...);
  }
};

void run(uint32_t t, uint32_t iterations, Thread& th) {
  using namespace gpuobs::testing;
  static const char image[] = "fake cubin";
  H mod = nullptr, fn = nullptr, lib = nullptr, kernel = nullptr, kfn = nullptr;
  H s1 = nullptr, s2 = nullptr, ev = nullptr, graph = nullptr;
  // The set-up calls (context_ops): device 1 of the fake's two.
  int version = 0, ndev = 0, dev = -1, cc_major = 0;
  size_t total = 0;
  H primary = nullptr, ctx = nullptr;
  th.call("cuInit", 0u);
  th.call("cuDriverGetVersion", &version);
  th.call("cuDeviceGetCount", &ndev);
  th.call("cuDeviceGet", &dev, 1);
  th.call("cuDeviceGetAttribute", &cc_major, 75, dev);  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  th.call("cuDeviceTotalMem_v2", &total, dev);
  th.call("cuDevicePrimaryCtxSetFlags_v2", dev, 4u);  // CU_CTX_SCHED_BLOCKING_SYNC
  th.call("cuDevicePrimaryCtxRetain", &primary, dev);
  th.call("cuCtxCreate_v2", &ctx, 0u, dev);
  th.call("cuCtxDestroy_v2", ctx);
  th.call("cuDevicePrimaryCtxRelease_v2", dev);
  th.call("cuDeviceGet", &dev, 7);  // fails: CUDA_ERROR_INVALID_DEVICE, dev unchanged
  th.handles["setup"] = {{"version", version},
                         {"devices", ndev},
                         {"device", dev},
                         {"cc_major", cc_major},
                         {"total", total},
                         {"primary", reinterpret_cast<uint64_t>(primary)},
                         {"ctx", reinterpret_cast<uint64_t>(ctx)}};
  th.call("cuModuleLoadData", &mod, static_cast<const void*>(image));
  th.call("cuModuleGetFunction", &fn, mod, kSquareMangled);
  th.call("cuLibraryLoadData", &lib, static_cast<const void*>(image), (H) nullptr, (H*)nullptr, 0u, (H) nullptr,
          (H*)nullptr, 0u);
  th.call("cuLibraryGetKernel", &kernel, lib, kAxpyMangled);
  th.call("cuKernelGetFunction", &kfn, kernel);
  th.call("cuStreamCreate", &s1, 1u);
  th.call("cuStreamCreateWithPriority", &s2, 0u, -1);
  th.call("cuEventCreate", &ev, 0u);

  std::vector<char> host(1 << 16);
  D hostp = reinterpret_cast<D>(host.data());
  void* params[] = {nullptr};
  D d = 0;
  // CUlaunchConfig (56 B) with 2 attributes: cooperative, cluster (2,1,1).
  struct Attr {
    uint32_t id;
    uint32_t pad;
    uint32_t v[16];
  };
  struct Config {
    uint32_t g[3], b[3], shmem, pad;
    H stream;
    Attr* attrs;
    uint32_t n, pad2;
  };
  static_assert(sizeof(Attr) == 72 && sizeof(Config) == 56);
  Attr attrs[2] = {};
  attrs[0].id = 2;  // CU_LAUNCH_ATTRIBUTE_COOPERATIVE
  attrs[0].v[0] = 1;
  attrs[1].id = 4;  // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
  attrs[1].v[0] = 2;
  attrs[1].v[1] = 1;
  attrs[1].v[2] = 1;

  for (uint32_t i = 0; i < iterations; ++i) {
    size_t bytes = loop_bytes(t, i);
    th.call("cuMemAlloc_v2", &d, bytes);
    th.call("cuMemcpyHtoD_v2", d, hostp, bytes);
    th.call("cuMemcpyHtoDAsync_v2", d, hostp, bytes, s1);
    th.call("cuMemsetD32Async", d, 7u, bytes / 4, s1);
    th.call("cuLaunchKernel", fn, i + 1, 1u, 1u, 128u, 1u, 1u, 0u, s1, static_cast<void**>(params), (void**)nullptr);
    Config cfg{{i + 1, 2, 1}, {64, 1, 1}, 512, 0, s2, attrs, 2, 0};
    th.call("cuLaunchKernelEx", static_cast<const void*>(&cfg), kfn, static_cast<void**>(params), (void**)nullptr);
    th.call("cuEventRecord", ev, s1);
    th.call("cuStreamWaitEvent", s2, ev, 0u);
    th.call("cuMemcpyDtoHAsync_v2", hostp, d, bytes, s2);
    th.call("cuStreamSynchronize", s2);
    if (i + 1 < iterations) th.call("cuMemFree_v2", d);  // the last one leaks
  }
  th.handles["leak_address"] = d;

  D m = 0, h = 0, h2 = 0, a = 0, a2 = 0, pa = 0, pd = 0, bad = 0;
  size_t pitch = 0;
  th.call("cuMemAlloc_v2", &bad, size_t{0});  // fails: CUDA_ERROR_INVALID_VALUE
  th.call("cuMemAllocManaged", &m, size_t{1} << 20, 1u);
  th.call("cuMemFree_v2", m);
  th.call("cuMemAllocHost_v2", reinterpret_cast<H*>(&h), size_t{8192});
  th.call("cuMemFreeHost", reinterpret_cast<H>(h));
  th.call("cuMemHostAlloc", reinterpret_cast<H*>(&h2), size_t{16384}, 0u);
  th.call("cuMemFreeHost", reinterpret_cast<H>(h2));
  th.call("cuMemAllocAsync", &a, size_t{65536}, s1);
  th.call("cuMemFreeAsync", a, s1);
  th.call("cuMemAllocAsync_ptsz", &a2, size_t{32768}, (H) nullptr);
  th.call("cuMemFreeAsync_ptsz", a2, (H) nullptr);
  th.call("cuMemAllocFromPoolAsync", &pa, size_t{131072}, reinterpret_cast<H>(0x9000), s2);
  th.call("cuMemFreeAsync", pa, s2);
  th.call("cuMemAllocPitch_v2", &pd, &pitch, size_t{1000}, size_t{10}, 4u);
  th.call("cuMemFree_v2", pd);
  unsigned long long phys = 0;
  D va = 0x7e0000000000ull + (D{t} << 24);
  th.call("cuMemCreate", &phys, size_t{2} << 20, static_cast<const void*>(image), 0ull);
  th.call("cuMemMap", va, size_t{2} << 20, size_t{0}, phys, 0ull);
  th.call("cuMemUnmap", va, size_t{2} << 20);
  th.call("cuMemRelease", phys);

  D d2 = 0x7d0000000000ull, d3 = 0x7d0000100000ull;
  H ctx_a = reinterpret_cast<H>(0xca), ctx_b = reinterpret_cast<H>(0xcb), arr = reinterpret_cast<H>(0xa0);
  th.call("cuMemcpy", d2, d3, size_t{1000});
  th.call("cuMemcpyAsync", d2, d3, size_t{2000}, s1);
  th.call("cuMemcpyDtoD_v2", d2, d3, size_t{3000});
  th.call("cuMemcpyDtoDAsync_v2", d2, d3, size_t{4000}, s2);
  th.call("cuMemcpyDtoH_v2", hostp, d, size_t{5000});
  th.call("cuMemcpyPeer", d2, ctx_a, d3, ctx_b, size_t{6000});
  th.call("cuMemcpyPeerAsync", d2, ctx_a, d3, ctx_b, size_t{7000}, s1);
  // CUDA_MEMCPY2D: host -> device, 64 bytes x 8 rows. CUDA_MEMCPY3D: device -> host, 16 x 4 x 2.
  uint64_t c2[16] = {}, c3[25] = {};
  c2[2] = 1;
  c2[3] = hostp;
  c2[9] = 2;
  c2[11] = d2;
  c2[14] = 64;
  c2[15] = 8;
  c3[4] = 2;
  c3[6] = d3;
  c3[15] = 1;
  c3[16] = hostp;
  c3[22] = 16;
  c3[23] = 4;
  c3[24] = 2;
  th.call("cuMemcpy2D_v2", static_cast<const void*>(c2));
  th.call("cuMemcpy2DAsync_v2", static_cast<const void*>(c2), s1);
  th.call("cuMemcpy3D_v2", static_cast<const void*>(c3));
  th.call("cuMemcpy3DAsync_v2", static_cast<const void*>(c3), s2);
  th.call("cuMemcpyDtoA_v2", arr, size_t{0}, d2, size_t{111});
  th.call("cuMemcpyAtoD_v2", d2, arr, size_t{0}, size_t{222});
  th.call("cuMemcpyHtoA_v2", arr, size_t{0}, static_cast<const void*>(host.data()), size_t{333});
  th.call("cuMemcpyAtoH_v2", static_cast<H>(host.data()), arr, size_t{0}, size_t{444});
  th.call("cuMemcpyAtoA_v2", arr, size_t{0}, arr, size_t{64}, size_t{555});
  th.call("cuMemcpyHtoAAsync_v2", arr, size_t{0}, static_cast<const void*>(host.data()), size_t{666}, s1);
  th.call("cuMemcpy3DPeerAsync", static_cast<const void*>(c3), s2);  // CUDA_MEMCPY3D_PEER: same offsets
  th.call("cuMemsetD8_v2", d2, static_cast<unsigned char>(0xab), size_t{100});
  th.call("cuMemsetD16_v2", d2, static_cast<unsigned short>(0x1234), size_t{100});
  th.call("cuMemsetD32_v2", d2, 5u, size_t{100});
  th.call("cuMemsetD8Async", d2, static_cast<unsigned char>(1), size_t{10}, s1);
  th.call("cuMemsetD16Async", d2, static_cast<unsigned short>(2), size_t{10}, s1);
  th.call("cuMemsetD2D8_v2", d2, size_t{512}, static_cast<unsigned char>(0x11), size_t{64}, size_t{4});
  th.call("cuMemsetD2D32Async", d2, size_t{512}, 9u, size_t{16}, size_t{4}, s2);
  th.call("cuMemsetD8_v2_ptds", d2, static_cast<unsigned char>(2), size_t{50});

  th.call("cuEventRecordWithFlags", ev, s2, 1u);
  th.call("cuEventQuery", ev);
  th.call("cuEventSynchronize", ev);
  th.call("cuStreamQuery", s1);
  th.call("cuStreamBeginCapture_v2", s1, 0);
  th.call("cuLaunchKernel_ptsz", fn, 1u, 1u, 1u, 32u, 1u, 1u, 0u, (H) nullptr, static_cast<void**>(params),
          (void**)nullptr);
  th.call("cuStreamEndCapture", s1, &graph);
  th.call("cuGraphLaunch", graph, s2);
  th.call("cuLaunchHostFunc", s1, reinterpret_cast<H>(&run), (H) nullptr);
  th.call("cuLaunchCooperativeKernel", fn, 4u, 1u, 1u, 32u, 1u, 1u, 0u, s2, static_cast<void**>(params));
  th.call("cuCtxSynchronize");
  th.call("cuCtxSynchronize_v2", reinterpret_cast<H>(0xc0));
  th.call("cuStreamSynchronize_ptsz", (H) nullptr);
  th.call("cuEventDestroy_v2", ev);
  th.call("cuStreamDestroy_v2", s1);
  th.call("cuStreamDestroy_v2", s2);
  H m2 = nullptr, l2 = nullptr;
  th.call("cuModuleLoad", &m2, kModulePath);
  th.call("cuLibraryLoadFromFile", &l2, kLibraryPath, (H) nullptr, (H*)nullptr, 0u, (H) nullptr, (H*)nullptr, 0u);

  if (t == 0) {
    // A name in a file-backed page this process never touched: unreadable at
    // the probe's entry, resident once the driver has read it.
    char path[] = "/tmp/gpuobs-lazy-name-XXXXXX";
    int fd = ::mkstemp(path);
    if (fd < 0 || ::write(fd, kLazyMangled, std::strlen(kLazyMangled) + 1) < 0) std::exit(1);
    void* page = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    H lazy = nullptr;
    th.call("cuLibraryGetKernel", &lazy, lib, static_cast<const char*>(page));
    th.handles["lazy_kernel"] = reinterpret_cast<D>(lazy);
    ::munmap(page, 4096);
    ::close(fd);
    ::unlink(path);
  }
  th.handles["function"] = reinterpret_cast<D>(fn);
  th.handles["kernel"] = reinterpret_cast<D>(kernel);
  th.handles["kernel_function"] = reinterpret_cast<D>(kfn);
  th.handles["s1"] = reinterpret_cast<D>(s1);
  th.handles["s2"] = reinterpret_cast<D>(s2);
  th.handles["event"] = reinterpret_cast<D>(ev);
  th.handles["graph"] = reinterpret_cast<D>(graph);
  th.handles["module"] = reinterpret_cast<D>(m2);
}

}  // namespace

int main(int argc, char** argv) {
  auto args = gpuobs::testing::parse_workload_args(argc, argv, 3, 20);
  const std::string& truth_path = args.truth_path;
  const uint32_t threads = args.threads, iterations = args.iterations;
  g_lib = gpuobs::testing::open_runtime(args, "api_workload");
  if (!g_lib) return 1;
  std::vector<Thread> state(threads);
  std::vector<uint32_t> tids(threads);
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      tids[t] = static_cast<uint32_t>(::syscall(SYS_gettid));
      run(t, iterations, state[t]);
    });
  for (auto& p : pool) p.join();
  nlohmann::json truth;
  truth["pid"] = ::getpid();
  truth["iterations"] = iterations;
  for (uint32_t t = 0; t < threads; ++t)
    truth["threads"].push_back(
        {{"index", t}, {"tid", tids[t]}, {"counts", state[t].counts}, {"handles", state[t].handles}});
  std::ofstream(truth_path) << truth.dump(2);
  return 0;
}
