#include "gpu_metrics/metric_catalogue.h"

#include <array>

namespace gpuobs::gpumetrics {
namespace {

using enum GpuMetric;
constexpr std::array kMetrics{
    MetricInfo{gpu_util_pct, "gpu_util_pct", "%", "time one or more kernels ran (NVML) / GPU busy (AMD)"},
    MetricInfo{mem_util_pct, "mem_util_pct", "%", "time device memory was read or written"},
    MetricInfo{mem_used_bytes, "mem_used_bytes", "bytes", "device memory allocated (nvidia-smi's \"used\")"},
    MetricInfo{mem_total_bytes, "mem_total_bytes", "bytes", "device memory"},
    MetricInfo{power_mw, "power_mw", "mW", "board power draw"},
    MetricInfo{sm_clock_mhz, "sm_clock_mhz", "MHz", "SM clock (AMD: sclk)"},
    MetricInfo{mem_clock_mhz, "mem_clock_mhz", "MHz", "memory clock"},
    MetricInfo{temperature_c, "temperature_c", "C", "GPU die temperature"},
    MetricInfo{clocks_event_reasons, "clocks_event_reasons", "flags",
               "why clocks are held down (gpu_throttle_reasons names the bits)"},
    MetricInfo{ecc_corrected_errors, "ecc_corrected_errors", "count", "corrected ECC errors since driver load"},
    MetricInfo{ecc_uncorrected_errors, "ecc_uncorrected_errors", "count", "uncorrected ECC errors since driver load"},
    MetricInfo{graphics_active_pct, "graphics_active_pct", "%", "GPM: time any graphics/compute engine was busy"},
    MetricInfo{sm_active_pct, "sm_active_pct", "%", "GPM: SMs busy (Nsight's 'SM active')"},
    MetricInfo{sm_occupancy_pct, "sm_occupancy_pct", "%", "GPM: resident warps over the maximum"},
    MetricInfo{tensor_active_pct, "tensor_active_pct", "%", "GPM: SMs doing any tensor-core work"},
    MetricInfo{hmma_active_pct, "hmma_active_pct", "%", "GPM: SMs doing HMMA (FP16/BF16) tensor work"},
    MetricInfo{imma_active_pct, "imma_active_pct", "%", "GPM: SMs doing IMMA (integer) tensor work"},
    MetricInfo{dfma_active_pct, "dfma_active_pct", "%", "GPM: SMs doing DFMA (FP64) tensor work"},
    MetricInfo{dram_bw_util_pct, "dram_bw_util_pct", "%", "GPM: DRAM bandwidth over the maximum"},
    MetricInfo{fp64_active_pct, "fp64_active_pct", "%", "GPM: SMs doing non-tensor FP64"},
    MetricInfo{fp32_active_pct, "fp32_active_pct", "%", "GPM: SMs doing non-tensor FP32"},
    MetricInfo{fp16_active_pct, "fp16_active_pct", "%", "GPM: SMs doing non-tensor FP16"},
    MetricInfo{integer_active_pct, "integer_active_pct", "%", "GPM: SMs doing integer operations"},
    MetricInfo{pcie_tx_mibps, "pcie_tx_mibps", "MiB/s", "GPM: PCIe traffic from the GPU"},
    MetricInfo{pcie_rx_mibps, "pcie_rx_mibps", "MiB/s", "GPM: PCIe traffic to the GPU"},
    MetricInfo{nvlink_tx_mibps, "nvlink_tx_mibps", "MiB/s", "GPM: NVLink writes, all links"},
    MetricInfo{nvlink_rx_mibps, "nvlink_rx_mibps", "MiB/s", "GPM: NVLink reads, all links"},
    MetricInfo{mem_reserved_bytes, "mem_reserved_bytes", "bytes",
               "device memory the driver and firmware reserve (not in mem_used_bytes)"},
};

// NVML's nvmlClocksEventReason* bits (nvml.h).
constexpr std::array kReasons{
    ThrottleReason{0x1, "gpu_idle"},
    ThrottleReason{0x2, "applications_clocks_setting"},
    ThrottleReason{0x4, "sw_power_cap"},
    ThrottleReason{0x8, "hw_slowdown"},
    ThrottleReason{0x10, "sync_boost"},
    ThrottleReason{0x20, "sw_thermal_slowdown"},
    ThrottleReason{0x40, "hw_thermal_slowdown"},
    ThrottleReason{0x80, "hw_power_brake_slowdown"},
    ThrottleReason{0x100, "display_clock_setting"},
};

constexpr bool in_enum_order() {
  for (size_t i = 0; i < kMetrics.size(); ++i)
    if (static_cast<size_t>(kMetrics[i].metric) != i + 1) return false;
  return true;
}
static_assert(in_enum_order(), "kMetrics must list every GpuMetric in enum order, from 1");

}  // namespace

std::span<const MetricInfo> metric_catalogue() { return kMetrics; }

const MetricInfo& metric_info(GpuMetric m) { return kMetrics[static_cast<size_t>(m) - 1]; }

std::span<const ThrottleReason> throttle_reasons() { return kReasons; }

}  // namespace gpuobs::gpumetrics
