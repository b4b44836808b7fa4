#include "store/drm_usage_rows.h"

namespace gpuobs {

Status DrmUsageRowWriter::prepare(sqlite3* db) {
  db_ = db;
  ins_client_ = Stmt(db,
                     "INSERT INTO drm_clients (process_id, tgid, fd, driver, pdev, client_id, client_name)"
                     " VALUES (?,?,?,?,?,?,?)");
  ins_engine_ = Stmt(db,
                     "INSERT INTO drm_engine_samples (client, t_mono_ns, engine, busy_ns, capacity, cycles,"
                     " total_cycles) VALUES (?,?,?,?,?,?,?)");
  ins_memory_ = Stmt(db,
                     "INSERT INTO drm_memory_samples (client, t_mono_ns, region, total_bytes, shared_bytes,"
                     " resident_bytes, purgeable_bytes, active_bytes) VALUES (?,?,?,?,?,?,?,?)");
  if (!ins_client_.valid() || !ins_engine_.valid() || !ins_memory_.valid())
    return make_error(std::string("cannot prepare the DRM client statements: ") + sqlite3_errmsg(db));
  return {};
}

uint64_t DrmUsageRowWriter::write(const std::vector<gpumetrics::DrmClientSample>& samples,
                                  const std::function<int64_t(uint32_t)>& process_for) {
  uint64_t failed = 0;
  auto opt_text = [](const std::string& s) { return s.empty() ? std::nullopt : std::optional<std::string_view>(s); };
  for (const auto& s : samples) {
    const auto& info = s.info;
    auto key = info.client_id ? std::tuple{s.pid, true, *info.client_id}
                              : std::tuple{s.pid, false, static_cast<uint64_t>(s.fd)};
    auto it = clients_.find(key);
    if (it == clients_.end()) {
      int64_t pid = process_for(s.pid);
      if (ins_client_.bind(1, pid ? std::optional<int64_t>(pid) : std::nullopt)
              .bind(2, s.pid)
              .bind(3, s.fd)
              .bind(4, info.driver)
              .bind(5, opt_text(info.pdev))
              .bind(6, info.client_id)
              .bind(7, opt_text(info.client_name))
              .exec() != SQLITE_DONE) {
        ++failed;
        continue;
      }
      it = clients_.emplace(key, sqlite3_last_insert_rowid(db_)).first;
    }
    for (const auto& e : info.engines)
      if (ins_engine_.bind(1, it->second)
              .bind(2, s.mono_ns)
              .bind(3, e.engine)
              .bind(4, e.busy_ns)
              .bind(5, e.capacity)
              .bind(6, e.cycles)
              .bind(7, e.total_cycles)
              .exec() != SQLITE_DONE)
        ++failed;
    for (const auto& m : info.memory)
      if (ins_memory_.bind(1, it->second)
              .bind(2, s.mono_ns)
              .bind(3, m.region)
              .bind(4, m.total)
              .bind(5, m.shared)
              .bind(6, m.resident ? m.resident : m.memory)
              .bind(7, m.purgeable)
              .bind(8, m.active)
              .exec() != SQLITE_DONE)
        ++failed;
  }
  return failed;
}

}  // namespace gpuobs
