#include "store/writer.h"

#include "common/monotonic_clock.h"
#include "common/thread_priority.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "catalogue/api_spec.h"
#include "decode/launch_record.h"
#include "store/capture_file.h"
#include "store/schema.h"

namespace gpuobs {
namespace {

constexpr size_t kBatchEvents = 8192;  // wake the writer early past this
constexpr auto kBatchInterval = std::chrono::milliseconds(100);
// One transaction is cut here and committed, the rest of the batch going into
// the next: with kBatchInterval, what a kill -9 can lose stays within the
// documented 400 ms (docs/operations.md, "Crash") while the writer keeps up.
constexpr auto kMaxTransaction = std::chrono::milliseconds(100);
// And at most this many events: a transaction lost whole (disk full before
// gpuobsd's emergency deletion made room) takes no more than one batch with it.
constexpr size_t kMaxTransactionEvents = 8192;
constexpr size_t kDeadlineCheckEvery = 256;  // events between clock reads
constexpr size_t kChunkEvents = 1024;        // push(): events per chunk
constexpr size_t kSpareChunks = 16;          // emptied chunks kept for the consumer
// A writer this far behind, in time and in events (overload: producers
// faster than SQLite, or a writer starved of CPU), drops the oldest launches,
// calls and ioctls, counted as dropped_store_backlog, rather than queue
// without bound. 250 ms: with one transaction (100 ms) and the consumer's
// poll (50 ms) a kill -9 loses at most the documented 400 ms; measured on the
// H100 at full launch rate with 1000 ms here: 1.1 s lost
// (bench/h100/run_issue15_kill.sh). And 65,536 events: a writer stalled for
// a while (its first symbolization of a 1 GB libtorch, a slow disk) with a
// queue shorter than that drops nothing. With 8192 here, PyTorch's first
// seconds lost 28,000 launches on the H100 and the daemon tests lost some on
// a loaded VM (2026-11-25); the price is that a writer starved of CPU below
// ~260,000 events/s can hold up to 65,536 events longer than 250 ms, which a
// kill -9 then loses (docs/operations.md, "kill -9").
constexpr auto kMaxBacklog = std::chrono::milliseconds(250);
constexpr size_t kMaxBacklogEvents = 65536;

// A kernel launch, whichever API made it (the launch record, or a call of the launch family).
bool is_launch(const Event& ev) {
  if (std::holds_alternative<gpuobs_launch>(ev)) return true;
  if (auto* c = std::get_if<ApiCallEvent>(&ev))
    if (const ApiSpec* spec = api_by_id(c->api)) return spec->family == Family::launch;
  return false;
}

bool droppable(const Event& ev) {
  return std::holds_alternative<gpuobs_launch>(ev) || std::holds_alternative<ApiCallEvent>(ev) ||
         std::holds_alternative<IoctlEvent>(ev);
}

}  // namespace

Result<std::unique_ptr<CaptureWriter>> CaptureWriter::create(const std::string& path, bool force,
                                                             ProcessLookup lookup) {
  // Only a new file, or (force) an old capture, becomes the capture; SQLite
  // then opens that file, never a link planted in its place.
  if (auto s = create_capture_file(path, force); !s) return s.error();
  auto made = create_in(path, std::move(lookup));
  // Nothing half-made is left behind (a disk too full for the schema).
  if (!made) remove_capture_files(path);
  return made;
}

Result<std::unique_ptr<CaptureWriter>> CaptureWriter::create_in(const std::string& path, ProcessLookup lookup) {
  // NOMUTEX: SQLite's serialized mode locks the connection's mutex in every
  // bind, step and reset, ~30 lock/unlock pairs per launch row (15% of the
  // daemon's CPU in the issue-17 profile). The writer thread owns the
  // connection; other threads reach it only under db_mu_.
  auto db = Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX);
  if (!db) return make_error(db.error().message, "check that the directory exists and is writable", 2);
  std::unique_ptr<CaptureWriter> w(new CaptureWriter());
  w->db_ = std::move(db.value());
  w->path_ = path;
  w->lookup_ = std::move(lookup);
  w->max_backlog_ = kMaxBacklog;
  w->max_backlog_events_ = kMaxBacklogEvents;
  if (auto s = w->db_.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"); !s)
    return make_error("cannot initialise " + path + ": " + s.error().message, "", 2);
  if (auto s = migrate(w->db_); !s)
    return make_error("cannot create the schema in " + path + ": " + s.error().message, "", 2);
  // Each migration is a transaction that rewrites the schema pages: the 21
  // of schema 21 leave 828 KB of WAL for a 400 KB schema. Folded back now, a
  // new segment needs that much less room on a nearly full disk (gpuobsd's
  // start after an emergency deletion: DaemonLimits on a 2 MB tmpfs failed
  // to write the attach report once migration 21 was added).
  // Best effort: a checkpoint that cannot run leaves the WAL as it was.
  (void)w->db_.exec("PRAGMA wal_checkpoint(TRUNCATE)");

  sqlite3* d = w->db_.get();
  w->ins_process_ =
      Stmt(d,
           "INSERT INTO processes (tgid, ppid, start_boottime_ns, comm, exe, fork_mono_ns, source, id, cgroup,"
           " container_id) VALUES (?,?,?,?,?,?,?,?,?,?)");
  w->ins_thread_ = Stmt(d, "INSERT OR IGNORE INTO threads (process_id, tid, first_mono_ns) VALUES (?,?,?)");
  w->upd_exec_ = Stmt(d, "UPDATE processes SET comm = ?, exe = ?, exec_mono_ns = ? WHERE id = ?");
  w->upd_exit_ = Stmt(d, "UPDATE processes SET exit_mono_ns = ?, exit_code = ? WHERE id = ?");
  w->ins_counter_ = Stmt(d, "INSERT OR REPLACE INTO counters (name, value, source) VALUES (?,?,?)");
  w->upd_committed_ = Stmt(d, "UPDATE capture SET committed_mono_ns = ? WHERE id = 1");
  if (auto st = w->strings_.prepare(d); !st) return st.error();
  if (auto st = w->api_.prepare(d, &w->strings_); !st) return st.error();
  if (auto st = w->nccl_.prepare(d, &w->strings_); !st) return st.error();
  if (auto st = w->gpu_.prepare(d); !st) return st.error();
  CaptureWriter* self = w.get();
  if (auto st = w->launches_.prepare(d, &w->strings_,
                                     [self](int64_t pid, uint64_t fn) { return self->api_.name_of(pid, fn); });
      !st)
    return st.error();
  if (auto st = w->stacks_.prepare(d); !st) return st.error();
  if (auto st = w->driver_.prepare(d); !st) return st.error();
  if (auto st = w->gpu_jobs_.prepare(d); !st) return st.error();
  if (auto st = w->drm_.prepare(d); !st) return st.error();
  for (auto* s :
       {&w->ins_process_, &w->ins_thread_, &w->upd_exec_, &w->upd_exit_, &w->ins_counter_, &w->upd_committed_})
    if (!s->valid()) return make_error("cannot prepare statements: " + w->db_.errmsg());
  return w;
}

CaptureWriter::~CaptureWriter() {
  stop();
  if (!reserve_path_.empty()) ::unlink(reserve_path_.c_str());
}

Status CaptureWriter::write_meta(const CaptureMeta& m) {
  Stmt st(db_.get(),
          "INSERT OR REPLACE INTO capture (id, gpuobs_version, abi_version, mode, command, host, kernel,"
          " nvidia_driver, start_mono_ns, clock_offset_ns, ring_buffer_bytes, state, stack_depth, unwind,"
          " stack_copy_bytes, python_stacks, python_main_thread) VALUES (1,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st.bind(1, m.gpuobs_version).bind(2, int64_t{GPUOBS_ABI_VERSION}).bind(3, to_string(m.mode));
  if (m.command.empty()) st.bind_null(4);
  else st.bind(4, m.command);
  st.bind(5, m.host).bind(6, m.kernel);
  if (m.nvidia_driver.empty()) st.bind_null(7);
  else st.bind(7, m.nvidia_driver);
  st.bind(8, m.start_mono_ns).bind(9, m.clock_offset_ns).bind(10, m.ring_buffer_bytes);
  st.bind(11, std::string_view(kStateUnfinished));
  st.bind(12, m.stack_depth).bind(13, to_string(m.unwind)).bind(14, m.stack_copy_bytes);
  st.bind(15, int64_t{m.python_stacks ? 1 : 0});
  if (m.python_stacks) st.bind(16, int64_t{m.python_main_thread ? 1 : 0});
  else st.bind_null(16);
  launches_.set_capture_start(m.start_mono_ns);
  start_mono_ns_ = m.start_mono_ns;
  driver_.set_nvidia_version(parse_nvidia_version(m.nvidia_driver));
  if (st.exec() != SQLITE_DONE) return make_error("cannot write capture metadata: " + db_.errmsg());
  return {};
}

Status CaptureWriter::write_probes(const std::vector<ProbeRow>& probes) {
  Stmt st(db_.get(),
          "INSERT INTO probes (library, dev, inode, symbol, program, status, error, reason, trigger_tgid,"
          " trigger_mono_ns, attached_mono_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  for (const auto& p : probes) {
    st.bind(1, p.library)
        .bind(2, p.dev)
        .bind(3, p.inode)
        .bind(4, p.symbol)
        .bind(5, p.program)
        .bind(6, to_string(p.status));
    if (p.error.empty()) st.bind_null(7);
    else st.bind(7, p.error);
    if (p.reason.empty()) st.bind_null(8);
    else st.bind(8, p.reason);
    if (p.trigger_tgid) st.bind(9, p.trigger_tgid);
    else st.bind_null(9);
    if (p.trigger_mono_ns) st.bind(10, p.trigger_mono_ns);
    else st.bind_null(10);
    if (p.attached_mono_ns) st.bind(11, p.attached_mono_ns);
    else st.bind_null(11);
    if (st.exec() != SQLITE_DONE) return make_error("cannot write the attach report: " + db_.errmsg());
  }
  return {};
}

void CaptureWriter::push_probes(std::vector<ProbeRow> rows) {
  std::lock_guard lk(mu_);
  for (auto& r : rows) pending_library_.probes.push_back(std::move(r));
}

void CaptureWriter::push_stall(NcclStall stall) {
  std::lock_guard lk(mu_);
  pending_stalls_.push_back(std::move(stall));
}

Status CaptureWriter::write_gpus(const std::vector<gpumetrics::GpuInfo>& gpus,
                                 const std::vector<gpumetrics::SourceStatus>& sources, uint32_t hz) {
  std::lock_guard lk(db_mu_);
  return gpu_.write_gpus(gpus, sources, hz);
}

void CaptureWriter::push_gpu_samples(gpumetrics::SampleBatch& batch) {
  if (batch.empty()) return;
  {
    std::lock_guard lk(mu_);
    // A writer stalled (a full disk, a slow one) must not let samples pile
    // up without bound: past a million waiting, they are counted as lost.
    if (pending_gpu_.metrics.size() + pending_gpu_.processes.size() > kMaxPendingGpuSamples) {
      stats_.failed_rows += batch.metrics.size() + batch.processes.size() + batch.events.size();
      batch.clear();
      return;
    }
    if (pending_gpu_.empty()) {
      std::swap(pending_gpu_, batch);
    } else {
      auto append = [](auto& to, auto& from) { to.insert(to.end(), from.begin(), from.end()); };
      append(pending_gpu_.metrics, batch.metrics);
      append(pending_gpu_.processes, batch.processes);
      append(pending_gpu_.events, batch.events);
      append(pending_gpu_.drm, batch.drm);
    }
  }
  batch.clear();
}

// A few rows per GPU per tick, handed over every poll: one transaction per
// hand-over, its failure counted as lost rows.
void CaptureWriter::write_gpu_samples(gpumetrics::SampleBatch& batch) {
  if (batch.empty()) return;
  uint64_t lost = 0;
  if (!batch.metrics.empty() || !batch.processes.empty() || !batch.events.empty())
    lost += gpu_.write(batch, start_mono_ns_);
  uint64_t drm_lost = 0;
  if (!batch.drm.empty()) {
    // The fdinfo samples in a transaction of their own, like the metrics'.
    if (db_.exec("BEGIN")) {
      drm_lost = drm_.write(batch.drm, [this](uint32_t tgid) { return process_for(tgid); });
      if (!db_.exec("COMMIT")) {
        (void)db_.exec("ROLLBACK");
        drm_.forget();
        drm_lost = batch.drm.size();
      }
    } else {
      drm_lost = batch.drm.size();
    }
  }
  if (lost || drm_lost) {
    std::lock_guard lk(mu_);
    stats_.failed_rows += lost + drm_lost;
    stats_.drm_rows_failed += drm_lost;
  }
  batch.clear();
}

void CaptureWriter::push_library_detached(uint64_t dev, uint64_t inode, int64_t mono_ns) {
  std::lock_guard lk(mu_);
  pending_library_.detached.push_back(Detach{dev, inode, mono_ns});
}

void CaptureWriter::push_library_map(LibraryMapRow row) {
  std::lock_guard lk(mu_);
  pending_library_.maps.push_back(std::move(row));
}

// Rare (a library attached or detached): one transaction of its own, so a
// failed event batch never takes the attach report with it.
void CaptureWriter::write_library_changes(LibraryChanges& c) {
  if (c.empty()) return;
  if (!db_.exec("BEGIN")) {
    stats_.failed_rows += c.size();
    c = {};
    return;
  }
  if (auto st = write_probes(c.probes); !st) {
    spdlog::warn("{}", st.error().message);
    stats_.failed_rows += c.probes.size();
  }
  Stmt upd(db_.get(),
           "UPDATE probes SET detached_mono_ns = ? WHERE dev = ? AND inode = ? AND detached_mono_ns IS NULL");
  for (const auto& d : c.detached)
    if (upd.bind(1, d.mono_ns).bind(2, d.dev).bind(3, d.inode).exec() != SQLITE_DONE) ++stats_.failed_rows;
  Stmt ins(db_.get(),
           "INSERT INTO library_maps (tgid, comm, library, dev, inode, mapped_mono_ns, hold, held_ns,"
           " attached_mono_ns, calls_before_attach, reason) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  auto opt = [&](int col, int64_t v) {
    if (v) ins.bind(col, v);
    else ins.bind_null(col);
  };
  for (const auto& m : c.maps) {
    ins.bind(1, int64_t{m.tgid}).bind(2, m.comm).bind(3, m.library);
    opt(4, static_cast<int64_t>(m.dev));
    opt(5, static_cast<int64_t>(m.inode));
    opt(6, m.mapped_mono_ns);
    ins.bind(7, m.hold);
    opt(8, m.held_ns);
    opt(9, m.attached_mono_ns);
    ins.bind(10, int64_t{m.calls_before_attach ? 1 : 0});
    if (m.reason.empty()) ins.bind_null(11);
    else ins.bind(11, m.reason);
    if (ins.exec() != SQLITE_DONE) ++stats_.failed_rows;
  }
  if (!db_.exec("COMMIT")) {
    (void)db_.exec("ROLLBACK");
    stats_.failed_rows += c.size();
  }
  c = {};
}

// Stalls are rare: one transaction each, a failure counted as lost rows.
void CaptureWriter::write_stalls(std::vector<NcclStall>& stalls) {
  for (const auto& s : stalls) {
    if (!db_.exec("BEGIN")) {
      stats_.failed_rows += 1 + s.ranks.size();
      continue;
    }
    if (write_nccl_stall(db_.get(), s) != SQLITE_DONE || !db_.exec("COMMIT")) {
      (void)db_.exec("ROLLBACK");
      stats_.failed_rows += 1 + s.ranks.size();
    }
  }
  stalls.clear();
}

Status CaptureWriter::write_watched_device(uint32_t major, std::optional<uint32_t> minor, const std::string& name,
                                           uint32_t driver) {
  Stmt st(db_.get(), "INSERT OR IGNORE INTO watched_devices (major, minor, name, driver) VALUES (?,?,?,?)");
  st.bind(1, major);
  if (minor) st.bind(2, *minor);
  else st.bind_null(2);
  st.bind(3, name).bind(4, driver_name(driver));
  if (st.exec() != SQLITE_DONE) return make_error("cannot write watched devices: " + db_.errmsg());
  return {};
}

Status CaptureWriter::add_root_process(uint32_t tgid) {
  ProcessInfo info;
  if (lookup_)
    if (auto i = lookup_(tgid)) info = *i;
  std::lock_guard lk(db_mu_);  // record calls it while the writer thread runs
  live_[tgid] = insert_process(tgid, info, "root", std::nullopt);
  return {};
}

Status CaptureWriter::write_segment(int64_t number) {
  Stmt st(db_.get(), "UPDATE capture SET segment = ? WHERE id = 1");
  if (st.bind(1, number).exec() != SQLITE_DONE) return make_error("cannot write the segment number: " + db_.errmsg());
  return {};
}

Status CaptureWriter::continue_from(CaptureWriter& prev) {
  prev.stop();  // its maps are ours to read only once its thread is gone
  next_process_id_ = prev.next_process_id_;
  api_.carry_names_from(prev.api_);
  nccl_.carry_from(prev.nccl_);
  if (prev.gpu_.has_gpus())
    if (auto st = gpu_.carry_from(prev.gpu_); !st) spdlog::warn("{}: {}", path_, st.error().message);
  if (auto s = db_.exec("BEGIN"); !s) return s;
  // Built aside and kept only once COMMIT succeeds: after a ROLLBACK no row
  // of these ids exists here, and live_ must not claim they do.
  std::unordered_map<uint32_t, int64_t> carried;
  std::unordered_map<uint32_t, ProcessOrigin> carried_origin;
  for (const auto& [tgid, id] : prev.live_) {
    ProcessInfo info;
    if (lookup_)
      if (auto i = lookup_(tgid)) info = *i;
    // Its cgroup and container: as the previous segment stored them (the
    // process may be gone already, its exit still in the ring), else looked up.
    ProcessOrigin origin;
    if (auto it = prev.live_origin_.find(tgid); it != prev.live_origin_.end()) origin = it->second;
    else if (origin_)
      if (auto o = origin_(tgid)) origin = *o;
    if (!origin.cgroup.empty()) carried_origin[tgid] = origin;
    // Found running when this segment opened: 'proc', as for a daemon start.
    if (exec_process_insert(id, tgid, info, "proc", std::nullopt, origin) != SQLITE_DONE) {
      std::string err = db_.errmsg();
      (void)db_.exec("ROLLBACK");
      return make_error("cannot carry the live processes into " + path_ + ": " + err);
    }
    carried[tgid] = id;
  }
  if (auto s = db_.exec("COMMIT"); !s) {
    (void)db_.exec("ROLLBACK");
    return s;
  }
  for (auto& [tgid, id] : carried) live_[tgid] = id;
  for (auto& [tgid, o] : carried_origin) live_origin_[tgid] = std::move(o);
  return {};
}

Status CaptureWriter::limit_pages(int64_t pages) {
  std::lock_guard lk(db_mu_);  // the writer thread holds no statement between batches
  return db_.exec("PRAGMA max_page_count = " + std::to_string(pages > 0 ? pages : 4294967294LL));
}

void CaptureWriter::start() {
  thread_ = std::thread([this] { run(); });
}

void CaptureWriter::push(Event ev, int64_t stack_id) {
  bool wake;
  {
    std::lock_guard lk(mu_);
    if (pending_.empty() || pending_.back().size() >= kChunkEvents) pending_.emplace_back();
    pending_.back().push_back(Item{std::move(ev), stack_id, std::chrono::steady_clock::now()});
    wake = ++pending_events_ >= kBatchEvents;
  }
  if (wake) cv_.notify_one();
}

void CaptureWriter::push_many(std::vector<Queued>& events) {
  if (events.empty()) return;
  auto now = std::chrono::steady_clock::now();
  for (auto& q : events) q.queued = now;
  bool wake;
  {
    std::lock_guard lk(mu_);
    pending_events_ += events.size();
    pending_.push_back(std::move(events));
    events = Chunk{};
    if (!spare_.empty()) {
      events.swap(spare_.back());
      spare_.pop_back();
    }
    wake = pending_events_ >= kBatchEvents;
  }
  if (wake) cv_.notify_one();
}

void CaptureWriter::run() {
  // Ahead of ordinary work: a starved writer holds events past the kill bound.
  if (!raise_capture_thread_priority())
    spdlog::debug("store: the writer runs at the caller's priority (no CAP_SYS_NICE)");
  std::vector<Chunk> batch;
  LibraryChanges library;
  std::vector<NcclStall> stalls;
  gpumetrics::SampleBatch gpu;
  for (;;) {
    bool stop;
    size_t events;
    {
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, kBatchInterval, [&] { return stopping_ || pending_events_ >= kBatchEvents; });
      batch.swap(pending_);
      events = pending_events_;
      pending_events_ = 0;
      std::swap(library, pending_library_);
      stalls.swap(pending_stalls_);
      std::swap(gpu, pending_gpu_);
      stop = stopping_;
    }
    {
      std::lock_guard db_lk(db_mu_);  // one lock per batch (the connection is NOMUTEX)
      if (events) write_batch(batch, events);
      if (stopped_full_) {
        // The reserve is for the end alone: the side batches are counted too.
        uint64_t n = library.size() + gpu.metrics.size() + gpu.processes.size() + gpu.events.size();
        for (const auto& st : stalls) n += 1 + st.ranks.size();
        library = {};
        stalls.clear();
        gpu.clear();
        std::lock_guard lk(mu_);
        stats_.failed_rows += n;
        stats_.full_lost += n;
      } else {
        if (!events) write_counters_only();
        write_library_changes(library);
        write_stalls(stalls);
        write_gpu_samples(gpu);
      }
    }
    // The chunks go back to the consumer empty, their capacity kept (a few:
    // a burst's many chunks are freed).
    for (Chunk& c : batch) c.clear();
    {
      std::lock_guard lk(mu_);
      for (Chunk& c : batch)
        if (spare_.size() < kSpareChunks && c.capacity()) spare_.push_back(std::move(c));
    }
    batch.clear();
    if (stop) {
      std::lock_guard lk(mu_);
      if (pending_.empty() && pending_library_.empty() && pending_stalls_.empty() && pending_gpu_.empty()) return;
    }
  }
}

bool CaptureWriter::check(int rc) {
  if (rc == SQLITE_DONE) return true;
  // Some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM) make SQLite roll
  // the whole transaction back; writing on would autocommit row by row.
  if (sqlite3_get_autocommit(db_.get())) {
    note_failure();
    batch_rolled_back_ = true;
    return false;
  }
  std::lock_guard lk(mu_);
  ++stats_.failed_rows;
  return true;
}

void CaptureWriter::note_failure() {
  failure_code_ = sqlite3_errcode(db_.get()) & 0xff;
  failure_why_ = db_.errmsg();
}

namespace {
constexpr auto kLossLogInterval = std::chrono::seconds(10);
}

void CaptureWriter::log_loss(size_t lost) {
  loss_unlogged_ += lost;
  auto now = std::chrono::steady_clock::now();
  if (loss_logged_ != std::chrono::steady_clock::time_point{} && now - loss_logged_ < kLossLogInterval) return;
  spdlog::warn("store: a batch was not stored ({}); {} events lost{} (counter store_failed_rows)", failure_why_,
               loss_unlogged_,
               loss_logged_ == std::chrono::steady_clock::time_point{} ? "" : " since the last message");
  loss_logged_ = now;
  loss_unlogged_ = 0;
}

Status CaptureWriter::stop_storing_when_full(uint64_t reserve_bytes) {
  stop_when_full_ = true;
  if (!reserve_bytes) return {};
  reserve_path_ = path_ + kCaptureReserveSuffix;
  auto create = [&] {
    return ::open(reserve_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  };
  int fd = create();
  // A record killed before its end leaves its reserve behind. The capture
  // beside it is being made anew, so a leftover that is a plain file of
  // this user goes; anything else in the way (a link, another user's file,
  // a directory) is refused, never followed or truncated.
  struct stat st {};
  if (fd < 0 && errno == EEXIST && ::lstat(reserve_path_.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      st.st_uid == ::geteuid() && ::unlink(reserve_path_.c_str()) == 0)
    fd = create();
  if (fd < 0) {
    int err = errno;
    Error e = make_error("cannot set aside room beside " + path_ + ": " + reserve_path_ + ": " + std::strerror(err),
                         err == ENOSPC || err == EDQUOT
                             ? "the disk is full: free some room or choose another output path (-o)"
                         : err == EEXIST ? "something that is not a leftover of gpuobs is in the way: remove it"
                                         : "choose another output path (-o)",
                         2);
    reserve_path_.clear();
    return e;
  }
  int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(reserve_bytes));
  ::close(fd);
  if (rc != 0) {
    ::unlink(reserve_path_.c_str());
    reserve_path_.clear();
    return make_error(
        "cannot set aside " + std::to_string(reserve_bytes >> 10) + " KiB beside " + path_ + ": " + std::strerror(rc),
        "the disk is (nearly) full: free some room or choose another output path (-o)", 2);
  }
  return {};
}

void CaptureWriter::on_disk_full() {
  stopped_full_ = true;
  if (!reserve_path_.empty()) ::unlink(reserve_path_.c_str());  // room for the end, the counters and the state
  reserve_path_.clear();
  {
    std::lock_guard lk(mu_);
    stats_.disk_full = true;
    counters_dirty_ = true;
  }
  spdlog::error(
      "the disk holding {} is full ({}): events are no longer stored, each one is counted; "
      "the capture will be marked incomplete",
      path_, failure_why_);
}

// After a rollback, the rows this batch inserted are gone: ids that point at
// them must not be used again (processes are re-created on their next event).
void CaptureWriter::forget_batch_state() {
  for (uint32_t tgid : created_in_batch_) live_.erase(tgid);
  threads_.clear();
  api_.forget_allocations();
  api_.forget_batch_rows();
  nccl_.forget_batch_rows();
  driver_.forget_allocations();
  gpu_jobs_.forget();
  // Names and shapes the batch inserted are gone with it.
  if (auto s = strings_.reload(); !s) spdlog::warn("store: {}", s.error().message);
  if (auto s = launches_.rolled_back(); !s) spdlog::warn("store: {}", s.error().message);
}

void CaptureWriter::write_batch(std::vector<Chunk>& all, size_t events) {
  Cursor c{&all, 0, 0, events};
  while (!c.done()) write_transaction(c);
}

void CaptureWriter::skip_event(Item& item) {
  if (auto* c = std::get_if<ApiCallEvent>(&item.ev))
    if (const ApiSpec* spec = api_by_id(c->api); spec && spec->family == Family::collective) nccl_.skip_call(*c, *spec);
}

void CaptureWriter::write_event(Item& item, BatchTally& t) {
  Event& ev = item.ev;
  api_.set_stack(item.stack_id);
  if (auto* l = std::get_if<gpuobs_launch>(&ev)) {
    int64_t pid = process_for(l->hdr.tgid);
    note_thread(pid, l->hdr.tid, l->hdr.ts_ns);
    check(launches_.add(decode_launch(*l), l->hdr.ts_ns, pid, l->hdr.tgid, l->hdr.tid, item.stack_id));
    ++t.launches;
  } else if (auto* c = std::get_if<ApiCallEvent>(&ev)) {
    int64_t pid = process_for(c->hdr.tgid);
    note_thread(pid, c->hdr.tid, c->hdr.ts_ns);
    const ApiSpec* spec = api_by_id(c->api);
    if (spec && spec->family == Family::collective) {
      check(nccl_.write_call(*c, *spec, pid, item.stack_id));
      ++t.calls;
    } else if (spec && spec->family == Family::launch) {
      check(launches_.add(decode_launch(*c, *spec), c->hdr.ts_ns, pid, c->hdr.tgid, c->hdr.tid, item.stack_id));
      ++t.launches;
    } else {
      check(api_.write_call(*c, pid));
      // A lookup that named a function handle anew: launches ask again.
      if (api_.learned_name()) launches_.forget_names(pid);
      ++t.calls;
    }
  } else if (auto* i = std::get_if<IoctlEvent>(&ev)) {
    int64_t pid = process_for(i->hdr.tgid);
    note_thread(pid, i->hdr.tid, i->hdr.ts_ns);
    check(driver_.write(*i, pid, item.stack_id));
    ++t.ioctls;
  } else if (auto* j = std::get_if<GpuJobEvent>(&ev)) {
    // Only a queue event fires in the submitting process; the others' task
    // is whoever the scheduler or an interrupt ran on.
    int64_t pid = j->event == GPUOBS_GPU_TP_QUEUE ? process_for(j->hdr.tgid) : 0;
    if (pid) note_thread(pid, j->hdr.tid, j->hdr.ts_ns);
    check(gpu_jobs_.write(*j, pid));
  } else if (auto* p = std::get_if<ProcEvent>(&ev)) {
    on_proc(*p);
    ++t.procs;
  } else if (auto* m = std::get_if<ModuleDef>(&ev)) {
    check(stacks_.write_module(*m));
  } else if (auto* f = std::get_if<FrameDef>(&ev)) {
    check(stacks_.write_frame(*f));
  } else if (auto* st = std::get_if<StackDef>(&ev)) {
    check(stacks_.write_stack(*st));
  }
}

void CaptureWriter::add_tally(WriterStats& s, const BatchTally& t) {
  s.launches += t.launches;
  s.ioctls += t.ioctls;
  s.process_events += t.procs;
  s.api_calls += t.calls;
  s.backlog_dropped += t.behind;
  s.failed_rows += t.launch_rows_failed;
  s.unreadable_names = api_.unreadable_names();
  s.symbols = stacks_.stats();
  s.gpu_jobs = gpu_jobs_.stats();
  s.gpu_jobs_open = gpu_jobs_.open_jobs();
}

void CaptureWriter::write_transaction(Cursor& items) {
  // Bounded by time as well as count: a backlog is written as a series of
  // commits at most kMaxTransaction apart, never as one long transaction
  // that a kill -9 would lose whole.
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + kMaxTransaction, too_old = start - max_backlog_;
  size_t waiting = items.left;
  {
    std::lock_guard lk(mu_);
    waiting += pending_events_;
  }
  bool overloaded = waiting >= max_backlog_events_;
  // Everything left is lost with a transaction that cannot begin or commit.
  auto lose_all = [&] {
    size_t n = items.left, launches = 0;
    for (; !items.done(); items.next()) {
      launches += is_launch(items.item().ev);
      skip_event(items.item());
    }
    ++definitions_lost_;  // stack definitions in the batch must be sent again
    std::lock_guard lk(mu_);
    stats_.failed_rows += n;
    stats_.failed_launches += launches;
    ++stats_.failed_batches;
    return n;
  };
  if (stopped_full_) {  // the disk filled up: counted, never tried again
    size_t n = items.left, launches = 0;
    for (; !items.done(); items.next()) {
      launches += is_launch(items.item().ev);
      skip_event(items.item());
    }
    std::lock_guard lk(mu_);
    stats_.failed_rows += n;
    stats_.failed_launches += launches;
    stats_.full_lost += n;
    return;
  }
  if (auto s = db_.exec("BEGIN"); !s) {
    note_failure();
    size_t n = lose_all();
    if (failure_code_ == SQLITE_FULL && stop_when_full_) on_disk_full();
    else log_loss(n);
    return;
  }
  BatchTally tally;
  created_in_batch_.clear();
  batch_rolled_back_ = false;
  size_t written = 0;
  for (; !items.done(); items.next()) {
    if (batch_rolled_back_) break;
    if (written >= kMaxTransactionEvents ||
        (written && written % kDeadlineCheckEvery == 0 && std::chrono::steady_clock::now() >= deadline))
      break;  // the rest goes into the next transaction
    ++written;
    Item& item = items.item();
    if (overloaded && item.queued < too_old && droppable(item.ev)) {
      ++tally.behind;
      skip_event(item);
    } else {
      write_event(item, tally);
    }
  }
  // The launches, in time order, with their counts: a batch whose counts
  // cannot be stored is rolled back whole.
  if (!batch_rolled_back_ && launches_.flush(&tally.launch_rows_failed) != SQLITE_DONE) {
    note_failure();
    (void)db_.exec("ROLLBACK");
    batch_rolled_back_ = true;
  }
  // The counters travel with the rows they count: what a capture cut short
  // says it lost is true as of its last commit.
  if (!batch_rolled_back_) {
    WriterStats now;
    {
      std::lock_guard lk(mu_);
      now = stats_;
    }
    add_tally(now, tally);
    write_progress(now);
  }
  if (!batch_rolled_back_) {
    if (auto s = db_.exec("COMMIT"); !s) {
      note_failure();
      (void)db_.exec("ROLLBACK");
      batch_rolled_back_ = true;
    } else {
      launches_.committed();
      nccl_.committed();
    }
  }
  if (batch_rolled_back_) {
    // As before transactions were cut by time: the whole batch is lost (its
    // stack definitions with it; later events may refer to them).
    forget_batch_state();
    size_t lost = written + lose_all();
    {
      std::lock_guard lk(mu_);
      stats_.failed_rows += written;  // lose_all counted the rest
      stats_.failed_launches += tally.launches;
      counters_dirty_ = true;  // its counter rows went with it
    }
    if (failure_code_ == SQLITE_FULL && stop_when_full_) on_disk_full();
    else log_loss(lost);
    return;
  }
  if (tally.behind)
    spdlog::warn(
        "store: the writer is more than {} ms and {} events behind: {} events dropped "
        "(dropped_store_backlog)",
        max_backlog_.count(), max_backlog_events_, tally.behind);
  std::lock_guard lk(mu_);
  add_tally(stats_, tally);
  ++stats_.batches;
}

void CaptureWriter::set_counters(CounterMap counters) {
  std::lock_guard lk(mu_);
  if (counters == counters_) return;
  counters_ = std::move(counters);
  counters_dirty_ = true;
}

namespace {

// The counters the writer itself keeps (Session::counters() names them the same).
void add_writer_counters(CounterMap& c, const WriterStats& w) {
  c["stored_launch"] = {w.launches, "userspace"};
  c["stored_ioctl"] = {w.ioctls, "userspace"};
  c["stored_api_call"] = {w.api_calls, "userspace"};
  c["stored_process_events"] = {w.process_events, "userspace"};
  c["store_failed_rows"] = {w.failed_rows, "userspace"};
  c["dropped_store_backlog"] = {w.backlog_dropped, "userspace"};
  c["kernel_name_unreadable"] = {w.unreadable_names, "userspace"};
  c["frames_unsymbolized"] = {w.symbols.unsymbolized, "userspace"};
  c["modules_without_symbols"] = {w.symbols.modules_no_symbols, "userspace"};
}

}  // namespace

void CaptureWriter::write_progress(const WriterStats& now) {
  CounterMap c;
  {
    std::lock_guard lk(mu_);
    c = counters_;
    counters_dirty_ = false;
  }
  add_writer_counters(c, now);
  for (const auto& [name, v] : c) {
    if (batch_rolled_back_) return;
    check(ins_counter_.bind(1, name).bind(2, v.first).bind(3, v.second).exec());
  }
  if (!batch_rolled_back_) check(upd_committed_.bind(1, monotonic_now_ns()).exec());
}

void CaptureWriter::write_counters_only() {
  WriterStats now;
  {
    std::lock_guard lk(mu_);
    if (!counters_dirty_) return;
    now = stats_;
  }
  if (!db_.exec("BEGIN")) return;  // tried again with the next batch
  batch_rolled_back_ = false;
  write_progress(now);
  if (batch_rolled_back_ || !db_.exec("COMMIT")) {
    (void)db_.exec("ROLLBACK");
    std::lock_guard lk(mu_);
    counters_dirty_ = true;
  }
}

int CaptureWriter::exec_process_insert(int64_t id, uint32_t tgid, const ProcessInfo& info, const char* source,
                                       std::optional<uint64_t> fork_ns, const ProcessOrigin& origin) {
  auto text = [](const std::string& v) { return v.empty() ? std::nullopt : std::optional<std::string_view>(v); };
  auto nonzero = [](uint64_t v) { return v ? std::optional<uint64_t>(v) : std::nullopt; };
  ins_process_.bind(1, tgid)
      .bind(2, nonzero(info.ppid))
      .bind(3, nonzero(info.start_boottime_ns))
      .bind(4, text(info.comm))
      .bind(5, text(info.exe))
      .bind(6, fork_ns)
      .bind(7, std::string_view(source))
      .bind(8, id)
      .bind(9, text(origin.cgroup))
      .bind(10, text(origin.container_id));
  return ins_process_.exec();
}

int64_t CaptureWriter::insert_process(uint32_t tgid, const ProcessInfo& info, const char* source,
                                      std::optional<uint64_t> fork_ns) {
  int64_t id = next_process_id_++;
  ProcessOrigin origin{info.cgroup, info.container_id};
  if (origin.cgroup.empty() && origin_)
    if (auto o = origin_(tgid)) origin = *o;
  if (origin.cgroup.empty()) live_origin_.erase(tgid);
  else live_origin_[tgid] = origin;
  check(exec_process_insert(id, tgid, info, source, fork_ns, origin));
  created_in_batch_.push_back(tgid);
  return id;
}

int64_t CaptureWriter::process_for(uint32_t tgid) {
  auto it = live_.find(tgid);
  if (it != live_.end()) return it->second;
  // Running before the capture started (daemon) or its fork record was lost.
  ProcessInfo info;
  if (lookup_)
    if (auto i = lookup_(tgid)) info = *i;
  int64_t id = insert_process(tgid, info, "proc", std::nullopt);
  live_[tgid] = id;
  return id;
}

void CaptureWriter::note_thread(int64_t process_id, uint32_t tid, uint64_t ts) {
  uint64_t key = (static_cast<uint64_t>(process_id) << 32) | tid;
  if (!threads_.insert(key).second) return;
  check(ins_thread_.bind(1, process_id).bind(2, tid).bind(3, ts).exec());
}

void CaptureWriter::on_proc(const ProcEvent& e) {
  uint32_t tgid = e.hdr.tgid;
  switch (e.type) {
    case GPUOBS_EV_PROC_FORK: {
      ProcessInfo info{e.ppid, e.start_boottime_ns, e.comm, {}, {}, {}};
      live_[tgid] = insert_process(tgid, info, "fork", e.hdr.ts_ns);  // replaces a reused pid's row
      break;
    }
    case GPUOBS_EV_PROC_EXEC: {
      auto it = live_.find(tgid);
      int64_t id;
      if (it == live_.end()) {
        id = insert_process(tgid, ProcessInfo{e.ppid, e.start_boottime_ns, e.comm, e.filename, {}, {}}, "exec",
                            std::nullopt);
        live_[tgid] = id;
      } else {
        id = it->second;
      }
      check(upd_exec_.bind(1, e.comm).bind(2, e.filename).bind(3, e.hdr.ts_ns).bind(4, id).exec());
      break;
    }
    case GPUOBS_EV_PROC_EXIT: {
      int64_t id = process_for(tgid);
      check(upd_exit_.bind(1, e.hdr.ts_ns).bind(2, e.exit_code).bind(3, id).exec());
      api_.forget_process(id);
      driver_.forget_process(id);
      nccl_.forget_process(tgid);
      live_.erase(tgid);
      live_origin_.erase(tgid);
      break;
    }
  }
}

void CaptureWriter::stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
}

int64_t CaptureWriter::active_processes() {
  std::lock_guard lk(db_mu_);  // the connection is NOMUTEX: never beside a batch
  auto n = db_.scalar(
      "SELECT count(*) FROM (SELECT process_id FROM launch_shapes"
      " UNION SELECT process_id FROM ioctls)");
  return n ? *n : 0;
}

Status CaptureWriter::write_end(int64_t end_mono_ns, std::optional<int> exit_status, const CounterMap& counters,
                                std::string_view state) {
  stop();
  // End row, final counters and 'complete' together, or none of them: a
  // capture whose end could not be written stays 'incomplete'.
  if (auto s = db_.exec("BEGIN"); !s) return make_error("cannot finish the capture: " + s.error().message);
  Stmt end(db_.get(), "UPDATE capture SET end_mono_ns = ?, exit_status = ?, state = ? WHERE id = 1");
  end.bind(1, end_mono_ns);
  if (exit_status) end.bind(2, *exit_status);
  else end.bind_null(2);
  end.bind(3, state);
  int rc = end.exec();
  // The last launches' counts: a finished capture's launch_agg reads launch_counts alone.
  uint64_t unused = 0;
  if (rc == SQLITE_DONE) rc = launches_.flush(&unused, true);
  for (const auto& [name, v] : counters)
    if (rc == SQLITE_DONE) rc = ins_counter_.bind(1, name).bind(2, v.first).bind(3, v.second).exec();
  if (rc != SQLITE_DONE) {
    std::string err = db_.errmsg();
    (void)db_.exec("ROLLBACK");
    return make_error("cannot finish the capture: " + err);
  }
  if (auto s = db_.exec("COMMIT"); !s) {
    (void)db_.exec("ROLLBACK");
    return make_error("cannot finish the capture: " + s.error().message);
  }
  launches_.committed();
  if (!reserve_path_.empty()) ::unlink(reserve_path_.c_str());
  reserve_path_.clear();
  // A finished capture is one self-contained file: fold the WAL in and leave
  // WAL mode, so read-only readers need (and create) no -wal/-shm files. On a
  // full disk the fold does not fit (the file would grow by the WAL's pages):
  // the capture is whole as it is, with its -wal beside it.
  if (stopped_full_) return {};
  if (auto s = db_.exec("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;"); !s)
    spdlog::warn("{}: the write-ahead log could not be folded in ({}); keep {}-wal beside it", path_, s.error().message,
                 path_);
  return {};
}

WriterStats CaptureWriter::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

}  // namespace gpuobs
