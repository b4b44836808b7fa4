#include "store/gpu_job_rows.h"

namespace gpuobs {

Status GpuJobRowWriter::prepare(sqlite3* db) {
  db_ = db;
  ins_job_ = Stmt(db,
                  "INSERT INTO gpu_jobs (device, ring, fence_context, fence_seqno, fence_ptr, job_id, client_id,"
                  " process_id, tgid, tid, queued_mono_ns, run_mono_ns, done_mono_ns, job_count, hw_job_count)"
                  " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  upd_run_ = Stmt(db,
                  "UPDATE gpu_jobs SET run_mono_ns = ?, hw_job_count = coalesce(?, hw_job_count),"
                  " ring = coalesce(ring, ?), device = coalesce(device, ?) WHERE id = ?");
  upd_done_ = Stmt(db, "UPDATE gpu_jobs SET done_mono_ns = ? WHERE id = ?");
  upd_signaled_ = Stmt(db, "UPDATE gpu_jobs SET signaled_mono_ns = ? WHERE id = ? AND signaled_mono_ns IS NULL");
  ins_signal_ = Stmt(db,
                     "INSERT INTO dma_fence_signals (ts_mono_ns, driver, timeline, context, seqno, gpu_job_id)"
                     " VALUES (?,?,?,?,?,?)");
  if (!ins_job_.valid() || !upd_run_.valid() || !upd_done_.valid() || !upd_signaled_.valid() || !ins_signal_.valid())
    return make_error(std::string("cannot prepare the GPU job statements: ") + sqlite3_errmsg(db));
  return {};
}

bool GpuJobRowWriter::key_of(const GpuJobEvent& e, Key& key) {
  if (e.fence_context && e.fence_seqno) {
    key = Key{1, *e.fence_context & 0xffffffffu, *e.fence_seqno & 0xffffffffu};
    return true;
  }
  if (e.fence_ptr && *e.fence_ptr) {
    key = Key{2, *e.fence_ptr, 0};
    return true;
  }
  return false;
}

void GpuJobRowWriter::remember(const Key& key, int64_t id) {
  auto [it, fresh] = jobs_.insert_or_assign(key, Job{id});
  (void)it;
  if (!fresh) return;
  order_.push_back(key);
  if (order_.size() > kMaxJobs) {
    auto old = jobs_.find(order_.front());
    if (old != jobs_.end()) {
      if (!old->second.ended) --open_;
      jobs_.erase(old);
    }
    order_.pop_front();
  }
}

int GpuJobRowWriter::insert(const GpuJobEvent& e, int64_t process_id, int64_t& id) {
  bool queue = e.event == GPUOBS_GPU_TP_QUEUE;
  auto ts = static_cast<int64_t>(e.hdr.ts_ns);
  ins_job_.bind(1, e.device.empty() ? std::nullopt : std::optional<std::string_view>(e.device))
      .bind(2, e.ring.empty() ? std::nullopt : std::optional<std::string_view>(e.ring))
      .bind(3, e.fence_context)
      .bind(4, e.fence_seqno)
      .bind(5, e.fence_ptr)
      .bind(6, e.job_id)
      .bind(7, e.client_id);
  // Only the queue event fires in the submitting task.
  if (queue && process_id) ins_job_.bind(8, process_id).bind(9, e.hdr.tgid).bind(10, e.hdr.tid);
  else ins_job_.bind_null(8).bind_null(9).bind_null(10);
  ins_job_.bind(11, queue ? std::optional<int64_t>(ts) : std::nullopt)
      .bind(12, e.event == GPUOBS_GPU_TP_RUN ? std::optional<int64_t>(ts) : std::nullopt)
      .bind(13, e.event == GPUOBS_GPU_TP_DONE ? std::optional<int64_t>(ts) : std::nullopt)
      .bind(14, queue ? e.job_count : std::nullopt)
      .bind(15, e.hw_job_count);
  int rc = ins_job_.exec();
  if (rc != SQLITE_DONE) return rc;
  id = sqlite3_last_insert_rowid(db_);
  ++stats_.jobs;
  return rc;
}

int GpuJobRowWriter::write(const GpuJobEvent& e, int64_t process_id) {
  auto ts = static_cast<int64_t>(e.hdr.ts_ns);
  Key key;
  bool keyed = key_of(e, key);
  if (e.event == GPUOBS_GPU_TP_FENCE) {
    std::optional<int64_t> job;
    if (auto it = keyed ? jobs_.find(key) : jobs_.end(); it != jobs_.end()) {
      job = it->second.id;
      int rc = upd_signaled_.bind(1, ts).bind(2, *job).exec();
      if (rc != SQLITE_DONE) return rc;
      ++stats_.fences_of_jobs;
      if (!it->second.ended) {
        it->second.ended = true;
        --open_;
      }
    }
    int rc = ins_signal_.bind(1, ts)
                 .bind(2, e.device)
                 .bind(3, e.ring)
                 .bind(4, e.fence_context.value_or(0))
                 .bind(5, e.fence_seqno.value_or(0))
                 .bind(6, job)
                 .exec();
    if (rc == SQLITE_DONE) ++stats_.fence_signals;
    return rc;
  }
  if (!keyed) {
    // Nothing to pair it with: a row of its own.
    ++stats_.unkeyed;
    int64_t id = 0;
    return insert(e, process_id, id);
  }
  auto it = jobs_.find(key);
  if (e.event == GPUOBS_GPU_TP_QUEUE) {
    if (it != jobs_.end() && !it->second.ended) {
      ++stats_.replaced;
      --open_;
    }
    int64_t id = 0;
    int rc = insert(e, process_id, id);
    if (rc != SQLITE_DONE) return rc;
    remember(key, id);
    ++open_;
    return rc;
  }
  if (it == jobs_.end() || it->second.done) {
    // Queued before this file began (an earlier segment, before the
    // capture), or the queue event was lost.
    ++stats_.without_queue;
    int64_t id = 0;
    int rc = insert(e, process_id, id);
    if (rc != SQLITE_DONE) return rc;
    remember(key, id);
    if (e.event == GPUOBS_GPU_TP_DONE) jobs_[key].done = jobs_[key].ended = true;
    else ++open_;
    return rc;
  }
  if (e.event == GPUOBS_GPU_TP_RUN)
    return upd_run_.bind(1, ts)
        .bind(2, e.hw_job_count)
        .bind(3, e.ring.empty() ? std::nullopt : std::optional<std::string_view>(e.ring))
        .bind(4, e.device.empty() ? std::nullopt : std::optional<std::string_view>(e.device))
        .bind(5, it->second.id)
        .exec();
  int rc = upd_done_.bind(1, ts).bind(2, it->second.id).exec();
  if (rc == SQLITE_DONE) {
    it->second.done = true;
    if (!it->second.ended) --open_;
    it->second.ended = true;
  }
  return rc;
}

}  // namespace gpuobs
