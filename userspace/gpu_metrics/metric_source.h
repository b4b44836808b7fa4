// A source of GPU metrics (NVML, AMD sysfs): the GPUs it found and one
// sampling tick's values. The sampler owns the sources and calls them from
// its one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu_metrics/gpu_sample.h"

namespace gpuobs::gpumetrics {

class MetricSource {
 public:
  virtual ~MetricSource() = default;
  // The GPUs, their indexes the sampler's (assigned at construction).
  virtual const std::vector<GpuInfo>& gpus() const = 0;
  // Appends what the GPUs say now; now_ns is the tick's CLOCK_MONOTONIC time.
  virtual void sample(int64_t now_ns, SampleBatch& out) = 0;
  virtual SourceStatus status() const = 0;
  // Queries that failed (not "not supported": a metric a GPU does not have is
  // asked for once and then left out).
  virtual uint64_t query_errors() const = 0;
};

}  // namespace gpuobs::gpumetrics
