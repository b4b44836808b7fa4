// GPU metric samples (gpu_metrics/) bound into the tables of
// schema/migrations/019_gpu_metrics.sql. A value is stored when it differs
// from the last one stored for its GPU and metric (or process) in this file,
// so a file holds each series' changes and a rotated segment starts with
// every current value again. Used by the writer thread only.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "common/result.h"
#include "gpu_metrics/gpu_sample.h"
#include "store/db.h"

namespace gpuobs {

class GpuMetricRowWriter {
 public:
  Status prepare(sqlite3* db);
  // The GPUs, the metric and throttle-reason names and the sources (the
  // caller's transaction, or autocommit). Kept for the next segment.
  Status write_gpus(const std::vector<gpumetrics::GpuInfo>& gpus, const std::vector<gpumetrics::SourceStatus>& sources,
                    uint32_t hz);
  // One batch's samples in its own transaction; t0: capture.start_mono_ns.
  // Returns the rows that could not be written (0: all, or nothing changed).
  uint64_t write(const gpumetrics::SampleBatch& batch, int64_t t0);
  // gpuobsd rotation: the new file repeats the GPUs and sources, and every
  // series' last value at its start (t 0), so each segment stands alone even
  // for the series asked seldom (GPM, ECC: every 10 s).
  Status carry_from(const GpuMetricRowWriter& prev);
  bool has_gpus() const { return !gpus_.empty(); }
  uint64_t rows_written() const { return rows_written_; }
  uint64_t samples_unchanged() const { return unchanged_; }

 private:
  sqlite3* db_ = nullptr;
  Stmt sample_, process_, event_;
  std::vector<gpumetrics::GpuInfo> gpus_;
  std::vector<gpumetrics::SourceStatus> sources_;
  uint32_t hz_ = 0;
  // The last value stored in this file, per (gpu, metric) and (gpu, pid).
  std::map<std::pair<uint32_t, uint16_t>, double> last_;
  std::map<std::pair<uint32_t, uint32_t>, std::tuple<int32_t, int32_t, int64_t>> last_proc_;
  uint64_t rows_written_ = 0, unchanged_ = 0;
};

}  // namespace gpuobs
