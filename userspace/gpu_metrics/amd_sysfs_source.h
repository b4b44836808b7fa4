// AMD GPUs from the amdgpu driver's sysfs files, no library needed:
// /sys/class/drm/cardN/device/{gpu_busy_percent, mem_busy_percent,
// mem_info_vram_used, mem_info_vram_total} and its hwmon directory (power,
// temperature, sclk and mclk).
#pragma once

#include <string>
#include <vector>

#include "gpu_metrics/metric_source.h"

namespace gpuobs::gpumetrics {

class AmdSysfsSource : public MetricSource {
 public:
  // drm_root: /sys/class/drm, or a copy of its layout (tests).
  AmdSysfsSource(std::string drm_root, uint32_t first_index);

  const std::vector<GpuInfo>& gpus() const override { return gpus_; }
  void sample(int64_t now_ns, SampleBatch& out) override;
  SourceStatus status() const override;
  uint64_t query_errors() const override { return errors_; }

  // The default root, or GPUOBS_DRM_ROOT (the tests' fake tree).
  static std::string default_root();

 private:
  struct Card {
    std::string device;  // .../cardN/device
    std::string hwmon;   // .../device/hwmon/hwmonM, empty: none
  };
  // A file's first integer; false when it is missing or holds none.
  bool read_number(const std::string& path, double& v);
  std::string root_;
  std::vector<GpuInfo> gpus_;
  std::vector<Card> cards_;
  uint64_t errors_ = 0;
};

}  // namespace gpuobs::gpumetrics
