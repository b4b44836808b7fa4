// GPU job rows (schema/migrations/027_gpu_jobs.sql): the scheduler's queue,
// run and done events of one job paired into one gpu_jobs row, and every
// dma_fence signal into dma_fence_signals, linked to the job whose fence it
// is. Used only by the writer thread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <deque>
#include <map>
#include <tuple>

#include "decode/gpu_trace.h"
#include "store/db.h"

namespace gpuobs {

struct GpuJobStats {
  uint64_t jobs = 0;            // gpu_jobs rows inserted
  uint64_t without_queue = 0;   // a run or done event whose queue event this file never saw (a row of its own)
  uint64_t replaced = 0;        // a queue event for a key still open: the old job never got its done event
  uint64_t fence_signals = 0;   // dma_fence_signals rows
  uint64_t fences_of_jobs = 0;  // ... that ended a job of this file
  uint64_t unkeyed = 0;         // events with neither a fence (context, seqno) nor a fence address: not paired
};

class GpuJobRowWriter {
 public:
  Status prepare(sqlite3* db);
  // process_id: the queue event's process (0 for the other events, whose
  // task is a scheduler worker). Returns SQLite's code of the first failed
  // statement (SQLITE_DONE otherwise).
  int write(const GpuJobEvent& e, int64_t process_id);
  // Jobs queued or run and not ended (done or signaled) yet: at the capture's end, the jobs
  // still running (their done_mono_ns stays NULL).
  uint64_t open_jobs() const { return open_; }
  const GpuJobStats& stats() const { return stats_; }
  // The batch was rolled back: the row ids it made are void.
  void forget() {
    jobs_.clear();
    order_.clear();
    open_ = 0;
  }

 private:
  // (kind, a, b): kind 1 = fence (context, seqno), both cut to the 32 bits
  // dma_fence_signaled has (contexts and seqnos stay far below 2^32);
  // kind 2 = the fence's address (before 6.17).
  using Key = std::tuple<int, uint64_t, uint64_t>;
  struct Job {
    int64_t id;
    bool done = false;   // its done event was seen
    bool ended = false;  // done, or its fence signaled: no longer open
  };
  static bool key_of(const GpuJobEvent& e, Key& key);
  int insert(const GpuJobEvent& e, int64_t process_id, int64_t& id);
  void remember(const Key& key, int64_t id);

  sqlite3* db_ = nullptr;
  Stmt ins_job_, upd_run_, upd_done_, upd_signaled_, ins_signal_;
  // Jobs of this file by key, done ones too (a fence signal follows its
  // done event); the oldest forgotten past kMaxJobs.
  std::map<Key, Job> jobs_;
  std::deque<Key> order_;
  static constexpr size_t kMaxJobs = 65536;
  uint64_t open_ = 0;
  GpuJobStats stats_;
};

}  // namespace gpuobs
