// The bundled example workload: the CUDA driver API over 4 streams.
//
// On a host with an NVIDIA GPU it JIT-compiles a small PTX kernel, launches it
// N times round-robin over 4 streams, synchronizes and checks the result.
// Without a GPU (the CUDA toolkit's stub libcuda.so, or no driver) it makes
// the same cuLaunchKernel calls with placeholder handles, so the probe path
// still runs for real. libcuda is opened at run time: no CUDA headers needed.
//
// usage: cuda_streams [--lib PATH] [--launches N] [--streams S]
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "add_one_ptx.h"

namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void*;  // CUcontext, CUmodule, CUfunction, CUstream

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(Handle*, CUdevice);
  CUresult (*cuCtxSetCurrent)(Handle);
  CUresult (*cuModuleLoadData)(Handle*, const void*);
  CUresult (*cuModuleGetFunction)(Handle*, Handle, const char*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemsetD32)(CUdeviceptr, unsigned, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuStreamCreate)(Handle*, unsigned);
  CUresult (*cuStreamSynchronize)(Handle);
  CUresult (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Handle,
                             void**, void**);
};

template <class F>
bool load(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) std::fprintf(stderr, "cuda_streams: %s not found in libcuda\n", name);
  return fn != nullptr;
}

#define CHECK(call)                                                           \
  do {                                                                        \
    CUresult r_ = (call);                                                     \
    if (r_ != 0) {                                                            \
      std::fprintf(stderr, "cuda_streams: %s failed: error %d\n", #call, r_); \
      return 1;                                                               \
    }                                                                         \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  std::string lib_path = "libcuda.so.1";
  unsigned launches = 20000, nstreams = 4;
  // --no-verify: a libcuda that runs no kernels (gpuobs's fake, what demo.sh
  // drives on a machine without the CUDA toolkit): the GPU path's calls,
  // the results not checked.
  bool verify = true;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--no-verify")) verify = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--no-verify")) {
      --i;  // a flag: no value follows
      continue;
    }
    if (!std::strcmp(argv[i], "--lib")) lib_path = argv[i + 1];
    else if (!std::strcmp(argv[i], "--launches")) launches = std::strtoul(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--streams")) nstreams = std::strtoul(argv[i + 1], nullptr, 10);
  }
  if (nstreams == 0) nstreams = 1;
  void* lib = dlopen(lib_path.c_str(), RTLD_NOW);
  if (!lib) {
    std::fprintf(stderr, "cuda_streams: cannot load %s: %s\n", lib_path.c_str(), dlerror());
    return 1;
  }
  Driver d{};
  // The exported names the CUDA headers map to (cuMemAlloc -> cuMemAlloc_v2, ...).
  bool ok = load(lib, "cuInit", d.cuInit) && load(lib, "cuDeviceGet", d.cuDeviceGet) &&
            load(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain) &&
            load(lib, "cuCtxSetCurrent", d.cuCtxSetCurrent) && load(lib, "cuModuleLoadData", d.cuModuleLoadData) &&
            load(lib, "cuModuleGetFunction", d.cuModuleGetFunction) && load(lib, "cuMemAlloc_v2", d.cuMemAlloc) &&
            load(lib, "cuMemsetD32_v2", d.cuMemsetD32) && load(lib, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH) &&
            load(lib, "cuStreamCreate", d.cuStreamCreate) && load(lib, "cuStreamSynchronize", d.cuStreamSynchronize) &&
            load(lib, "cuLaunchKernel", d.cuLaunchKernel);
  if (!ok) return 1;

  const unsigned n = 4096, block = 256, grid = (n + block - 1) / block;
  CUresult init = d.cuInit(0);
  if (init != 0) {
    // No usable GPU: same launch calls, placeholder handles, results ignored.
    std::printf(
        "cuda_streams: no GPU (cuInit returned %d); issuing %u cuLaunchKernel calls on %u placeholder "
        "streams against %s\n",
        init, launches, nstreams, lib_path.c_str());
    // The same calls as the GPU path makes, so every family shows up (each
    // failing with the stub's CUDA_ERROR_STUB_LIBRARY).
    Handle function = reinterpret_cast<Handle>(0xf00d);
    CUdeviceptr buf = 0;
    std::vector<float> host(n);
    for (unsigned s = 0; s < nstreams; ++s) {
      Handle created = nullptr;
      (void)d.cuStreamCreate(&created, 1);
    }
    (void)d.cuMemAlloc(&buf, n * sizeof(float));
    (void)d.cuMemsetD32(buf, 0, n);
    for (unsigned i = 0; i < launches; ++i) {
      Handle stream = reinterpret_cast<Handle>(uintptr_t{0x5000} + i % nstreams);
      (void)d.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, stream, nullptr, nullptr);
    }
    for (unsigned s = 0; s < nstreams; ++s)
      (void)d.cuStreamSynchronize(reinterpret_cast<Handle>(uintptr_t{0x5000} + s));
    (void)d.cuMemcpyDtoH(host.data(), buf, n * sizeof(float));
    return 0;
  }

  CUdevice dev;
  Handle ctx, mod, fn;
  CHECK(d.cuDeviceGet(&dev, 0));
  CHECK(d.cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(d.cuCtxSetCurrent(ctx));
  CHECK(d.cuModuleLoadData(&mod, gpuobs::example::kAddOnePtx));
  CHECK(d.cuModuleGetFunction(&fn, mod, "add_one"));
  std::vector<Handle> streams(nstreams);
  std::vector<CUdeviceptr> bufs(nstreams);
  for (unsigned s = 0; s < nstreams; ++s) {
    CHECK(d.cuStreamCreate(&streams[s], 1 /* CU_STREAM_NON_BLOCKING */));
    CHECK(d.cuMemAlloc(&bufs[s], n * sizeof(float)));
    CHECK(d.cuMemsetD32(bufs[s], 0, n));
  }
  // The memsets run on the legacy default stream, which does not order
  // non-blocking streams: without this wait a kernel can run before its
  // buffer is cleared (seen on the H100 under load: one element short).
  CHECK(d.cuStreamSynchronize(nullptr));
  unsigned nn = n;
  for (unsigned i = 0; i < launches; ++i) {
    unsigned s = i % nstreams;
    void* params[] = {&bufs[s], &nn};
    CHECK(d.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, streams[s], params, nullptr));
  }
  std::vector<float> host(n);
  for (unsigned s = 0; s < nstreams; ++s) {
    CHECK(d.cuStreamSynchronize(streams[s]));
    CHECK(d.cuMemcpyDtoH(host.data(), bufs[s], n * sizeof(float)));
    float want = static_cast<float>(launches / nstreams + (s < launches % nstreams ? 1 : 0));
    for (unsigned i = 0; verify && i < n; ++i)
      if (host[i] != want) {
        std::fprintf(stderr, "cuda_streams: stream %u element %u is %f, expected %f\n", s, i, host[i], want);
        return 1;
      }
  }
  std::printf("cuda_streams: %u launches of add_one on %u streams, results %s\n", launches, nstreams,
              verify ? "verified" : "not checked (--no-verify)");
  return 0;
}
