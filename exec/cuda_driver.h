// The part of the CUDA driver API the schedule executor calls, resolved from
// libcuda.so.1 at run time (no CUDA headers, no link: the binary runs on any
// host and says why when there is no driver or no GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpuobs::exec {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void*;  // CUcontext, CUmodule, CUfunction, CUstream, CUevent
using HostFn = void (*)(void*);

// CUDA's own values (cuda.h).
inline constexpr unsigned kStreamNonBlocking = 0x1;                    // CU_STREAM_NON_BLOCKING
inline constexpr unsigned kEventDisableTiming = 0x2;                   // CU_EVENT_DISABLE_TIMING
inline const Handle kPerThreadStream = reinterpret_cast<Handle>(0x2);  // CU_STREAM_PER_THREAD

struct CudaDriver {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(Handle*, CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(Handle) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuModuleLoadData)(Handle*, const void*) = nullptr;
  CUresult (*cuModuleGetFunction)(Handle*, Handle, const char*) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;                // _v2
  CUresult (*cuMemAllocHost)(void**, size_t) = nullptr;                  // _v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;  // _v2
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;        // _v2
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;  // _v2
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, Handle) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, Handle) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, Handle) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, Handle) = nullptr;
  CUresult (*cuStreamCreate)(Handle*, unsigned) = nullptr;
  CUresult (*cuStreamCreateWithPriority)(Handle*, unsigned, int) = nullptr;
  CUresult (*cuStreamSynchronize)(Handle) = nullptr;
  CUresult (*cuStreamWaitEvent)(Handle, Handle, unsigned) = nullptr;
  CUresult (*cuEventCreate)(Handle*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(Handle, Handle) = nullptr;
  CUresult (*cuEventSynchronize)(Handle) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, Handle, Handle) = nullptr;  // optional: calibration
  CUresult (*cuLaunchHostFunc)(Handle, HostFn, void*) = nullptr;
  CUresult (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Handle,
                             void**, void**) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;  // optional

  // "CUDA_ERROR_NOT_FOUND (500)", or the number alone.
  std::string error_text(CUresult r) const;
};

// Opens `path` (default libcuda.so.1 through the loader's search) and
// resolves every function; on failure, returns false with `why` saying
// what was missing.
bool load_driver(const std::string& path, CudaDriver& d, std::string& why);

}  // namespace gpuobs::exec
