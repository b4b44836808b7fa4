// NVIDIA GPUs through NVML: per GPU utilization, memory, power, clocks,
// temperature, clocks event (throttle) reasons, ECC totals; GPM metrics on
// GPUs that support them (Hopper and later); per process SM/memory
// utilization and memory; Xid and ECC events.
#pragma once

#include <array>
#include <cstdint>
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

  // The queries asked of each GPU, each dropped for that GPU once it answers
  // "not supported".
  enum Query : uint8_t {
    q_util,
    q_memory,
    q_power,
    q_sm_clock,
    q_mem_clock,
    q_temperature,
    q_reasons,
    q_ecc,
    q_proc_util,
    q_proc_mem,
    q_gpm,          // nvmlGpmSampleGet (and the GPM period, and "not supported")
    q_gpm_metrics,  // nvmlGpmMetricsGet: its cost only
    q_events,
    q_count
  };
  static const char* query_name(Query q);
  // How often each query is asked at most (0: every tick). Each NVML call
  // is an ioctl into the driver; what changes slowly or is costly is asked
  // less often (docs/gpu_metrics.md, "Cost").
  static int64_t default_period_ns(Query q);
  void set_period_ns(Query q, int64_t ns) { period_ns_[q] = ns; }

  // The CPU time each query takes, summed over the GPUs (bench/metrics_bench:
  // profile on). Off by default: the clock reads cost more than some queries.
  struct QueryCost {
    uint64_t calls = 0, cpu_ns = 0;
  };
  void set_profile(bool on) { profile_ = on; }
  const std::array<QueryCost, q_count>& costs() const { return costs_; }

 private:
  struct Device {
    nvml::Device handle = nullptr;
    std::array<bool, q_count> unsupported{};
    std::array<int64_t, q_count> asked_ns{};  // when each query was last asked
    unsigned long long proc_seen_us = 0;      // process utilization: samples after this time (CLOCK_REALTIME us)
    nvml::GpmSample gpm[2] = {nullptr, nullptr};
    int gpm_last = -1;  // index of the last GPM sample taken, -1 none
    int64_t gpm_last_ns = 0;
    struct Proc {
      int32_t sm = -1, mem = -1;
      int64_t bytes = -1;
      int64_t last_ns = INT64_MIN;  // its last row's time
    };
    std::unordered_map<uint32_t, Proc> procs;  // listed at the last tick
  };
  // Is q due on d at now (supported, its function present, its period past)?
  bool due(Device& d, Query q, const void* fn, int64_t now_ns);
  // Runs fn (an NVML call) for query q, timed when profiling.
  template <class F>
  nvml::Return call(Query q, F&& fn);
  // What a query's answer means: true when it gave values; "not supported"
  // drops q for this GPU; other errors are counted.
  bool judge(Device& d, Query q, nvml::Return r);
  template <class F>
  bool ask(Device& d, Query q, F&& fn);
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
  std::array<int64_t, q_count> period_ns_{};
  bool profile_ = false;
  std::array<QueryCost, q_count> costs_{};
  int64_t events_asked_ns_ = 0;
};

}  // namespace gpuobs::gpumetrics
