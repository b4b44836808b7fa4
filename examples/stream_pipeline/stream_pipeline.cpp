// A 4-stream pipeline with cross-stream events: the workload the replay is
// checked against on a GPU (docs/replay.md). Stream 0 copies each buffer in,
// records an event; streams 1..3 wait for it and run a kernel on their buffer,
// record their own event; stream 0 waits for those and copies the results out.
// With --bug it adds the host-side mistakes the replay must flag, each from its
// own function so the hazard's stack names it.
//
// usage: stream_pipeline [--lib PATH] [--iterations N]
//          [--bug none|unrecorded-wait|free-while-queued|pageable-copy|race|all] [--no-verify]
// libcuda is opened at run time: no CUDA headers needed. Against a fake
// libcuda (tests/fakes) it runs the same calls; --no-verify skips the check.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../cuda_streams/add_one_ptx.h"

namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void*;  // CUcontext, CUmodule, CUfunction, CUstream, CUevent

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(Handle*, CUdevice);
  CUresult (*cuCtxSetCurrent)(Handle);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(Handle*, const void*);
  CUresult (*cuModuleGetFunction)(Handle*, Handle, const char*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemAllocHost)(void**, size_t);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, Handle);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, Handle);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, Handle);
  CUresult (*cuStreamCreate)(Handle*, unsigned);
  CUresult (*cuStreamDestroy)(Handle);
  CUresult (*cuStreamSynchronize)(Handle);
  CUresult (*cuStreamWaitEvent)(Handle, Handle, unsigned);
  CUresult (*cuEventCreate)(Handle*, unsigned);
  CUresult (*cuEventRecord)(Handle, Handle);
  CUresult (*cuEventSynchronize)(Handle);
  CUresult (*cuEventDestroy)(Handle);
  CUresult (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Handle,
                             void**, void**);
};
Driver d{};

template <class F>
bool load(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) std::fprintf(stderr, "stream_pipeline: %s not found in libcuda\n", name);
  return fn != nullptr;
}

#define CHECK(call)                                                              \
  do {                                                                           \
    CUresult r_ = (call);                                                        \
    if (r_ != 0) {                                                               \
      std::fprintf(stderr, "stream_pipeline: %s failed: error %d\n", #call, r_); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

constexpr unsigned kN = 1 << 16;  // floats per buffer
constexpr size_t kBytes = kN * sizeof(float);
constexpr unsigned kWorkers = 3;  // streams 1..3

// The bugs, each in its own frame so that a hazard's stack names it.
__attribute__((noinline)) void wait_on_event_never_recorded(Handle stream) {
  Handle never = nullptr;
  CHECK(d.cuEventCreate(&never, 2 /* CU_EVENT_DISABLE_TIMING */));
  CHECK(d.cuStreamWaitEvent(stream, never, 0));  // a no-op in CUDA: orders nothing
}

__attribute__((noinline)) void free_while_copy_queued(Handle stream, const void* pinned) {
  CUdeviceptr tmp = 0;
  CHECK(d.cuMemAlloc(&tmp, kBytes));
  CHECK(d.cuMemcpyHtoDAsync(tmp, pinned, kBytes, stream));
  CHECK(d.cuMemFree(tmp));  // nothing proved the copy finished
}

__attribute__((noinline)) void copy_from_pageable_memory(Handle stream, CUdeviceptr dst) {
  static std::vector<float> pageable(kN, 0.0f);
  CHECK(d.cuMemcpyHtoDAsync(dst, pageable.data(), kBytes, stream));  // not pinned: not really async
}

__attribute__((noinline)) void memset_on_another_stream(Handle stream, CUdeviceptr buf) {
  CHECK(d.cuMemsetD32Async(buf, 0, kN, stream));  // no event orders it against stream 0's copies
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib_path = "libcuda.so.1", bug = "none";
  unsigned iterations = 50;
  bool verify = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-verify") verify = false;
    else if (i + 1 < argc && a == "--lib") lib_path = argv[++i];
    else if (i + 1 < argc && a == "--iterations") iterations = std::strtoul(argv[++i], nullptr, 10);
    else if (i + 1 < argc && a == "--bug") bug = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: stream_pipeline [--lib PATH] [--iterations N] [--bug none|unrecorded-wait|"
                   "free-while-queued|pageable-copy|race|all] [--no-verify]\n");
      return 2;
    }
  }
  auto has_bug = [&](const char* b) { return bug == "all" || bug == b; };
  void* lib = dlopen(lib_path.c_str(), RTLD_NOW);
  if (!lib) {
    std::fprintf(stderr, "stream_pipeline: cannot load %s: %s\n", lib_path.c_str(), dlerror());
    return 1;
  }
  // Context set-up is optional: the fake libcuda of the tests has none of it
  // (the calls the replay reads are all required).
  d.cuDeviceGet = reinterpret_cast<decltype(d.cuDeviceGet)>(dlsym(lib, "cuDeviceGet"));
  d.cuDevicePrimaryCtxRetain =
      reinterpret_cast<decltype(d.cuDevicePrimaryCtxRetain)>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
  d.cuCtxSetCurrent = reinterpret_cast<decltype(d.cuCtxSetCurrent)>(dlsym(lib, "cuCtxSetCurrent"));
  bool ok = load(lib, "cuInit", d.cuInit) && load(lib, "cuCtxSynchronize", d.cuCtxSynchronize) &&
            load(lib, "cuModuleLoadData", d.cuModuleLoadData) &&
            load(lib, "cuModuleGetFunction", d.cuModuleGetFunction) && load(lib, "cuMemAlloc_v2", d.cuMemAlloc) &&
            load(lib, "cuMemFree_v2", d.cuMemFree) && load(lib, "cuMemAllocHost_v2", d.cuMemAllocHost) &&
            load(lib, "cuMemFreeHost", d.cuMemFreeHost) && load(lib, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync) &&
            load(lib, "cuMemcpyDtoHAsync_v2", d.cuMemcpyDtoHAsync) &&
            load(lib, "cuMemsetD32Async", d.cuMemsetD32Async) && load(lib, "cuStreamCreate", d.cuStreamCreate) &&
            load(lib, "cuStreamDestroy_v2", d.cuStreamDestroy) &&
            load(lib, "cuStreamSynchronize", d.cuStreamSynchronize) &&
            load(lib, "cuStreamWaitEvent", d.cuStreamWaitEvent) && load(lib, "cuEventCreate", d.cuEventCreate) &&
            load(lib, "cuEventRecord", d.cuEventRecord) && load(lib, "cuEventSynchronize", d.cuEventSynchronize) &&
            load(lib, "cuEventDestroy_v2", d.cuEventDestroy) && load(lib, "cuLaunchKernel", d.cuLaunchKernel);
  if (!ok) return 1;

  CHECK(d.cuInit(0));
  CUdevice dev = 0;
  Handle ctx = nullptr, mod = nullptr, fn = nullptr;
  if (d.cuDeviceGet && d.cuDevicePrimaryCtxRetain && d.cuCtxSetCurrent) {
    CHECK(d.cuDeviceGet(&dev, 0));
    CHECK(d.cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(d.cuCtxSetCurrent(ctx));
  }
  CHECK(d.cuModuleLoadData(&mod, gpuobs::example::kAddOnePtx));
  CHECK(d.cuModuleGetFunction(&fn, mod, "add_one"));

  Handle s[1 + kWorkers];
  for (auto& st : s) CHECK(d.cuStreamCreate(&st, 1 /* CU_STREAM_NON_BLOCKING */));
  Handle in_ready, done[kWorkers];
  CHECK(d.cuEventCreate(&in_ready, 2));
  for (auto& e : done) CHECK(d.cuEventCreate(&e, 2));
  CUdeviceptr bufs[kWorkers];
  void* pinned_in = nullptr;
  void* pinned_out[kWorkers];
  CHECK(d.cuMemAllocHost(&pinned_in, kBytes));
  if (verify) std::memset(pinned_in, 0, kBytes);  // a fake libcuda's host pointers are not memory
  for (unsigned k = 0; k < kWorkers; ++k) {
    CHECK(d.cuMemAlloc(&bufs[k], kBytes));
    CHECK(d.cuMemAllocHost(&pinned_out[k], kBytes));
  }

  unsigned n = kN;
  const unsigned block = 256, grid = (kN + block - 1) / block;
  for (unsigned it = 0; it < iterations; ++it) {
    for (unsigned k = 0; k < kWorkers; ++k) CHECK(d.cuMemcpyHtoDAsync(bufs[k], pinned_in, kBytes, s[0]));
    CHECK(d.cuEventRecord(in_ready, s[0]));
    for (unsigned k = 0; k < kWorkers; ++k) {
      if (it == 0 && k == 0 && has_bug("unrecorded-wait")) wait_on_event_never_recorded(s[1 + k]);
      CHECK(d.cuStreamWaitEvent(s[1 + k], in_ready, 0));
      void* params[] = {&bufs[k], &n};
      CHECK(d.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, s[1 + k], params, nullptr));
      CHECK(d.cuEventRecord(done[k], s[1 + k]));
      CHECK(d.cuStreamWaitEvent(s[0], done[k], 0));
      CHECK(d.cuMemcpyDtoHAsync(pinned_out[k], bufs[k], kBytes, s[0]));
    }
  }
  if (has_bug("free-while-queued")) free_while_copy_queued(s[0], pinned_in);
  if (has_bug("pageable-copy")) copy_from_pageable_memory(s[0], bufs[0]);
  if (has_bug("race")) memset_on_another_stream(s[2], bufs[0]);
  CHECK(d.cuStreamSynchronize(s[0]));
  CHECK(d.cuEventSynchronize(done[kWorkers - 1]));
  CHECK(d.cuCtxSynchronize());

  int bad = 0;
  if (verify)
    for (unsigned k = 0; k < kWorkers; ++k)
      for (unsigned i = 0; i < kN && !bad; ++i)
        if (static_cast<float*>(pinned_out[k])[i] != 1.0f) {
          std::fprintf(stderr, "stream_pipeline: buffer %u element %u is %f, expected 1\n", k, i,
                       static_cast<float*>(pinned_out[k])[i]);
          bad = 1;
        }
  for (unsigned k = 0; k < kWorkers; ++k) {
    CHECK(d.cuMemFree(bufs[k]));
    CHECK(d.cuMemFreeHost(pinned_out[k]));
  }
  CHECK(d.cuMemFreeHost(pinned_in));
  for (auto& e : done) CHECK(d.cuEventDestroy(e));
  CHECK(d.cuEventDestroy(in_ready));
  for (auto& st : s) CHECK(d.cuStreamDestroy(st));
  std::printf("stream_pipeline: %u iterations over %u streams (bug: %s)%s\n", iterations, 1 + kWorkers, bug.c_str(),
              verify ? (bad ? ", results WRONG" : ", results verified") : "");
  return bad;
}
