// What gpuobsd knows about itself, sampled once a second by the main loop.
// One snapshot feeds the status file (`gpuobs status`), the systemd STATUS=
// line and the optional Prometheus endpoint, so the three always agree.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpuobs {

struct ProcessHealth {
  uint32_t tgid = 0;
  std::string comm;
  std::string container_id;       // empty: not in a container
  uint64_t launches = 0;          // kernel launches stored
  uint64_t bytes_copied = 0;      // copies and memsets, bytes
  int64_t device_bytes_live = 0;  // device memory allocated and not freed (API layer)
};

struct LibraryHealth {
  std::string path;  // as attached (may be /proc/PID/root/...)
  uint64_t dev = 0, inode = 0;
  int probes_attached = 0, probes_failed = 0;
};

// A GPU the metrics sampler watches, with its latest values (issue 19).
struct GpuHealth {
  std::string uuid, name;
  std::vector<std::pair<std::string, double>> metrics;  // metric name -> latest value
};

// A process's use of one GPU engine, as its DRM clients report it in
// /proc/PID/fdinfo (issue 39): cumulative, summed over its DRM files.
struct DrmEngineHealth {
  uint32_t tgid = 0;
  std::string comm;
  std::string driver, engine;
  bool has_busy = false, has_cycles = false;
  uint64_t busy_ns = 0;  // drm-engine-<engine>
  uint64_t cycles = 0;   // drm-cycles-<engine>
};

// GPU jobs the kernel's scheduler queued on one ring since gpuobsd started.
struct GpuRingHealth {
  std::string device, ring;
  uint64_t jobs = 0;
};

struct HealthSnapshot {
  std::string version;
  uint32_t pid = 0;
  int64_t started_unix_s = 0;
  int64_t sampled_unix_s = 0;
  uint64_t events_total = 0;     // records consumed from the ring
  double events_per_s = 0;       // over the last sample interval
  uint64_t drops_total = 0;      // every BPF drop counter summed
  uint64_t store_failed = 0;     // rows the writer could not store (disk full, I/O)
  uint64_t attach_failures = 0;  // probes or libraries that failed to attach
  // Issue 37: the current segment's capture.state as it would be written
  // now ("complete" or "incomplete (...)"), library mappings after which a
  // process could call its library unseen (since start), and the holds.
  std::string capture_state;
  uint64_t calls_before_attach = 0;
  std::string first_miss;
  uint64_t library_holds = 0, library_hold_timeouts = 0;
  double library_hold_max_ms = 0;
  std::vector<LibraryHealth> libraries;
  std::vector<ProcessHealth> processes;  // GPU processes seen in the current segment
  std::string segment_path;              // the capture being written
  uint64_t segment_bytes = 0;            // its size on disk (db + wal)
  uint64_t segments = 0;                 // segments kept on disk
  uint64_t storage_bytes = 0;            // all kept segments
  // Failure modes of issue 15, counted since the daemon started (0 in a
  // status file written by an older gpuobsd).
  uint64_t emergency_deletions = 0;          // segments deleted because the disk was full
  uint64_t nccl_stalls = 0;                  // collective stalls found (capture/nccl_watch.h)
  uint64_t store_failed_batches = 0;         // batches rolled back (their rows are in store_failed)
  uint64_t metrics_connections = 0;          // metrics connections open now
  uint64_t metrics_connections_refused = 0;  // over the cap or short of fds: 503 and closed
  uint64_t metrics_accept_backoffs = 0;      // failed accepts (EMFILE, ...) waited out
  // GPU metrics (issue 19): what the sampler watches, or why nothing.
  std::vector<GpuHealth> gpus;
  std::string gpu_metrics;  // "2 GPUs (nvml), 10 Hz" / "off" / "none: ..."
  uint64_t gpu_metric_query_errors = 0;
  // Issue 39: DRM clients' engine use and GPU scheduler jobs per ring.
  std::vector<DrmEngineHealth> drm_engines;
  std::vector<GpuRingHealth> gpu_rings;
  // The rolling comparison (issue 21; diff_baseline): '' baseline when off.
  std::string diff_baseline;
  uint64_t diff_comparisons = 0, diff_errors = 0;
  uint64_t diff_regressed = 0;  // series regressed in the last comparison
  uint64_t diff_new_kernels = 0;
  double diff_worst_ratio = 1;  // largest new/base ratio among them (1: none)
  std::string diff_last_error;
  // Shipping to ClickHouse (issue 23; ship_url): '' url when off.
  std::string ship_url;
  uint64_t ship_segments = 0, ship_rows = 0, ship_failures = 0;
  uint64_t ship_backlog_segments = 0, ship_backlog_bytes = 0;
  uint64_t unshipped_deleted = 0;  // segments deleted unshipped: the disk was full
  uint64_t ship_unshippable = 0;   // segments that are no readable capture: passed over
  int64_t ship_last_success_unix_s = 0;
  std::string ship_last_error;
};

}  // namespace gpuobs
