// What a sampling tick produces, as plain values: the store writes them, the
// daemon's Prometheus page shows the latest. Times are CLOCK_MONOTONIC ns
// (the capture's clock).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_metrics/drm_fdinfo.h"
#include "gpu_metrics/metric_catalogue.h"

namespace gpuobs::gpumetrics {

// A GPU found at the sampler's start; `index` is its place in the sampler's
// list (the gpus table's id is index + 1).
struct GpuInfo {
  uint32_t index = 0;
  std::string vendor;      // "nvidia", "amd"
  std::string uuid;        // NVML's GPU-...; AMD: unique_id when the card has one, else the PCI address
  std::string name;        // product name
  std::string pci_bus_id;  // domain:bus:device.function
  std::string driver;      // driver version
  uint64_t memory_total = 0;
  bool gpm = false;  // GPM metrics sampled
};

struct MetricSample {
  int64_t mono_ns = 0;
  uint32_t gpu = 0;  // GpuInfo::index
  GpuMetric metric{};
  double value = 0;
};

// A process's use of one GPU (NVML: nvmlDeviceGetProcessUtilization and the
// running compute processes). A negative field is "not reported".
struct ProcessSample {
  int64_t mono_ns = 0;
  uint32_t gpu = 0;
  uint32_t pid = 0;
  int32_t sm_util_pct = -1;
  int32_t mem_util_pct = -1;
  int64_t memory_bytes = -1;
  bool gone = false;  // no longer listed on this GPU: ends the process's series
};

// Something the GPU reported once: an Xid error, an ECC error event.
struct GpuEvent {
  int64_t mono_ns = 0;
  uint32_t gpu = 0;
  std::string kind;   // "xid", "ecc_single_bit", "ecc_double_bit"
  uint64_t code = 0;  // the Xid number; 0 for ECC events
};

// One tick's output (or several ticks', as the session hands them over).
struct SampleBatch {
  std::vector<MetricSample> metrics;
  std::vector<ProcessSample> processes;
  std::vector<GpuEvent> events;
  // DRM clients' fdinfo (drm_fdinfo.h), per watched process.
  std::vector<DrmClientSample> drm;
  bool empty() const { return metrics.empty() && processes.empty() && events.empty() && drm.empty(); }
  void clear() {
    metrics.clear();
    processes.clear();
    events.clear();
    drm.clear();
  }
};

// What a source says about itself, stored in the capture (gpu_sources) and
// shown by `gpuobs record` and `gpuobs status`.
struct SourceStatus {
  std::string source;   // "nvml", "amd_sysfs"
  std::string library;  // NVML: the file loaded
  std::string status;   // "ok", or why it gives nothing ("no libnvidia-ml.so.1 (looked in ...)", ...)
  uint32_t gpus = 0;
};

}  // namespace gpuobs::gpumetrics
