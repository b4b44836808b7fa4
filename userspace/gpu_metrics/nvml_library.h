// NVML, loaded at run time. gpuobs links no vendor library: this finds
// libnvidia-ml.so.1 (the dynamic loader's search, so LD_LIBRARY_PATH and the
// ld.so cache, then the directories drivers install it in outside both, such
// as /usr/local/nvidia/lib64), resolves the functions gpuobs uses and
// initializes NVML. A function the installed NVML lacks stays null and its
// metrics are not sampled.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "gpu_metrics/nvml_api.h"

namespace gpuobs::gpumetrics {

struct NvmlFunctions {
  nvml::Return (*init)() = nullptr;  // nvmlInit_v2
  nvml::Return (*shutdown)() = nullptr;
  const char* (*error_string)(nvml::Return) = nullptr;
  nvml::Return (*driver_version)(char*, unsigned) = nullptr;  // nvmlSystemGetDriverVersion
  nvml::Return (*device_count)(unsigned*) = nullptr;          // nvmlDeviceGetCount_v2
  nvml::Return (*handle_by_index)(unsigned, nvml::Device*) = nullptr;
  nvml::Return (*uuid)(nvml::Device, char*, unsigned) = nullptr;
  nvml::Return (*name)(nvml::Device, char*, unsigned) = nullptr;
  nvml::Return (*pci_info)(nvml::Device, nvml::PciInfo*) = nullptr;  // nvmlDeviceGetPciInfo_v3
  nvml::Return (*utilization)(nvml::Device, nvml::Utilization*) = nullptr;
  nvml::Return (*memory)(nvml::Device, nvml::Memory*) = nullptr;
  nvml::Return (*memory_v2)(nvml::Device, nvml::MemoryV2*) = nullptr;  // nvmlDeviceGetMemoryInfo_v2 (driver 510+)
  nvml::Return (*power)(nvml::Device, unsigned*) = nullptr;            // nvmlDeviceGetPowerUsage, mW
  nvml::Return (*clock)(nvml::Device, int, unsigned*) = nullptr;
  nvml::Return (*temperature)(nvml::Device, int, unsigned*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons, or the older ...ThrottleReasons
  nvml::Return (*clocks_event_reasons)(nvml::Device, unsigned long long*) = nullptr;
  nvml::Return (*ecc_total)(nvml::Device, int, int, unsigned long long*) = nullptr;  // nvmlDeviceGetTotalEccErrors
  nvml::Return (*process_utilization)(nvml::Device, nvml::ProcessUtilizationSample*, unsigned*,
                                      unsigned long long) = nullptr;
  nvml::Return (*compute_processes)(nvml::Device, unsigned*, nvml::ProcessInfo*) = nullptr;  // _v3
  nvml::Return (*event_set_create)(nvml::EventSet*) = nullptr;
  nvml::Return (*register_events)(nvml::Device, unsigned long long, nvml::EventSet) = nullptr;
  nvml::Return (*event_set_wait)(nvml::EventSet, nvml::EventData*, unsigned) = nullptr;  // _v2
  nvml::Return (*event_set_free)(nvml::EventSet) = nullptr;
  nvml::Return (*gpm_support)(nvml::Device, nvml::GpmSupport*) = nullptr;
  nvml::Return (*gpm_sample_alloc)(nvml::GpmSample*) = nullptr;
  nvml::Return (*gpm_sample_free)(nvml::GpmSample) = nullptr;
  nvml::Return (*gpm_sample_get)(nvml::Device, nvml::GpmSample) = nullptr;
  nvml::Return (*gpm_metrics_get)(nvml::GpmMetricsGet*) = nullptr;
};

class NvmlLibrary {
 public:
  // Loads and initializes NVML. The error says what is missing: no library
  // ("no libnvidia-ml.so.1 (looked in ...)"), a library without nvmlInit_v2,
  // or nvmlInit_v2's own error (a stub library, no driver).
  static Result<std::unique_ptr<NvmlLibrary>> open();
  // The same from one file (tests, and a path the user names).
  static Result<std::unique_ptr<NvmlLibrary>> open_path(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlFunctions& fn() const { return fn_; }
  const std::string& path() const { return path_; }  // the file loaded
  std::string error_text(nvml::Return r) const;

  // Where open() looks after the loader's own search.
  static std::vector<std::string> fallback_dirs();

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  std::string path_;
  NvmlFunctions fn_;
  bool initialized_ = false;
};

}  // namespace gpuobs::gpumetrics
