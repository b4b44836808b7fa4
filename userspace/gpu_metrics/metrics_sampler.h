// The sampler thread: asks every source at a fixed rate (--metrics-hz) and
// keeps what they said in an outbox the capture session empties into the
// writer (on its polling thread, so a segment rotation never races it), and
// the latest value of each GPU metric for gpuobsd's Prometheus page.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu_metrics/metric_source.h"

namespace gpuobs::gpumetrics {

struct SamplerStats {
  uint64_t ticks = 0;
  uint64_t late_ticks = 0;    // a tick that began a whole period late (the sampler could not keep the rate)
  uint64_t query_errors = 0;  // failed queries, every source
  uint64_t dropped = 0;       // samples lost because the outbox was not emptied (over kMaxOutbox)
  uint64_t cpu_ns = 0;        // the sampler thread's own CPU time
  DrmScanStats drm;           // the fdinfo scanner's (set_drm_scanner)
};

struct LatestValue {
  uint32_t gpu;
  GpuMetric metric;
  double value;
};

class MetricsSampler {
 public:
  // Finds the sources: NVML (loaded at run time) and AMD's sysfs. A source
  // that has no GPU is kept only for its status (why it gives nothing).
  // detail_period_ns: how often the costly NVML queries run (GPM's
  // averaging interval, the per-process utilization).
  static std::unique_ptr<MetricsSampler> create(uint32_t hz, int64_t detail_period_ns);
  // Tests: these sources.
  static std::unique_ptr<MetricsSampler> with_sources(uint32_t hz, std::vector<std::unique_ptr<MetricSource>> sources,
                                                      std::vector<SourceStatus> absent);
  ~MetricsSampler();

  const std::vector<GpuInfo>& gpus() const { return gpus_; }
  // Every source looked at, with or without GPUs, and those that did not load.
  std::vector<SourceStatus> statuses() const;
  // One line for people: "2 GPUs (nvml: /usr/.../libnvidia-ml.so.1), 10 Hz",
  // or "no GPU (nvml: no libnvidia-ml.so.1 (looked in ...); amd_sysfs: no AMD GPU)".
  std::string summary() const;
  // Before start(): read the DRM clients' fdinfo at every tick too
  // (drm_fdinfo.h); their samples come out in SampleBatch::drm.
  void set_drm_scanner(std::unique_ptr<DrmFdinfoScanner> scanner) { drm_ = std::move(scanner); }
  void start();
  // Stops the thread (idempotent).
  void stop();
  // Moves what was sampled since the last call into out (appended).
  void take(SampleBatch& out);
  std::vector<LatestValue> latest() const;
  // The DRM clients as the last tick read them (empty without a scanner).
  std::vector<DrmClientSample> latest_drm() const;
  SamplerStats stats() const;
  uint32_t hz() const { return hz_; }

  static constexpr size_t kMaxOutbox = 1'000'000;

 private:
  MetricsSampler() = default;
  void run();
  void tick(int64_t now_ns);

  uint32_t hz_ = 0;
  std::vector<std::unique_ptr<MetricSource>> sources_;
  std::vector<SourceStatus> absent_;
  std::vector<GpuInfo> gpus_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  SampleBatch outbox_;               // guarded by mu_
  std::vector<LatestValue> latest_;  // guarded by mu_
  std::vector<size_t> latest_slot_;  // guarded by mu_: (gpu, metric) -> index into latest_
  static constexpr size_t kNoSlot = SIZE_MAX;
  SamplerStats stats_;                       // guarded by mu_
  SampleBatch scratch_;                      // the sampler thread's
  std::unique_ptr<DrmFdinfoScanner> drm_;    // the sampler thread's, after start()
  std::vector<DrmClientSample> latest_drm_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace gpuobs::gpumetrics
