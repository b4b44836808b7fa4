#include "store/launch_agg.h"

#include <algorithm>

namespace gpuobs {

Status LaunchAggregator::prepare(sqlite3* db) {
  upsert_ = Stmt(db,
      "INSERT INTO launch_agg (process_id, api, function, kernel_name, stream, stack_id, bucket_s, launches,"
      " grid_sum, grid_min, grid_max, block_sum, block_min, block_max, shmem_sum, cooperative, first_ns, last_ns)"
      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
      " ON CONFLICT DO UPDATE SET launches = launches + excluded.launches, grid_sum = grid_sum + excluded.grid_sum,"
      " grid_min = min(grid_min, excluded.grid_min), grid_max = max(grid_max, excluded.grid_max),"
      " block_sum = block_sum + excluded.block_sum, block_min = min(block_min, excluded.block_min),"
      " block_max = max(block_max, excluded.block_max), shmem_sum = shmem_sum + excluded.shmem_sum,"
      " cooperative = cooperative + excluded.cooperative, first_ns = min(first_ns, excluded.first_ns),"
      " last_ns = max(last_ns, excluded.last_ns)");
  if (!upsert_.valid()) return make_error(std::string("cannot prepare launch aggregates: ") + sqlite3_errmsg(db));
  return {};
}

void LaunchAggregator::add(int64_t process_id, std::string_view api, uint64_t function, const std::string* kernel,
                           uint64_t stream, int64_t stack_id, uint64_t ts_ns, uint64_t grid, uint64_t block,
                           uint64_t shmem, bool cooperative) {
  int64_t bucket = ts_ns >= t0_ ? static_cast<int64_t>((ts_ns - t0_) / 1'000'000'000) : -1;
  Sums& s = pending_[Key{process_id, std::string(api), function, kernel ? *kernel : std::string(), stream, stack_id,
                         bucket}];
  ++s.launches;
  s.grid_sum += grid, s.grid_min = std::min(s.grid_min, grid), s.grid_max = std::max(s.grid_max, grid);
  s.block_sum += block, s.block_min = std::min(s.block_min, block), s.block_max = std::max(s.block_max, block);
  s.shmem_sum += shmem;
  s.cooperative += cooperative;
  s.first_ns = std::min(s.first_ns, ts_ns), s.last_ns = std::max(s.last_ns, ts_ns);
}

int LaunchAggregator::flush() {
  for (const auto& [k, s] : pending_) {
    const auto& [pid, api, fn, kernel, stream, stack, bucket] = k;
    upsert_.bind(1, pid).bind(2, api).bind(3, fn).bind(4, kernel).bind(5, stream).bind(6, stack).bind(7, bucket)
        .bind(8, s.launches).bind(9, s.grid_sum).bind(10, s.grid_min).bind(11, s.grid_max).bind(12, s.block_sum)
        .bind(13, s.block_min).bind(14, s.block_max).bind(15, s.shmem_sum).bind(16, s.cooperative)
        .bind(17, s.first_ns).bind(18, s.last_ns);
    int rc = upsert_.exec();
    if (rc != SQLITE_DONE) {
      pending_.clear();  // the writer rolls the batch back
      return rc;
    }
  }
  pending_.clear();
  return SQLITE_DONE;
}

}  // namespace gpuobs
