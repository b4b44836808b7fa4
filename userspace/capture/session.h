// A capture session: the engine, the decoder and the writer wired together,
// with the attach plan executed and recorded. Shared by `gpuobs record`
// (only_tracked) and gpuobsd (the whole host).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "capture/capture_options.h"
#include "capture/library_watch.h"
#include "capture/nccl_watch.h"
#include "common/result.h"
#include "decode/decoder.h"
#include "gpu_metrics/metrics_sampler.h"
#include "loader/engine.h"
#include "stacks/stack_resolver.h"
#include "store/writer.h"

namespace gpuobs {

struct SessionOptions {
  std::string output;
  bool force = false;
  CaptureMode mode = CaptureMode::record;
  std::string command;  // record: shell-quoted command line
  bool only_tracked = false;
  std::vector<std::string> libcuda_paths;  // empty: discover the system's libcuda.so.1
  std::vector<std::string> libhip_paths;   // empty: discover the system's libamdhip64.so
  std::vector<std::string> device_specs;   // extra watched devices ("MAJOR[:MINOR]" or /dev path)
  bool gpu_devices = true;                 // watch GPU drivers' majors from /proc/devices
  uint32_t ring_bytes = kRingMbDefault << 20;
  uint32_t stack_depth = kStackDepthDefault;  // user-stack frames per event; 0: no stacks
  // fp: frame-pointer walk in BPF; dwarf: also copy stack_copy_bytes of the
  // user stack per event and unwind it with .eh_frame in user space; bpf:
  // unwind in BPF from .eh_frame tables.
  UnwindMode unwind = UnwindMode::fp;
  uint32_t stack_copy_bytes = kStackCopyDefault;
  // Find GPU libraries in processes' mappings (at start, on exec, on a
  // process's first GPU ioctl, every library_rescan_ms) and attach them.
  // Always on in daemon mode. GPUOBS_LIBRARY_RESCAN_MS overrides the period.
  bool watch_libraries = false;
  uint32_t library_rescan_ms = 10000;
  // Caps on the library files the watch attaches (docs/operations.md,
  // "Bounds"): in all, and untrusted files per owner.
  uint32_t library_max_files = 64;
  uint32_t library_max_files_per_user = 8;
  // Hold a process that maps a GPU library gpuobs has no probes on yet
  // (SIGSTOP at the mapping, SIGCONT once attached), at most this long
  // (bpf/library.bpf.h); 0: never hold (its first calls may go unseen).
  uint32_t library_hold_ms = 2000;
  // Found before the command starts (record: its LD_LIBRARY_PATH), attached
  // with the system's libraries unless --libcuda/--libhip replace those.
  std::vector<std::string> preload_libraries;
  // NCCL stall watch (capture/nccl_watch.h): the threshold.
  uint32_t nccl_stall_s = kNcclStallDefaultS;
  // CPython frames in the stacks of Python processes (issue 18).
  bool python_stacks = true;
  // A thread that runs no Python carries the main thread's frames (22).
  bool python_main_thread = true;
  // GPU metrics sampled per second (issue 19, gpu_metrics/); 0: none.
  uint32_t metrics_hz = kMetricsHzDefault;
  uint32_t detail_interval_ms = kDetailIntervalMsDefault;
};

struct SessionSummary {
  uint64_t launches = 0, ioctls = 0, process_events = 0;
  uint64_t api_calls = 0;  // other GPU API calls, any vendor (memory, copies, streams, events, syncs, modules)
  uint64_t dropped = 0;    // every BPF drop counter summed
  uint64_t decode_errors = 0;
  uint64_t store_failed = 0;
  uint64_t processes = 0;   // distinct processes that produced events
  uint64_t stacks = 0;      // distinct stacks
  uint64_t with_stack = 0;  // events that carried a stack
  int probes_attached = 0, probes_planned = 0;
  int probes_failed = 0;   // attaches that failed (the rest of planned - attached: symbols this version lacks)
  bool disk_full = false;  // the store stopped: the disk holding the capture filled up
  // No GPU and no metrics source that failed: nothing worth a line (a host without a driver).
  bool gpu_metrics_absent = false;
  std::string state;  // capture.state: "complete" once the end is written
  // GPU metrics: "2 GPUs (nvml: ...), 10 Hz: 51 samples" or why none; empty with --metrics-hz 0.
  std::string gpu_metrics;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> create(const SessionOptions& opts);

  // The root command of a record session: follow it and its descendants.
  Status track_root(uint32_t tgid);
  // Consume the ring for up to timeout_ms.
  void poll(int timeout_ms);
  // Drain everything still in the ring, stop the writer, store end and counters.
  Result<SessionSummary> finish(std::optional<int> exit_status);

  const std::vector<ProbeResult>& probes() const { return probes_; }
  std::map<std::string, std::pair<uint64_t, std::string>> counters() const;
  // A counter kept by the program around the session (gpuobsd's emergency
  // deletions, say), stored with the others (source "userspace").
  void set_counter(const std::string& name, uint64_t value) { extra_counters_[name] = value; }
  // Library files with probes now (daemon health: LibraryHealth), and the
  // libraries and probes that failed to attach since the start.
  std::vector<WatchedLibrary> libraries() const;
  uint64_t attach_failures() const;
  // What the capture could have missed (issue 37): "complete", or
  // "incomplete (reasons)" for the current capture file (segment).
  std::string capture_state() const;
  // Library mappings so far after which a process could call its library
  // unseen, over every segment, and the first one's description.
  uint64_t coverage_misses() const { return coverage_misses_total_; }
  const std::string& first_coverage_miss() const { return first_coverage_miss_; }
  std::optional<LibraryWatchStats> library_watch_stats() const {
    if (!watch_) return std::nullopt;
    return watch_->stats();
  }

  // --- gpuobsd segments (issue 8) ---
  // Finishes the current capture file and continues into a new one at path,
  // with the BPF engine left attached: the new file gets its own capture row
  // (segment number), probes, watched devices, the processes alive now, and
  // the stack definitions and kernel names known so far. Call it from the
  // thread that polls. On failure the current file goes on being written.
  Status rotate(const std::string& path, int64_t segment);
  // Marks the first file of a daemon run with its segment number.
  Status set_segment(int64_t segment) { return writer_->write_segment(segment); }
  // Sees every decoded event on the polling thread (for cheap per-process tallies).
  void set_event_observer(std::function<void(const Event&)> fn) { observer_ = std::move(fn); }
  // finish() drains the ring until it is empty or this much time has passed
  // (a producer that keeps submitting would keep it from ever being empty).
  void set_drain_budget(std::chrono::milliseconds budget) { drain_budget_ = budget; }
  const std::string& output() const { return output_; }
  uint64_t records() const { return records_; }  // ring records consumed
  uint64_t dropped() const;                      // every BPF drop counter summed
  WriterStats writer_stats() const;              // of the current file's writer
  // Batches lost (rolled back) by every file's writer of this session.
  // Collective stalls the NCCL watch has found (capture/nccl_watch.h).
  uint64_t nccl_stalls() const { return nccl_watch_ ? nccl_watch_->stalls_found() : 0; }
  // The GPU metrics sampler (null with --metrics-hz 0): its GPUs, sources and
  // latest values (gpuobsd's Prometheus page).
  const gpumetrics::MetricsSampler* metrics_sampler() const { return sampler_.get(); }
  // GPU scheduler jobs queued per (device, ring) since the session started
  // (thread-safe).
  std::map<std::pair<std::string, std::string>, uint64_t> gpu_ring_jobs() const;
  uint64_t failed_batches_total() const { return failed_batches_finished_ + writer_->stats().failed_batches; }

 private:
  Session() = default;
  // nvidia: the loaded driver's version, which selects the ioctl argument rules.
  Status attach_plan(const SessionOptions& opts, const NvidiaVersion& nvidia);
  // The capture thread's path for every ring record.
  void on_record(const void* data, size_t size);
  // Hands the events decoded since the last call to the writer, under one
  // lock: at the end of each poll, and every kHandOverEvents within one (a
  // ring that never empties keeps the consumer inside one poll).
  void hand_over();
  // Library watch: created before the plan; startup scan after it.
  void create_library_watch(const SessionOptions& opts);
  void start_library_watch();
  // An exec or a process's first GPU ioctl: scan its maps (worker thread).
  void note_for_library_watch(const Event& ev);
  // On the polling thread (the one that may rotate the writer): rows the
  // watch produced go to the current writer and to what segments repeat.
  void flush_library_watch();
  // Once a second while NCCL communicators are known: stalls to the log and the writer.
  void check_nccl_stalls();
  // GPU metric samples taken since the last poll, to the current writer.
  void flush_gpu_samples();
  // Process origin (cgroup, container) read while the process is surely
  // alive: at start for every process, then at its first record, so the
  // writer (up to a batch later) has it even for short-lived processes.
  void prime_origins();
  void note_origin(const Event& ev);
  std::optional<ProcessOrigin> take_origin(uint32_t tgid);

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<CaptureWriter> writer_;
  Decoder decoder_;
  std::unique_ptr<StackResolver> stacks_;
  uint32_t stack_depth_ = 0;  // --stack-depth: 0 reads no mappings
  // Python processes (issue 18): each process is looked at once (when it
  // maps a GPU library, or at its first record), again after an exec.
  void check_python(uint32_t tgid);
  bool python_on_ = false;
  std::unordered_set<uint32_t> py_checked_;
  std::unordered_map<uint32_t, int> py_unreadable_tries_;
  uint32_t py_last_tgid_ = 0;  // the last record's process, known to be looked at
  uint64_t py_interpreters_ = 0, py_unknown_version_ = 0, py_unreadable_ = 0;
  uint64_t definitions_lost_seen_ = 0;
  // The consumer's per-event state, reused: events waiting for hand_over()
  // (stack definitions among them, in order) and the record's raw stack.
  std::vector<CaptureWriter::Queued> out_;
  RawStack raw_;
  std::vector<ProbeResult> probes_;
  std::string output_;
  // Segments: what every new file repeats.
  CaptureMeta meta_;
  std::vector<ProbeRow> probe_rows_;
  uint64_t gpu_tracepoints_missing_ = 0;  // GPU job tracepoints not attached (missing on this kernel, failed)
  // record: the processes of the recorded tree, for the fdinfo scanner
  // (its thread reads it; shared so that it outlives neither).
  struct PidSet {
    mutable std::mutex mu;
    std::unordered_set<uint32_t> pids;
    void add(uint32_t p) {
      std::lock_guard lk(mu);
      pids.insert(p);
    }
    void remove(uint32_t p) {
      std::lock_guard lk(mu);
      pids.erase(p);
    }
    bool contains(uint32_t p) const {
      std::lock_guard lk(mu);
      return pids.count(p) != 0;
    }
  };
  std::shared_ptr<PidSet> drm_pids_ = std::make_shared<PidSet>();
  mutable std::mutex ring_jobs_mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> ring_jobs_;  // guarded by ring_jobs_mu_
  std::vector<DeviceMatch> devices_;
  std::function<void(const Event&)> observer_;
  std::chrono::milliseconds drain_budget_ = std::chrono::hours(24);
  uint64_t records_ = 0;
  uint64_t record_bytes_ = 0;                       // their sizes as the ring gave them
  std::map<std::string, uint64_t> extra_counters_;  // set_counter()
  uint64_t failed_batches_finished_ = 0;            // of the files rotated away from
  uint64_t backlog_dropped_before_ = 0;             // writers of earlier segments
  // The counters go to the writer this often (it stores them with its batches).
  std::chrono::steady_clock::time_point counters_pushed_{};
  bool priority_raised_ = false;  // poll() raised its thread's priority (common/thread_priority.h)
  // Library watch. Its rows wait in the outbox for the polling thread.
  std::mutex watch_out_mu_;
  std::vector<ProbeRow> watch_rows_;
  std::vector<std::tuple<uint64_t, uint64_t, int64_t>> watch_detached_;  // dev, inode, mono ns
  std::vector<LibraryMapRow> watch_maps_;
  // Coverage of the current segment (its capture.state) and in all.
  uint64_t coverage_misses_segment_ = 0, coverage_misses_total_ = 0;
  std::string first_coverage_miss_segment_, first_coverage_miss_;
  uint64_t dropped_before_segment_ = 0;  // dropped() when the segment started
  uint64_t attach_failures_before_segment_ = 0;
  std::unordered_set<uint32_t> gpu_ioctl_seen_;  // tgids whose first GPU ioctl was seen
  std::mutex origin_mu_;
  std::unordered_map<uint32_t, ProcessOrigin> origins_;  // guarded by origin_mu_
  std::unordered_set<uint32_t> origin_seen_;             // polling thread only
  uint32_t last_origin_tgid_ = 0;                        // the last tgid note_origin() saw (its set skipped)
  bool watch_host_wide_ = true;
  // NCCL stall watch (fed on the polling thread, checked once a second).
  std::unique_ptr<NcclWatch> nccl_watch_;
  std::chrono::steady_clock::time_point nccl_checked_{};
  // GPU metrics: the sampler thread and the batch its samples move through.
  std::unique_ptr<gpumetrics::MetricsSampler> sampler_;
  gpumetrics::SampleBatch gpu_batch_;
  // Last member: stopped and destroyed before the engine it uses.
  std::unique_ptr<LibraryWatch> watch_;
};

std::string shell_quote(const std::vector<std::string>& argv);

}  // namespace gpuobs
