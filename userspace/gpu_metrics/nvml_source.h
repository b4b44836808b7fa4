// NVIDIA GPUs through NVML: per GPU utilization, memory, power, clocks,
// temperature, clocks event (throttle) reasons, ECC totals; GPM metrics on
// GPUs that support them (Hopper and later); per process SM/memory
// utilization and memory; Xid and ECC events.
#pragma once

#include <array>
#include <memory>
#include <unordered_map>
#include <vector>

#include "gpu_metrics/metric_source.h"
#include "gpu_metrics/nvml_library.h"

namespace gpuobs::gpumetrics {

class NvmlSource : public MetricSource {
 public:
  // first_index: the sampler index of this source's first GPU.
  NvmlSource(std::unique_ptr<NvmlLibrary> lib, uint32_t first_index);
  ~NvmlSource() override;

  const std::vector<GpuInfo>& gpus() const override { return gpus_; }
  void sample(int64_t now_ns, SampleBatch& out) override;
  SourceStatus status() const override;
  uint64_t query_errors() const override { return errors_; }

  // GPM needs this long between the two samples it compares (NVML asks for
  // more than 100 ms; 90 lets a 10 Hz sampler's ticks, which may come a
  // little early, use every interval).
  static constexpr int64_t kGpmMinIntervalNs = 90'000'000;

 private:
  // The queries asked of each GPU, each dropped for that GPU once it answers
  // "not supported".
  enum Query : uint8_t {
    q_util, q_memory, q_power, q_sm_clock, q_mem_clock, q_temperature, q_reasons, q_ecc,
    q_proc_util, q_proc_mem, q_gpm, q_count
  };
  struct Device {
    nvml::Device handle = nullptr;
    std::array<bool, q_count> unsupported{};
    unsigned long long proc_seen_us = 0;  // process utilization: samples after this time
    nvml::GpmSample gpm[2] = {nullptr, nullptr};
    int gpm_last = -1;  // index of the last GPM sample taken, -1 none
    int64_t gpm_last_ns = 0;
    struct Proc {
      int32_t sm = -1, mem = -1;
      int64_t bytes = -1;
    };
    std::unordered_map<uint32_t, Proc> procs;  // listed at the last tick
  };
  // Runs a query unless the GPU does not support it; false when it gave nothing.
  bool ask(Device& d, Query q, nvml::Return r);
  void sample_device(uint32_t gpu, Device& d, int64_t now_ns, SampleBatch& out);
  void sample_processes(uint32_t gpu, Device& d, int64_t now_ns, SampleBatch& out);
  void sample_gpm(uint32_t gpu, Device& d, int64_t now_ns, SampleBatch& out);
  void drain_events(int64_t now_ns, SampleBatch& out);

  std::unique_ptr<NvmlLibrary> lib_;
  std::vector<GpuInfo> gpus_;
  std::vector<Device> devices_;
  nvml::EventSet events_ = nullptr;
  std::vector<nvml::ProcessUtilizationSample> util_buf_;
  std::vector<nvml::ProcessInfo> proc_buf_;
  uint64_t errors_ = 0;
  std::string status_ = "ok";
};

}  // namespace gpuobs::gpumetrics
