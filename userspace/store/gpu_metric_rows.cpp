#include "store/gpu_metric_rows.h"

#include <cmath>

namespace gpuobs {

using gpumetrics::GpuInfo;
using gpumetrics::SampleBatch;
using gpumetrics::SourceStatus;

Status GpuMetricRowWriter::prepare(sqlite3* db) {
  db_ = db;
  sample_ = Stmt(db, "INSERT INTO gpu_sample_rows (t_ns, gpu_id, metric_id, value) VALUES (?,?,?,?)");
  process_ = Stmt(db,
                  "INSERT INTO gpu_process_rows (t_ns, gpu_id, pid, sm_util_pct, mem_util_pct, memory_bytes, gone)"
                  " VALUES (?,?,?,?,?,?,?)");
  event_ = Stmt(db, "INSERT INTO gpu_events (ts_mono_ns, gpu_id, kind, code) VALUES (?,?,?,?)");
  if (!sample_.valid() || !process_.valid() || !event_.valid())
    return make_error(std::string("cannot prepare the GPU metric inserts: ") + sqlite3_errmsg(db));
  return {};
}

Status GpuMetricRowWriter::write_gpus(const std::vector<GpuInfo>& gpus, const std::vector<SourceStatus>& sources,
                                      uint32_t hz) {
  gpus_ = gpus;
  sources_ = sources;
  hz_ = hz;
  auto fail = [&](const char* what) {
    return make_error(std::string("cannot write ") + what + ": " + sqlite3_errmsg(db_));
  };
  Stmt name(db_, "INSERT OR IGNORE INTO gpu_metric_names (id, name, unit, description) VALUES (?,?,?,?)");
  for (const auto& m : gpumetrics::metric_catalogue())
    if (name.bind(1, static_cast<int64_t>(m.metric)).bind(2, m.name).bind(3, m.unit).bind(4, m.description).exec() !=
        SQLITE_DONE)
      return fail("the GPU metric names");
  Stmt reason(db_, "INSERT OR IGNORE INTO gpu_throttle_reasons (bit, name) VALUES (?,?)");
  for (const auto& r : gpumetrics::throttle_reasons())
    if (reason.bind(1, r.bit).bind(2, r.name).exec() != SQLITE_DONE) return fail("the throttle reasons");
  Stmt gpu(db_,
           "INSERT OR REPLACE INTO gpus (id, vendor, uuid, name, pci_bus_id, driver, memory_total_bytes, gpm)"
           " VALUES (?,?,?,?,?,?,?,?)");
  for (const auto& g : gpus)
    if (gpu.bind(1, int64_t{g.index} + 1)
            .bind(2, g.vendor)
            .bind(3, g.uuid)
            .bind(4, g.name)
            .bind(5, g.pci_bus_id)
            .bind(6, g.driver)
            .bind(7, g.memory_total)
            .bind(8, int64_t{g.gpm})
            .exec() != SQLITE_DONE)
      return fail("the GPUs");
  Stmt src(db_, "INSERT INTO gpu_sources (source, library, status, gpus, hz) VALUES (?,?,?,?,?)");
  for (const auto& s : sources)
    if (src.bind(1, s.source).bind(2, s.library).bind(3, s.status).bind(4, s.gpus).bind(5, hz).exec() != SQLITE_DONE)
      return fail("the GPU metric sources");
  return {};
}

Status GpuMetricRowWriter::carry_from(const GpuMetricRowWriter& prev) {
  if (auto st = write_gpus(prev.gpus_, prev.sources_, prev.hz_); !st) return st;
  SampleBatch start;
  for (const auto& [key, value] : prev.last_)
    start.metrics.push_back(
        gpumetrics::MetricSample{0, key.first, static_cast<gpumetrics::GpuMetric>(key.second), value});
  if (write(start, 0) != 0) return make_error(std::string("cannot carry the GPU metrics: ") + sqlite3_errmsg(db_));
  return {};
}

uint64_t GpuMetricRowWriter::write(const SampleBatch& batch, int64_t t0) {
  if (batch.empty()) return 0;
  uint64_t rows = batch.metrics.size() + batch.processes.size() + batch.events.size();
  if (sqlite3_exec(db_, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) return rows;
  // What this transaction stores, committed to last_ only with it: a
  // rolled-back value must be stored again.
  auto last = last_;
  auto last_proc = last_proc_;
  uint64_t written = 0, unchanged = 0, failed = 0;
  bool rolled_back = false;
  // One row that cannot be stored costs that row; a transaction SQLite
  // rolled back (disk full, I/O) costs the batch.
  auto stored = [&](int rc) {
    if (rc == SQLITE_DONE) return true;
    if (sqlite3_get_autocommit(db_)) rolled_back = true;
    ++failed;
    return false;
  };
  for (const auto& m : batch.metrics) {
    if (rolled_back) break;
    if (!std::isfinite(m.value)) {  // no value (SQLite would store NULL); the sources filter these
      ++failed;
      continue;
    }
    auto key = std::make_pair(m.gpu, static_cast<uint16_t>(m.metric));
    if (auto it = last.find(key); it != last.end() && it->second == m.value) {
      ++unchanged;
      continue;
    }
    if (!stored(sample_.bind(1, m.mono_ns - t0)
                    .bind(2, int64_t{m.gpu} + 1)
                    .bind(3, static_cast<int64_t>(m.metric))
                    .bind(4, m.value)
                    .exec()))
      continue;
    last[key] = m.value;
    ++written;
  }
  for (const auto& p : batch.processes) {
    if (rolled_back) break;
    auto key = std::make_pair(p.gpu, p.pid);
    auto value = std::make_tuple(p.sm_util_pct, p.mem_util_pct, p.memory_bytes);
    auto it = last_proc.find(key);
    if (p.gone) {
      if (it == last_proc.end()) continue;  // never stored here: nothing to end
    } else if (it != last_proc.end() && it->second == value) {
      ++unchanged;
      continue;
    }
    auto opt = [](int64_t v) { return v < 0 ? std::optional<int64_t>() : std::optional<int64_t>(v); };
    if (!stored(process_.bind(1, p.mono_ns - t0)
                    .bind(2, int64_t{p.gpu} + 1)
                    .bind(3, p.pid)
                    .bind(4, opt(p.sm_util_pct))
                    .bind(5, opt(p.mem_util_pct))
                    .bind(6, opt(p.memory_bytes))
                    .bind(7, int64_t{p.gone})
                    .exec()))
      continue;
    if (p.gone) last_proc.erase(key);
    else last_proc[key] = value;
    ++written;
  }
  for (const auto& e : batch.events) {
    if (rolled_back) break;
    if (stored(event_.bind(1, e.mono_ns).bind(2, int64_t{e.gpu} + 1).bind(3, e.kind).bind(4, e.code).exec())) ++written;
  }
  if (!rolled_back && sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK) {
    last_ = std::move(last);
    last_proc_ = std::move(last_proc);
    rows_written_ += written;
    unchanged_ += unchanged;
    return failed;
  }
  if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  return rows;
}

}  // namespace gpuobs
