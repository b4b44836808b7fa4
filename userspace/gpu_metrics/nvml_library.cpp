#include "gpu_metrics/nvml_library.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <fmt/format.h>

namespace gpuobs::gpumetrics {
namespace {

constexpr const char* kSoname = "libnvidia-ml.so.1";

template <class F>
void bind(void* h, F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(h, name));
}

// The file a handle came from (dlopen by soname hides which one it found).
std::string loaded_path(void* h, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) return map->l_name;
  return fallback;
}

}  // namespace

std::vector<std::string> NvmlLibrary::fallback_dirs() {
  // Container runtimes and cloud images put the driver's user-space
  // libraries here without adding them to the ld.so cache (the lent H100
  // host: /usr/local/nvidia/lib64 through LD_LIBRARY_PATH only).
  return {"/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu/nvidia/current", "/usr/lib64/nvidia", "/usr/lib/nvidia",
          "/usr/local/cuda/lib64/stubs"};
}

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::open() {
  // RTLD_LOCAL: NVML's symbols stay out of gpuobs's global namespace.
  if (void* h = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL)) {
    dlclose(h);  // open_path takes its own reference (dlopen counts them)
    return open_path(kSoname);
  }
  for (const auto& dir : fallback_dirs()) {
    std::string p = dir + "/" + kSoname;
    if (access(p.c_str(), R_OK) == 0) return open_path(p);
  }
  std::string dirs;
  for (const auto& d : fallback_dirs()) dirs += (dirs.empty() ? "" : ", ") + d;
  return make_error(fmt::format("no {} (looked in LD_LIBRARY_PATH, the ld.so cache, {})", kSoname, dirs),
                    "NVIDIA GPU metrics need the driver's NVML; without it no NVIDIA metrics are sampled");
}

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::open_path(const std::string& path) {
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char* e = dlerror();
    return make_error(fmt::format("cannot load {}: {}", path, e ? e : "unknown error"));
  }
  lib->path_ = loaded_path(lib->handle_, path);
  void* h = lib->handle_;
  auto& f = lib->fn_;
  bind(h, f.init, "nvmlInit_v2");
  bind(h, f.shutdown, "nvmlShutdown");
  bind(h, f.error_string, "nvmlErrorString");
  bind(h, f.driver_version, "nvmlSystemGetDriverVersion");
  bind(h, f.device_count, "nvmlDeviceGetCount_v2");
  bind(h, f.handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  bind(h, f.uuid, "nvmlDeviceGetUUID");
  bind(h, f.name, "nvmlDeviceGetName");
  bind(h, f.pci_info, "nvmlDeviceGetPciInfo_v3");
  bind(h, f.utilization, "nvmlDeviceGetUtilizationRates");
  bind(h, f.memory, "nvmlDeviceGetMemoryInfo");
  bind(h, f.memory_v2, "nvmlDeviceGetMemoryInfo_v2");
  bind(h, f.power, "nvmlDeviceGetPowerUsage");
  bind(h, f.clock, "nvmlDeviceGetClockInfo");
  bind(h, f.temperature, "nvmlDeviceGetTemperature");
  bind(h, f.clocks_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!f.clocks_event_reasons) bind(h, f.clocks_event_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  bind(h, f.ecc_total, "nvmlDeviceGetTotalEccErrors");
  bind(h, f.process_utilization, "nvmlDeviceGetProcessUtilization");
  bind(h, f.compute_processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  bind(h, f.event_set_create, "nvmlEventSetCreate");
  bind(h, f.register_events, "nvmlDeviceRegisterEvents");
  bind(h, f.event_set_wait, "nvmlEventSetWait_v2");
  bind(h, f.event_set_free, "nvmlEventSetFree");
  bind(h, f.gpm_support, "nvmlGpmQueryDeviceSupport");
  bind(h, f.gpm_sample_alloc, "nvmlGpmSampleAlloc");
  bind(h, f.gpm_sample_free, "nvmlGpmSampleFree");
  bind(h, f.gpm_sample_get, "nvmlGpmSampleGet");
  bind(h, f.gpm_metrics_get, "nvmlGpmMetricsGet");
  if (!f.init || !f.device_count || !f.handle_by_index)
    return make_error(
        fmt::format("{} is not NVML (nvmlInit_v2, nvmlDeviceGetCount_v2 or "
                    "nvmlDeviceGetHandleByIndex_v2 missing)",
                    lib->path_));
  nvml::Return r = f.init();
  if (r != nvml::kSuccess)
    return make_error(fmt::format("NVML ({}) did not initialize: {}", lib->path_, lib->error_text(r)),
                      "a stub NVML, or no NVIDIA driver loaded: no NVIDIA metrics are sampled");
  lib->initialized_ = true;
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (initialized_ && fn_.shutdown) fn_.shutdown();
  if (handle_) dlclose(handle_);
}

std::string NvmlLibrary::error_text(nvml::Return r) const {
  const char* s = fn_.error_string ? fn_.error_string(r) : nullptr;
  return s ? fmt::format("{} (NVML error {})", s, r) : fmt::format("NVML error {}", r);
}

}  // namespace gpuobs::gpumetrics
