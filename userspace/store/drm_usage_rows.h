// DRM client samples from /proc/PID/fdinfo (gpu_metrics/drm_fdinfo.h) into
// drm_clients, drm_engine_samples and drm_memory_samples
// (schema/migrations/027_gpu_jobs.sql). Used only by the writer thread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "gpu_metrics/drm_fdinfo.h"
#include "store/db.h"

namespace gpuobs {

class DrmUsageRowWriter {
 public:
  Status prepare(sqlite3* db);
  // One hand-over's samples in the caller's transaction; process_for gives
  // processes.id of a tgid. Returns the rows that failed.
  uint64_t write(const std::vector<gpumetrics::DrmClientSample>& samples,
                 const std::function<int64_t(uint32_t)>& process_for);
  void forget() { clients_.clear(); }

 private:
  sqlite3* db_ = nullptr;
  Stmt ins_client_, ins_engine_, ins_memory_;
  // (tgid, client id, or fd when the driver prints no client id) -> drm_clients.id
  std::map<std::tuple<uint32_t, bool, uint64_t>, int64_t> clients_;
};

}  // namespace gpuobs
