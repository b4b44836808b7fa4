// The capture writer: one thread owns the database; producers push decoded
// events; each batch (size- or time-bound) is one transaction with cached
// prepared statements (WAL, so readers never block it).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/modes.h"
#include "common/process_info.h"
#include "decode/decoder.h"
#include "store/api_rows.h"
#include "store/db.h"
#include "store/driver_rows.h"
#include "store/drm_usage_rows.h"
#include "store/gpu_job_rows.h"
#include "store/gpu_metric_rows.h"
#include "store/launch_rows.h"
#include "store/nccl_rows.h"
#include "store/stack_rows.h"
#include "store/string_table.h"

namespace gpuobs {

struct CaptureMeta {
  std::string gpuobs_version;
  CaptureMode mode = CaptureMode::record;
  std::string command;  // record only
  std::string host;
  std::string kernel;
  std::string nvidia_driver;  // empty: not loaded
  int64_t start_mono_ns = 0;
  int64_t clock_offset_ns = 0;
  uint32_t ring_buffer_bytes = 0;
  // The stack options it was made with (migration 015).
  uint32_t stack_depth = 0;
  UnwindMode unwind = UnwindMode::fp;
  uint32_t stack_copy_bytes = 0;    // 0 unless --unwind dwarf
  bool python_stacks = false;       // --python-stacks (migration 018)
  bool python_main_thread = false;  // --python-main-thread (migration 022)
};

struct ProbeRow {
  std::string library;
  uint64_t dev = 0, inode = 0;
  std::string symbol, program;
  ProbeStatus status = ProbeStatus::attached;
  std::string error;
  // When and why (migration 009): reason startup, exec, first_ioctl, rescan;
  // trigger_tgid 0 and times 0 are stored as NULL.
  std::string reason;
  uint32_t trigger_tgid = 0;
  int64_t trigger_mono_ns = 0, attached_mono_ns = 0;
};

// A process mapped a GPU runtime library's code (migration 023,
// library_maps): whether its probes were live before it could call it.
struct LibraryMapRow {
  uint32_t tgid = 0;
  std::string comm, library;
  uint64_t dev = 0, inode = 0;   // st_dev encoding (0: unknown)
  int64_t mapped_mono_ns = 0;    // 0: before gpuobs started (NULL)
  std::string hold;              // 'attached before', 'held', 'unprobed', 'not held: ...', 'before start'
  int64_t held_ns = 0;           // 'held' only
  int64_t attached_mono_ns = 0;  // 0: never (NULL)
  bool calls_before_attach = false;
  std::string reason;
};

struct WriterStats {
  uint64_t launches = 0;
  uint64_t ioctls = 0;
  uint64_t process_events = 0;
  uint64_t api_calls = 0;
  uint64_t unreadable_names = 0;  // kernel-name lookups whose string could not be read
  uint64_t batches = 0;
  uint64_t failed_rows = 0;      // rows lost to SQLite errors (disk full, I/O)
  uint64_t failed_batches = 0;   // batches not committed (begin failed or rolled back); rows in failed_rows
  uint64_t failed_launches = 0;  // of failed_rows, the kernel launches (stored + these = launches received)
  // Launches, calls and ioctls dropped because the writer was more than 250 ms
  // and 65536 events behind (overload): memory and the loss at a
  // kill stay bounded. Process and stack records are never dropped.
  uint64_t backlog_dropped = 0;
  // stop_storing_when_full: the disk filled up; every event from then on is
  // in failed_rows (and in full_lost, those after the first failure).
  bool disk_full = false;
  uint64_t full_lost = 0;
  SymbolStats symbols;
  // GPU jobs (store/gpu_job_rows.h); gpu_jobs_open: queued or running, not
  // done (at the capture's end: unfinished, done_mono_ns NULL).
  GpuJobStats gpu_jobs;
  uint64_t gpu_jobs_open = 0;
  uint64_t drm_rows_failed = 0;  // fdinfo rows SQLite refused (also in failed_rows)
};

// Counter name -> (value, source 'bpf' or 'userspace'): the counters table.
using CounterMap = std::map<std::string, std::pair<uint64_t, std::string>>;

// capture.state (migration 011) from write_meta until write_end succeeds: a
// capture whose writer was killed, crashed or could not write its end keeps it.
inline constexpr const char* kStateUnfinished =
    "incomplete (no clean end: killed, crashed, disk full or still recording)";
inline constexpr const char* kStateComplete = "complete";

class CaptureWriter {
 public:
  // Creates a new capture file (refuses an existing one unless force).
  static Result<std::unique_ptr<CaptureWriter>> create(const std::string& path, bool force, ProcessLookup lookup);
  ~CaptureWriter();

  Status write_meta(const CaptureMeta& meta);
  Status write_probes(const std::vector<ProbeRow>& probes);
  // Run time (thread-safe): probe rows of a library attached while capturing,
  // and the end of a library's probes; written with the next batch.
  void push_probes(std::vector<ProbeRow> rows);
  // Run time (thread-safe): a stall the NCCL watch found; written with the next batch.
  void push_stall(NcclStall stall);
  // Before start(): the GPUs the metrics sampler found and its sources
  // (kept for the next segment, continue_from).
  Status write_gpus(const std::vector<gpumetrics::GpuInfo>& gpus, const std::vector<gpumetrics::SourceStatus>& sources,
                    uint32_t hz);
  // Run time (thread-safe): GPU metric samples, moved out of batch (which
  // comes back empty); written in a transaction of their own.
  void push_gpu_samples(gpumetrics::SampleBatch& batch);
  void push_library_detached(uint64_t dev, uint64_t inode, int64_t mono_ns);
  // Run time (thread-safe): a process's library mapping and what it cost
  // the capture; written with the library changes.
  void push_library_map(LibraryMapRow row);
  // Before start(): fills processes.cgroup / container_id.
  void set_origin_lookup(OriginLookup lookup) { origin_ = std::move(lookup); }
  Status write_watched_device(uint32_t major, std::optional<uint32_t> minor, const std::string& name,
                              uint32_t driver = GPUOBS_DRV_OTHER);
  // The command `gpuobs record` started (it has no fork event of its own).
  Status add_root_process(uint32_t tgid);

  // gpuobsd: this capture's place in the series of segments (capture.segment).
  Status write_segment(int64_t number);
  // gpuobsd rotation: this (new, not yet started) writer continues where prev
  // (stopped) left off: the processes still alive get rows here under the
  // same ids, and the kernel names known for their function handles carry
  // over. Live allocations do not (their rows are in prev's file).
  Status continue_from(CaptureWriter& prev);
  const std::string& path() const { return path_; }

  // Caps the database at this many pages (0: SQLite's maximum). Inserts past
  // it fail as on a full disk: the batch is counted as lost and the writer
  // goes on. Tests use it to simulate a full disk.
  Status limit_pages(int64_t pages);

  // `gpuobs record`, before start(): a full disk ends the storing, never the
  // recording. reserve_bytes are set aside beside the capture now (PATH-reserve)
  // and given back at the first SQLITE_FULL, so that the capture's end, its
  // counters and its state still fit; every event after that is counted as
  // not stored (failed_rows, full_lost) without touching SQLite again, and
  // one message says so. Without it (gpuobsd) the writer keeps trying: the
  // daemon's emergency deletion makes room.
  Status stop_storing_when_full(uint64_t reserve_bytes);

  // Before start(): the backlog past which events are dropped: queued longer
  // than age while at least events are waiting (defaults 250 ms and 65536;
  // tests set less).
  void set_max_backlog(std::chrono::milliseconds age, size_t events) {
    max_backlog_ = age;
    max_backlog_events_ = events;
  }
  void start();
  // Thread-safe, never blocks on SQLite. stack_id: the event's stack (0: none),
  // defined by a ModuleDef/FrameDef/StackDef pushed before it.
  void push(Event ev, int64_t stack_id = 0);
  // One event as the ring consumer hands it over.
  struct Queued {
    Event ev;
    int64_t stack_id = 0;
    std::chrono::steady_clock::time_point queued{};  // set by push_many
  };
  // Thread-safe: many events under one lock and one clock read (the ring
  // consumer hands over each poll's events at once, not one lock per event).
  // The vector itself is queued, as a chunk: no event is moved again and
  // nothing is reallocated however far behind the writer is (growing one
  // queue of 184-byte events under the lock stalled the consumer when the
  // writer fell behind at a burst of new shapes, issue 17). `events` comes
  // back empty, with the capacity of a chunk the writer has finished.
  void push_many(std::vector<Queued>& events);
  // Bumped each time a rolled-back batch lost stack definitions: the
  // producer must send them again (StackResolver::redefine_all).
  uint64_t definitions_lost() const { return definitions_lost_.load(); }
  // Thread-safe: the session's counters now. Each batch's transaction stores
  // the latest of them (the writer's own, stored_* and store_failed_rows, as
  // of that batch), so a capture cut short holds its losses up to its last
  // commit. A set equal to the last one stored is not written again.
  void set_counters(CounterMap counters);
  // Stops the thread after writing everything pushed.
  void stop();
  // Records the end of the capture, the final counters and state 'complete',
  // in one transaction; folds the WAL in.
  Status write_end(int64_t end_mono_ns, std::optional<int> exit_status, const CounterMap& counters,
                   std::string_view state = kStateComplete);
  // Number of distinct processes with launches or ioctls.
  int64_t active_processes();
  WriterStats stats() const;

 private:
  CaptureWriter() = default;
  // create() after the file is made: the database, its schema, the statements.
  static Result<std::unique_ptr<CaptureWriter>> create_in(const std::string& path, ProcessLookup lookup);
  void run();
  using Item = Queued;  // queued: when push() or push_many() took it
  using Chunk = std::vector<Item>;
  // The events of a batch in hand-over order, across its chunks (never
  // empty: push_many queues none, push fills the one it opens).
  struct Cursor {
    std::vector<Chunk>* chunks;
    size_t chunk = 0, at = 0, left = 0;  // left: events from here to the end
    bool done() const { return left == 0; }
    Item& item() { return (*chunks)[chunk][at]; }
    void next() {
      --left;
      if (++at == (*chunks)[chunk].size()) at = 0, ++chunk;
    }
  };
  void write_batch(std::vector<Chunk>& batch, size_t events);
  // One transaction over the next events, cut at kMaxTransaction; advances
  // the cursor past what it took (written, or lost with a rolled-back
  // transaction: then everything left).
  void write_transaction(Cursor& items);
  // What one transaction wrote and dropped, added to the stats on commit.
  struct BatchTally {
    uint64_t launches = 0, ioctls = 0, procs = 0, calls = 0, behind = 0, launch_rows_failed = 0;
  };
  // One event into its rows (launch, call, ioctl, process, stack definition).
  void write_event(Item& item, BatchTally& t);
  // An event not written (dropped, or lost with its batch): what must still
  // be counted of it (an NCCL call's sequence number).
  void skip_event(Item& item);
  void add_tally(WriterStats& s, const BatchTally& t);
  struct Detach {
    uint64_t dev, inode;
    int64_t mono_ns;
  };
  // Everything the library watch reports, in one side queue: probe rows,
  // detaches and mappings (rare: one transaction of their own).
  struct LibraryChanges {
    std::vector<ProbeRow> probes;
    std::vector<Detach> detached;
    std::vector<LibraryMapRow> maps;
    bool empty() const { return probes.empty() && detached.empty() && maps.empty(); }
    size_t size() const { return probes.size() + detached.size() + maps.size(); }
  };
  void write_library_changes(LibraryChanges& changes);
  void write_stalls(std::vector<NcclStall>& stalls);
  void write_gpu_samples(gpumetrics::SampleBatch& batch);
  int64_t process_for(uint32_t tgid);
  void note_thread(int64_t process_id, uint32_t tid, uint64_t ts);
  void on_proc(const ProcEvent& e);
  int64_t insert_process(uint32_t tgid, const ProcessInfo& info, const char* source, std::optional<uint64_t> fork_ns);
  // The one processes insert (new rows and rows carried into a new segment); SQLite's code.
  int exec_process_insert(int64_t id, uint32_t tgid, const ProcessInfo& info, const char* source,
                          std::optional<uint64_t> fork_ns, const ProcessOrigin& origin);
  // In a batch's transaction: the counters (the session's latest, with the
  // writer's own as of this batch) and capture.committed_mono_ns.
  void write_progress(const WriterStats& now);
  // A transaction of counters alone: losses counted while no event arrives.
  void write_counters_only();
  // Counts a failed row; false once SQLite has rolled the whole batch back.
  bool check(int rc);
  // SQLite's error as it was when the batch failed (a ROLLBACK after it
  // replaces errmsg with "cannot rollback - no transaction is active").
  void note_failure();
  // A rolled-back or unbegun batch: counted, and said at most once per
  // kLossLogInterval (a full disk fails every batch: ~100 warnings a run).
  void log_loss(size_t lost);
  // stop_storing_when_full: the first full-disk failure.
  void on_disk_full();
  void forget_batch_state();

  Db db_;
  std::string path_;
  ProcessLookup lookup_;
  OriginLookup origin_;
  LibraryChanges pending_library_;         // guarded by mu_
  std::vector<NcclStall> pending_stalls_;  // guarded by mu_
  gpumetrics::SampleBatch pending_gpu_;    // guarded by mu_
  static constexpr size_t kMaxPendingGpuSamples = 1'000'000;
  StringTable strings_;
  ApiRowWriter api_;
  NcclRowWriter nccl_;
  LaunchRowWriter launches_;
  StackRowWriter stacks_;
  std::atomic<uint64_t> definitions_lost_{0};
  DriverRowWriter driver_;
  GpuMetricRowWriter gpu_;
  GpuJobRowWriter gpu_jobs_;
  DrmUsageRowWriter drm_;
  int64_t start_mono_ns_ = 0;  // capture.start_mono_ns (write_meta)
  Stmt ins_process_, ins_thread_, upd_exec_, upd_exit_;
  Stmt ins_counter_, upd_committed_;
  std::chrono::milliseconds max_backlog_;  // set from kMaxBacklog in create()
  size_t max_backlog_events_ = 0;          // set from kMaxBacklogEvents in create()
  CounterMap counters_;                    // guarded by mu_: the session's latest
  bool counters_dirty_ = false;            // guarded by mu_: counters_ not stored yet

  std::unordered_map<uint32_t, int64_t> live_;  // tgid -> processes.id of the current process
  // Origins of live processes, carried into the next segment (continue_from).
  std::unordered_map<uint32_t, ProcessOrigin> live_origin_;
  // processes.id comes from here, not from SQLite's rowid: a failed or
  // rolled-back insert must never let two processes share an id.
  int64_t next_process_id_ = 1;
  std::vector<uint32_t> created_in_batch_;  // tgids whose process row this batch inserted
  bool batch_rolled_back_ = false;
  int failure_code_ = SQLITE_OK;  // note_failure(): the failed batch's SQLite code
  std::string failure_why_;       // and its message
  std::string reserve_path_;      // stop_storing_when_full: the reserve beside the capture
  bool stop_when_full_ = false;
  bool stopped_full_ = false;  // the writer thread's: storing ended by a full disk
  std::chrono::steady_clock::time_point loss_logged_{};
  uint64_t loss_unlogged_ = 0;            // events lost since the last loss message
  std::unordered_set<uint64_t> threads_;  // (process_id << 32 | tid)

  // Held by the writer thread around each batch, and by the other threads
  // that use the connection while it runs (add_root_process, limit_pages):
  // the connection is opened NOMUTEX. Never taken while holding mu_.
  std::mutex db_mu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Chunk> pending_;  // chunks as handed over, oldest first
  size_t pending_events_ = 0;   // events in pending_
  std::vector<Chunk> spare_;    // emptied chunks, their capacity reused
  bool stopping_ = false;
  std::thread thread_;
  WriterStats stats_;
};

}  // namespace gpuobs
