// The GPU metrics gpuobs samples: one enum, one name and unit each. The
// capture stores the table (gpu_metric_names) so users' SQL and the reports
// read names, never these numbers; a metric's number is fixed once released
// (only add at the end).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace gpuobs::gpumetrics {

enum class GpuMetric : uint16_t {
  gpu_util_pct = 1,      // NVML: time a kernel ran in the last period; AMD: gpu_busy_percent
  mem_util_pct,          // NVML: time device memory was read or written; AMD: mem_busy_percent
  mem_used_bytes,        //
  mem_total_bytes,       //
  power_mw,              // board power draw
  sm_clock_mhz,          // NVML SM clock; AMD sclk
  mem_clock_mhz,         //
  temperature_c,         // GPU die
  clocks_event_reasons,  // NVML's clocks event (throttle) reasons: flags, see kThrottleReasons
  ecc_corrected_errors,  // volatile (since driver load) totals
  ecc_uncorrected_errors,
  // GPM (Hopper and later), over the interval since the previous GPM sample:
  graphics_active_pct,
  sm_active_pct,
  sm_occupancy_pct,
  tensor_active_pct,  // any tensor-core operation
  hmma_active_pct,
  imma_active_pct,
  dfma_active_pct,
  dram_bw_util_pct,
  fp64_active_pct,
  fp32_active_pct,
  fp16_active_pct,
  integer_active_pct,
  pcie_tx_mibps,
  pcie_rx_mibps,
  nvlink_tx_mibps,
  nvlink_rx_mibps,
  mem_reserved_bytes,  // NVML: device memory the driver and firmware reserve (not in mem_used_bytes)
};

struct MetricInfo {
  GpuMetric metric;
  std::string_view name;  // also the Prometheus label value
  std::string_view unit;
  std::string_view description;
};

// Every metric, in enum order.
std::span<const MetricInfo> metric_catalogue();
const MetricInfo& metric_info(GpuMetric m);

// NVML's clocks event reasons ("throttle reasons"): bit -> name.
struct ThrottleReason {
  uint64_t bit;
  std::string_view name;
};
std::span<const ThrottleReason> throttle_reasons();

}  // namespace gpuobs::gpumetrics
