// The writer's launch aggregates (schema/migrations/005_launch_agg.sql):
// every launch stored is also added here, and each batch's sums are merged
// into launch_agg before the batch commits, so the two never disagree.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "store/db.h"

namespace gpuobs {

class LaunchAggregator {
 public:
  Status prepare(sqlite3* db);
  void set_capture_start(uint64_t start_mono_ns) { t0_ = start_mono_ns; }
  void add(int64_t process_id, std::string_view api, uint64_t function, const std::string* kernel, uint64_t stream,
           int64_t stack_id, uint64_t ts_ns, uint64_t grid, uint64_t block, uint64_t shmem, bool cooperative);
  // Merges the batch's sums into launch_agg; SQLITE_DONE on success.
  int flush();
  void clear() { pending_.clear(); }

 private:
  using Key = std::tuple<int64_t, std::string, uint64_t, std::string, uint64_t, int64_t, int64_t>;
  struct Sums {
    int64_t launches = 0;
    uint64_t grid_sum = 0, grid_min = UINT64_MAX, grid_max = 0;
    uint64_t block_sum = 0, block_min = UINT64_MAX, block_max = 0;
    uint64_t shmem_sum = 0, cooperative = 0;
    uint64_t first_ns = UINT64_MAX, last_ns = 0;
  };
  std::map<Key, Sums> pending_;
  Stmt upsert_;
  uint64_t t0_ = 0;
};

}  // namespace gpuobs
