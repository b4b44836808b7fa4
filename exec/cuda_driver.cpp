#include "exec/cuda_driver.h"

#include <dlfcn.h>

namespace gpuobs::exec {
namespace {

template <class F>
bool resolve(void* lib, const char* name, F& fn, std::string& why) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) why = std::string(name) + " not found in libcuda";
  return fn != nullptr;
}

}  // namespace

std::string CudaDriver::error_text(CUresult r) const {
  const char* name = nullptr;
  if (cuGetErrorName && cuGetErrorName(r, &name) == 0 && name)
    return std::string(name) + " (" + std::to_string(r) + ")";
  // The ones a host without a usable GPU gives, for a driver without cuGetErrorName (the toolkit's stub).
  switch (r) {
    case 3: return "CUDA_ERROR_NOT_INITIALIZED (3)";
    case 34: return "CUDA_ERROR_STUB_LIBRARY (34): the CUDA toolkit's stub, not the driver";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER (35)";
    case 100: return "CUDA_ERROR_NO_DEVICE (100)";
    default: return "error " + std::to_string(r);
  }
}

bool load_driver(const std::string& path, CudaDriver& d, std::string& why) {
  const std::string file = path.empty() ? "libcuda.so.1" : path;
  void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    why = "cannot load " + file + ": " + (e ? e : "not found") +
          " (the NVIDIA driver's libcuda.so.1; set LD_LIBRARY_PATH to its directory or pass --cuda-lib)";
    return false;
  }
  bool ok =
      resolve(lib, "cuInit", d.cuInit, why) && resolve(lib, "cuDeviceGetCount", d.cuDeviceGetCount, why) &&
      resolve(lib, "cuDeviceGet", d.cuDeviceGet, why) &&
      resolve(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, why) &&
      resolve(lib, "cuCtxSetCurrent", d.cuCtxSetCurrent, why) &&
      resolve(lib, "cuCtxSynchronize", d.cuCtxSynchronize, why) &&
      resolve(lib, "cuModuleLoadData", d.cuModuleLoadData, why) &&
      resolve(lib, "cuModuleGetFunction", d.cuModuleGetFunction, why) &&
      resolve(lib, "cuMemAlloc_v2", d.cuMemAlloc, why) && resolve(lib, "cuMemAllocHost_v2", d.cuMemAllocHost, why) &&
      resolve(lib, "cuMemcpyHtoD_v2", d.cuMemcpyHtoD, why) && resolve(lib, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH, why) &&
      resolve(lib, "cuMemcpyDtoD_v2", d.cuMemcpyDtoD, why) &&
      resolve(lib, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync, why) &&
      resolve(lib, "cuMemcpyDtoHAsync_v2", d.cuMemcpyDtoHAsync, why) &&
      resolve(lib, "cuMemcpyDtoDAsync_v2", d.cuMemcpyDtoDAsync, why) &&
      resolve(lib, "cuMemsetD8Async", d.cuMemsetD8Async, why) &&
      resolve(lib, "cuStreamCreate", d.cuStreamCreate, why) &&
      resolve(lib, "cuStreamCreateWithPriority", d.cuStreamCreateWithPriority, why) &&
      resolve(lib, "cuStreamSynchronize", d.cuStreamSynchronize, why) &&
      resolve(lib, "cuStreamWaitEvent", d.cuStreamWaitEvent, why) &&
      resolve(lib, "cuEventCreate", d.cuEventCreate, why) && resolve(lib, "cuEventRecord", d.cuEventRecord, why) &&
      resolve(lib, "cuEventSynchronize", d.cuEventSynchronize, why) &&
      resolve(lib, "cuLaunchHostFunc", d.cuLaunchHostFunc, why) &&
      resolve(lib, "cuLaunchKernel", d.cuLaunchKernel, why);
  if (!ok) return false;
  // Optional: without them the calibration is skipped and errors are numbers.
  // CUDA 12.8+ headers map cuEventElapsedTime to _v2 (same arguments); older drivers have only the first.
  void* elapsed = dlsym(lib, "cuEventElapsedTime_v2");
  if (!elapsed) elapsed = dlsym(lib, "cuEventElapsedTime");
  d.cuEventElapsedTime = reinterpret_cast<decltype(d.cuEventElapsedTime)>(elapsed);
  d.cuGetErrorName = reinterpret_cast<decltype(d.cuGetErrorName)>(dlsym(lib, "cuGetErrorName"));
  d.cuDeviceGetName = reinterpret_cast<decltype(d.cuDeviceGetName)>(dlsym(lib, "cuDeviceGetName"));
  return true;
}

}  // namespace gpuobs::exec
