// gpuobsd: the capture engine for the whole host. Writes segment files under
// the state directory (rotated by size and age, old ones deleted), tells
// systemd how it is doing (Type=notify), and rewrites a status file each
// second. SIGHUP re-reads the configuration; SIGTERM/SIGINT drain the ring,
// commit and exit. docs/operations.md describes all of it.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "capture/session.h"
#include "common/log.h"
#include "common/private_files.h"
#include "daemon/config.h"
#include "daemon/diff_watch.h"
#include "daemon/drm_engine_health.h"
#include "daemon/fleet_ship.h"
#include "daemon/journal_log.h"
#include "daemon/metrics_server.h"
#include "daemon/notify.h"
#include "daemon/process_tally.h"
#include "daemon/status_file.h"
#include "daemon_state/health_json.h"
#include "daemon_state/segments.h"
#include "store/capture_file.h"
#include "version.h"

namespace {

using namespace gpuobs;
using Clock = std::chrono::steady_clock;

// A rotation that failed (full disk, say) is tried again this much later.
constexpr int kRotateRetryS = 5;
// Less free space than this on the state directory's file system, after a
// failure to write: the disk is full (an empty capture alone is about 1.2 MiB).
constexpr uint64_t kFullBelowBytes = 1 << 20;
// An emergency deletion (the disk full) deletes the oldest finished segments
// until this much is free, so that one episode deletes once, not at every
// batch: finishing a segment folds its WAL (up to 4 MiB, SQLite's automatic
// checkpoint) into the file, a new segment is about 1.2 MiB and grows its
// own WAL to 4 MiB, and the batches after it need room too.
constexpr uint64_t kRoomBytes = 16 << 20;

uint64_t free_bytes(const std::string& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return UINT64_MAX;
  return static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
}

// kRoomBytes, but at most a quarter of the file system: a small state
// directory keeps segments besides the current one.
uint64_t room_bytes(const std::string& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return kRoomBytes;
  return std::min<uint64_t>(kRoomBytes, static_cast<uint64_t>(v.f_blocks) * v.f_frsize / 4);
}

bool disk_full(const std::string& dir, const std::string& error) {
  if (error.find("full") != std::string::npos || error.find("No space") != std::string::npos) return true;
  return free_bytes(dir) < kFullBelowBytes;
}

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};
void on_stop(int) { g_stop = true; }
void on_hup(int) { g_reload = true; }

int64_t unix_now() { return static_cast<int64_t>(::time(nullptr)); }

uint64_t file_bytes(const std::string& path) {
  struct stat st {};
  uint64_t n = 0;
  for (const char* sfx : {"", "-wal"})
    if (::stat((path + sfx).c_str(), &st) == 0) n += static_cast<uint64_t>(st.st_size);
  return n;
}

segments::Retention retention_of(const daemon::Config& c) {
  return segments::Retention{c.keep_segments, c.keep_bytes, c.max_age_s, !c.ship_url.empty()};
}

// The walking skeleton's --db mode: a previous capture is kept, never overwritten.
bool move_aside(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return true;
  std::string aside = path + "." + std::to_string(::time(nullptr));
  if (std::rename(path.c_str(), aside.c_str()) != 0) {
    print_error("gpuobsd", make_error("cannot move the previous capture aside to " + aside));
    return false;
  }
  for (const char* sfx : kCaptureCompanions) std::rename((path + sfx).c_str(), (aside + sfx).c_str());
  spdlog::info("previous capture moved to {}", aside);
  return true;
}

class Daemon {
 public:
  Daemon(daemon::Config cfg, int argc, char** argv) : cfg_(std::move(cfg)), argc_(argc), argv_(argv) {}
  int run();

 private:
  bool segmented() const { return cfg_.db.empty(); }
  std::string new_segment_path(int64_t seq) const {
    return cfg_.state_dir + "/" + segments::segment_name(seq, unix_now());
  }
  void maybe_rotate(Clock::time_point now);
  // Retention; never deletes current (empty: none is current yet).
  void apply_retention(const std::string& current);
  void apply_retention() { apply_retention(session_->output()); }
  // Disk full: deletes the oldest segment but current; false if none is left.
  bool delete_oldest(const std::string& current, const std::string& why);
  // Disk full: retention, then the oldest segments but current until
  // room_bytes() are free. Returns how many were deleted.
  int make_room(const std::string& current, const std::string& why);
  // Batches failing on a full disk: makes room while finished segments are
  // left, so the current segment goes on storing (losses stay counted).
  void check_store();
  // The segment this run starts in, made on a full disk by deleting the
  // oldest segments first; nothing left behind if it cannot be made.
  Result<std::unique_ptr<Session>> create_session(SessionOptions& opts);
  // Startup: 0-byte segment files (left by an older gpuobsd that could not
  // initialise them on a full disk) are deleted.
  void delete_empty_segments();
  // The counters of issue 15 into the session (stored with the capture).
  void sync_counters();
  void reload();
  HealthSnapshot sample(Clock::time_point now);
  void fill_gpu_health(HealthSnapshot& h) const;
  void publish(const HealthSnapshot& h);

  daemon::Config cfg_;
  int argc_;
  char** argv_;
  daemon::Notifier notify_;
  std::unique_ptr<Session> session_;
  daemon::ProcessTally tally_;
  int64_t seq_ = 0;
  uint64_t records_at_open_ = 0;
  uint64_t bytes_at_open_ = 0;
  bool baseline_pending_ = false;  // bytes_at_open_ not measured yet (see maybe_rotate)
  Clock::time_point segment_opened_;
  Clock::time_point rotate_retry_at_{};  // after a failed rotation
  int64_t started_unix_s_ = 0;
  uint64_t last_records_ = 0;
  Clock::time_point last_sample_;
  std::unique_ptr<MetricsServer> metrics_;         // only with metrics_listen set
  std::unique_ptr<daemon::DiffWatch> diff_watch_;  // only with diff_baseline set
  std::unique_ptr<daemon::FleetShip> ship_;        // only with ship_url set
  uint64_t unshipped_deleted_ = 0;
  uint64_t emergency_deletions_ = 0;
  uint64_t failed_rows_seen_ = 0;  // of the current segment's writer (check_store)
  bool full_logged_ = false;       // "nothing left to delete" said once per episode
};

void Daemon::maybe_rotate(Clock::time_point now) {
  if (!segmented()) return;
  // An empty capture is already a few hundred KiB (schema, probe rows): a
  // segment without events is never rotated, whatever the limits say.
  if (session_->records() == records_at_open_) return;
  // A rotated segment's baseline size: once its writer has committed a batch,
  // i.e. the stack definitions carried into it (rewritten at rotation, often
  // megabytes), which are not captured data.
  if (baseline_pending_ && session_->writer_stats().batches > 0) {
    bytes_at_open_ = file_bytes(session_->output());
    baseline_pending_ = false;
  }
  // Size: what was captured, beyond the empty capture's own size (schema,
  // probe rows, the WAL's first pages) measured when the segment opened.
  bool by_size = !baseline_pending_ && cfg_.segment_max_bytes &&
                 file_bytes(session_->output()) >= bytes_at_open_ + cfg_.segment_max_bytes;
  bool by_age = cfg_.segment_max_age_s && now - segment_opened_ >= std::chrono::seconds(cfg_.segment_max_age_s);
  if (!by_size && !by_age) return;
  if (now < rotate_retry_at_) return;
  int64_t seq = seq_ + 1;
  std::string path = new_segment_path(seq);
  std::string cur = session_->output();
  // A nearly full disk: room first, so that the new segment can take the
  // live state carried into it and its first batches, not only its schema.
  if (free_bytes(cfg_.state_dir) < room_bytes(cfg_.state_dir))
    make_room(cur, "before starting segment " + std::to_string(seq));
  auto st = session_->rotate(path, seq);
  // Still a full disk: the oldest finished segments go, one at a time, until
  // the new one can be made, so that capture goes on without an
  // administrator (the newest data is kept).
  while (!st && disk_full(cfg_.state_dir, st.error().message) &&
         delete_oldest(cur, "segment " + std::to_string(seq) + " could not be made"))
    st = session_->rotate(path, seq);
  if (!st) {
    // The current segment goes on (and keeps counting what it cannot store);
    // retried in a while, not at every check, on a full disk.
    spdlog::warn("cannot start segment {}: {}; retrying in {} s", path, st.error().message, kRotateRetryS);
    rotate_retry_at_ = now + std::chrono::seconds(kRotateRetryS);
    return;
  }
  spdlog::info("segment {} started ({})", path, by_size ? "size limit" : "age limit");
  failed_rows_seen_ = 0;  // the new writer's count starts at 0
  seq_ = seq;
  segment_opened_ = now;
  records_at_open_ = session_->records();
  bytes_at_open_ = file_bytes(path);
  baseline_pending_ = true;
  tally_.reset_counts();
  if (diff_watch_) diff_watch_->set_current(path);
  if (auto st = segments::set_current(cfg_.state_dir, path); !st) spdlog::warn("{}", st.error().message);
  if (ship_) ship_->set_current(path);  // the one just finished can go
  apply_retention();
}

bool Daemon::delete_oldest(const std::string& current, const std::string& why) {
  std::string cur = std::filesystem::path(current).filename();
  for (const auto& s : segments::list(cfg_.state_dir)) {  // oldest first
    if (std::filesystem::path(s.path).filename() == cur) continue;
    if (::unlink(s.path.c_str()) != 0 && errno != ENOENT) {
      spdlog::warn("disk full: cannot delete segment {}: {}", s.path, std::strerror(errno));
      continue;
    }
    bool unshipped = ship_ && !daemon::is_marked_shipped(s.path);
    remove_capture_files(s.path);
    ++emergency_deletions_;
    if (unshipped) {
      ++unshipped_deleted_;
      spdlog::warn("segment {} deleted before it was shipped to ClickHouse (the disk is full)", s.path);
    }
    spdlog::warn("segment {} deleted (emergency: the disk is full, {} bytes freed; {})", s.path, s.bytes, why);
    sync_counters();
    return true;
  }
  return false;  // nothing but the current segment: an administrator must make room
}

int Daemon::make_room(const std::string& current, const std::string& why) {
  apply_retention(current);
  int n = 0;
  while (free_bytes(cfg_.state_dir) < room_bytes(cfg_.state_dir) && delete_oldest(current, why)) ++n;
  return n;
}

void Daemon::check_store() {
  if (!segmented()) return;
  WriterStats w = session_->writer_stats();
  if (w.failed_rows == failed_rows_seen_) {
    full_logged_ = false;
    return;
  }
  failed_rows_seen_ = w.failed_rows;
  // A batch lost with less than the room free: the disk (a large batch can
  // fail with more than kFullBelowBytes still free).
  if (free_bytes(cfg_.state_dir) >= room_bytes(cfg_.state_dir)) return;
  if (make_room(session_->output(), "the current segment could not store a batch") == 0 && !full_logged_) {
    spdlog::error(
        "disk full: {} cannot store events and no other segment is left to delete; events are counted "
        "as not stored until there is room",
        session_->output());
    full_logged_ = true;
  }
}

void Daemon::sync_counters() {
  if (!session_) return;
  session_->set_counter("segments_deleted_emergency", emergency_deletions_);
  if (metrics_) {
    MetricsServerStats m = metrics_->stats();
    session_->set_counter("metrics_connections_refused", m.connections_refused);
    session_->set_counter("metrics_accept_backoffs", m.accept_backoffs);
  }
}

void Daemon::delete_empty_segments() {
  for (const auto& s : segments::list(cfg_.state_dir)) {
    if (s.bytes != 0) continue;
    remove_capture_files(s.path);
    spdlog::warn("segment {} deleted: an empty file, never initialised (left by a start on a full disk)", s.path);
  }
}

Result<std::unique_ptr<Session>> Daemon::create_session(SessionOptions& opts) {
  for (;;) {
    auto session = Session::create(opts);
    if (session) return session;
    // The path is new (next_seq): whatever a failed start left there goes.
    if (segmented()) remove_capture_files(opts.output);
    if (!segmented() || !disk_full(cfg_.state_dir, session.error().message)) return session.error();
    if (!delete_oldest("", "gpuobsd could not start its segment"))
      return make_error("cannot start segment " + opts.output + ": " + session.error().message +
                            "; the disk is full and no segment is left to delete",
                        "make room on the file system of " + cfg_.state_dir, 1);
  }
}

void Daemon::apply_retention(const std::string& current) {
  if (!segmented()) return;
  for (const auto& p : segments::enforce(cfg_.state_dir, retention_of(cfg_), current, unix_now()))
    spdlog::info("segment {} deleted (retention)", p);
}

void Daemon::reload() {
  notify_.send("RELOADING=1");
  auto p = daemon::parse_config(argc_, argv_);
  if (p.exit_code >= 0) {
    spdlog::error("SIGHUP: the configuration has errors; keeping the current one");
  } else {
    daemon::ConfigChange ch = daemon::diff_config(cfg_, p.config);
    // Only what can change live changes; the rest waits for a restart.
    cfg_ = daemon::apply_live(cfg_, p.config);
    spdlog::set_level(spdlog::level::from_str(cfg_.log_level));
    for (const auto& n : ch.applied) spdlog::info("SIGHUP: {} changed, applied", n);
    for (const auto& n : ch.need_restart) spdlog::warn("SIGHUP: {} changed, takes effect after a restart", n);
    if (ch.applied.empty() && ch.need_restart.empty()) spdlog::info("SIGHUP: configuration unchanged");
    apply_retention();
  }
  notify_.send("READY=1");
}

// The GPUs the sampler watches and their latest values (issue 19).
void Daemon::fill_gpu_health(HealthSnapshot& h) const {
  const gpumetrics::MetricsSampler* m = session_->metrics_sampler();
  if (!m) {
    h.gpu_metrics = "off (metrics_hz 0)";
    return;
  }
  h.gpu_metrics = m->summary();
  h.gpu_metric_query_errors = m->stats().query_errors;
  for (const auto& g : m->gpus()) h.gpus.push_back(GpuHealth{g.uuid, g.name, {}});
  for (const auto& v : m->latest())
    if (v.gpu < h.gpus.size())
      h.gpus[v.gpu].metrics.emplace_back(std::string(gpumetrics::metric_info(v.metric).name), v.value);
  h.drm_engines = drm_engine_health(m->latest_drm());
  for (const auto& [key, n] : session_->gpu_ring_jobs()) h.gpu_rings.push_back(GpuRingHealth{key.first, key.second, n});
}

HealthSnapshot Daemon::sample(Clock::time_point now) {
  HealthSnapshot h;
  h.version = GPUOBS_VERSION;
  h.pid = static_cast<uint32_t>(::getpid());
  h.started_unix_s = started_unix_s_;
  h.sampled_unix_s = unix_now();
  h.events_total = session_->records();
  double dt = std::chrono::duration<double>(now - last_sample_).count();
  h.events_per_s = dt > 0 ? static_cast<double>(h.events_total - last_records_) / dt : 0;
  last_records_ = h.events_total;
  last_sample_ = now;
  h.drops_total = session_->dropped();
  h.store_failed = session_->writer_stats().failed_rows;
  // One entry per library file attached now: the startup plan's and those
  // found in processes' maps since (detached ones are gone from the list).
  for (const auto& w : session_->libraries()) {
    if (w.detached_mono_ns) continue;
    h.libraries.push_back(LibraryHealth{w.file.realpath, w.file.dev, w.file.ino, w.probes_attached, w.probes_failed});
  }
  h.attach_failures = session_->attach_failures();
  h.capture_state = session_->capture_state();
  h.calls_before_attach = session_->coverage_misses();
  h.first_miss = session_->first_coverage_miss();
  if (auto ls = session_->library_watch_stats()) {
    h.library_holds = ls->holds;
    h.library_hold_timeouts = ls->hold_timeouts;
    h.library_hold_max_ms = static_cast<double>(ls->hold_ns_max) / 1e6;
  }
  h.store_failed_batches = session_->failed_batches_total();
  h.emergency_deletions = emergency_deletions_;
  h.nccl_stalls = session_->nccl_stalls();
  fill_gpu_health(h);
  if (ship_) {
    daemon::ShipState sh = ship_->state();
    h.ship_url = sh.url;
    h.ship_segments = sh.shipped_segments;
    h.ship_rows = sh.shipped_rows;
    h.ship_failures = sh.failures;
    h.ship_backlog_segments = sh.backlog_segments;
    h.ship_backlog_bytes = sh.backlog_bytes;
    h.ship_last_success_unix_s = sh.last_success_unix_s;
    h.ship_last_error = sh.last_error;
    h.unshipped_deleted = unshipped_deleted_;
    h.ship_unshippable = sh.unshippable;
  }
  if (diff_watch_) {
    daemon::DiffWatchState d = diff_watch_->state();
    h.diff_baseline = d.baseline;
    h.diff_comparisons = d.comparisons;
    h.diff_errors = d.errors;
    h.diff_regressed = d.regressed;
    h.diff_new_kernels = d.new_kernels;
    h.diff_worst_ratio = d.worst_ratio;
    h.diff_last_error = d.last_error;
  }
  if (metrics_) {
    MetricsServerStats m = metrics_->stats();
    h.metrics_connections = m.connections_active;
    h.metrics_connections_refused = m.connections_refused;
    h.metrics_accept_backoffs = m.accept_backoffs;
  }
  h.processes = tally_.snapshot();
  h.segment_path = session_->output();
  h.segment_bytes = file_bytes(h.segment_path);
  if (segmented()) {
    for (const auto& s : segments::list(cfg_.state_dir)) {
      ++h.segments;
      h.storage_bytes += s.bytes;
    }
  } else {
    h.segments = 1;
    h.storage_bytes = h.segment_bytes;
  }
  return h;
}

void Daemon::publish(const HealthSnapshot& h) {
  if (!cfg_.status_file.empty())
    if (auto st = daemon::write_atomically(cfg_.status_file, to_json(h).dump(2) + "\n"); !st)
      spdlog::debug("{}", st.error().message);
  char line[256];
  std::snprintf(
      line, sizeof line, "STATUS=%.0f events/s, %llu dropped, %llu not stored, %llu missed at start, segment %s",
      h.events_per_s, static_cast<unsigned long long>(h.drops_total), static_cast<unsigned long long>(h.store_failed),
      static_cast<unsigned long long>(h.calls_before_attach), std::filesystem::path(h.segment_path).filename().c_str());
  notify_.send(line);
  if (metrics_) metrics_->update(h);
}

int Daemon::run() {
  started_unix_s_ = unix_now();
  SessionOptions opts = cfg_.session_options();
  if (segmented()) {
    // Outside the unit (no StateDirectory=), gpuobsd makes it 0750 itself.
    if (auto s = create_private_dirs(cfg_.state_dir); !s) {
      print_error("gpuobsd", s.error());
      return 1;
    }
    delete_empty_segments();
    // Retention before the new segment is made, then, on a (nearly) full
    // disk, the oldest segments: gpuobsd starts rather than failing in a loop.
    apply_retention("");
    if (free_bytes(cfg_.state_dir) < room_bytes(cfg_.state_dir)) make_room("", "gpuobsd is starting on a full disk");
    // A restart never appends to an old segment: it starts the next one.
    seq_ = segments::next_seq(cfg_.state_dir);
    opts.output = new_segment_path(seq_);
  } else if (!move_aside(cfg_.db)) {
    return 1;
  }

  struct sigaction sa {};
  sa.sa_handler = on_stop;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  sa.sa_handler = on_hup;
  ::sigaction(SIGHUP, &sa, nullptr);

  auto session = create_session(opts);
  if (!session) {
    print_error("gpuobsd", session.error());
    return session.error().exit_code;
  }
  session_ = std::move(session.value());
  session_->set_event_observer([this](const Event& ev) { tally_.on_event(ev); });
  if (segmented()) {
    if (auto st = session_->set_segment(seq_); !st) spdlog::warn("{}", st.error().message);
    if (auto st = segments::set_current(cfg_.state_dir, opts.output); !st) spdlog::warn("{}", st.error().message);
    apply_retention();
  }
  // No listening socket unless asked for.
  if (!cfg_.metrics_listen.empty()) {
    MetricsServerOptions mo;
    mo.max_connections = cfg_.metrics_max_connections;
    mo.warn = [](const std::string& msg) { spdlog::warn("{}", msg); };
    auto m = MetricsServer::start(cfg_.metrics_listen, std::move(mo));
    if (!m) {
      print_error("gpuobsd", m.error());
      return 1;
    }
    metrics_ = std::move(m.value());
    spdlog::info("metrics on http://{}/metrics", metrics_->address());
  }
  spdlog::info("capturing to {}", opts.output);
  if (!cfg_.diff_baseline.empty()) {
    diff_watch_ = std::make_unique<daemon::DiffWatch>(cfg_.diff_baseline, std::chrono::seconds(cfg_.diff_interval_s),
                                                      double(cfg_.diff_window_s));
    diff_watch_->set_current(opts.output);
    diff_watch_->start();
    spdlog::info("comparing the last {} s with {} every {} s", cfg_.diff_window_s, cfg_.diff_baseline,
                 cfg_.diff_interval_s);
  }
  if (!cfg_.ship_url.empty()) {
    if (!segmented()) {
      print_error("gpuobsd", make_error("ship_url needs segments: it ships finished segments, and --db has none",
                                        "leave db unset (segments in state_dir)", 2));
      return 2;
    }
    auto ep = fleet::parse_endpoint(cfg_.ship_url, cfg_.ship_credentials);
    if (!ep) {
      print_error("gpuobsd", ep.error());
      return 2;
    }
    ship_ = std::make_unique<daemon::FleetShip>(*ep, cfg_.state_dir, std::chrono::seconds(cfg_.ship_interval_s));
    ship_->set_current(opts.output);
    ship_->start();
    spdlog::info("shipping finished segments to {}", ep->display());
  }
  notify_.send("READY=1");

  auto now = Clock::now();
  segment_opened_ = last_sample_ = now;
  bytes_at_open_ = file_bytes(opts.output);
  auto next_sample = now, next_rotate_check = now, next_watchdog = now;
  publish(sample(now));
  while (!g_stop) {
    session_->poll(100);
    now = Clock::now();
    if (g_reload.exchange(false)) reload();
    if (now >= next_rotate_check) {
      check_store();
      maybe_rotate(now);
      next_rotate_check = now + std::chrono::milliseconds(250);
    }
    if (now >= next_sample) {
      sync_counters();
      publish(sample(now));
      next_sample = now + std::chrono::seconds(1);
    }
    if (auto wd = notify_.watchdog_interval(); wd.count() && now >= next_watchdog) {
      notify_.send("WATCHDOG=1");
      next_watchdog = now + wd;
    }
  }

  notify_.send("STOPPING=1");
  auto stop_start = Clock::now();
  if (diff_watch_) diff_watch_->stop();
  if (ship_) ship_->stop();  // a shipment under way stops between inserts; the next start resumes it
  // Exit within 2 s even while processes keep submitting: 1 s to drain the
  // ring, the rest for the writer to commit what it holds.
  session_->set_drain_budget(std::chrono::milliseconds(1000));
  sync_counters();
  auto sum = session_->finish(std::nullopt);
  if (!sum) {
    print_error("gpuobsd", sum.error());
    return 1;
  }
  spdlog::info(
      "stopped in {:.0f} ms: {} launches, {} ioctls, {} process events stored in {}; {} dropped, {} not stored",
      std::chrono::duration<double, std::milli>(Clock::now() - stop_start).count(), sum->launches, sum->ioctls,
      sum->process_events, session_->output(), sum->dropped, sum->store_failed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = gpuobs::daemon::parse_config(argc, argv);
  if (parsed.exit_code >= 0) return parsed.exit_code;
  gpuobs::daemon::log_init(parsed.config.log_level);
  // A peer that closes its end (ClickHouse mid-upload, a metrics client) is
  // an error on that connection, never the daemon's end.
  ::signal(SIGPIPE, SIG_IGN);
  Daemon d(parsed.config, argc, argv);
  return d.run();
}
