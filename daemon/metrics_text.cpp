// Prometheus text exposition format 0.0.4 for gpuobsd's health snapshot.
// Counters end in _total and only grow for one daemon run; gauges are the
// value at the sample. Per-process series carry pid, comm and container
// (empty outside a container) so a scrape can be joined with `gpuobs report`.
#include "metrics_text.h"

#include <fmt/format.h>

#include <iterator>

namespace gpuobs {

std::string escape_label_value(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

namespace {

void family(std::string& out, const char* name, const char* type, const char* help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

template <class V>
void sample(std::string& out, const char* name, V value) {
  fmt::format_to(std::back_inserter(out), "{} {}\n", name, value);
}

std::string process_labels(const ProcessHealth& p) {
  return fmt::format("pid=\"{}\",comm=\"{}\",container=\"{}\"", p.tgid, escape_label_value(p.comm),
                     escape_label_value(p.container_id));
}

}  // namespace

std::string render_prometheus(const HealthSnapshot& s) {
  std::string out;
  family(out, "gpuobs_build_info", "gauge", "Always 1; the version label is gpuobsd's version.");
  fmt::format_to(std::back_inserter(out), "gpuobs_build_info{{version=\"{}\"}} 1\n", escape_label_value(s.version));
  family(out, "gpuobs_events_total", "counter", "Records consumed from the BPF ring buffer.");
  sample(out, "gpuobs_events_total", s.events_total);
  family(out, "gpuobs_events_per_second", "gauge", "Records consumed per second over the last sample interval.");
  sample(out, "gpuobs_events_per_second", s.events_per_s);
  family(out, "gpuobs_drops_total", "counter",
         "Events lost in BPF (ring full, failed reads), all drop counters summed.");
  sample(out, "gpuobs_drops_total", s.drops_total);
  family(out, "gpuobs_store_failed_total", "counter", "Rows the writer could not store (disk full, I/O errors).");
  sample(out, "gpuobs_store_failed_total", s.store_failed);
  family(out, "gpuobs_attach_failures_total", "counter", "Probes or libraries that failed to attach.");
  sample(out, "gpuobs_attach_failures_total", s.attach_failures);
  family(out, "gpuobs_calls_before_attach_total", "counter",
         "GPU library mappings after which a process could call the library before its probes were live "
         "(gpuobs report coverage); any makes the segment incomplete.");
  sample(out, "gpuobs_calls_before_attach_total", s.calls_before_attach);
  family(out, "gpuobs_library_holds_total", "counter",
         "Processes stopped at their first mapping of a GPU library until its probes were made.");
  sample(out, "gpuobs_library_holds_total", s.library_holds);
  family(out, "gpuobs_library_hold_timeouts_total", "counter",
         "Holds ended by library_hold before the probes were made.");
  sample(out, "gpuobs_library_hold_timeouts_total", s.library_hold_timeouts);
  family(out, "gpuobs_store_failed_batches_total", "counter",
         "Writer batches rolled back (disk full, I/O errors); their rows count in gpuobs_store_failed_total.");
  sample(out, "gpuobs_store_failed_batches_total", s.store_failed_batches);
  family(out, "gpuobs_emergency_deletions_total", "counter",
         "Segments deleted, oldest first, because the state directory's disk was full.");
  sample(out, "gpuobs_emergency_deletions_total", s.emergency_deletions);
  family(out, "gpuobs_nccl_stalls_total", "counter",
         "NCCL/RCCL collectives found stalled: entered by some ranks of a communicator and not by others, or not "
         "returned from, for longer than nccl_stall seconds (gpuobs report nccl_stalls).");
  sample(out, "gpuobs_nccl_stalls_total", s.nccl_stalls);
  family(out, "gpuobs_metrics_connections", "gauge", "Connections to this endpoint open now.");
  sample(out, "gpuobs_metrics_connections", s.metrics_connections);
  family(out, "gpuobs_metrics_connections_refused_total", "counter",
         "Connections to this endpoint answered 503 and closed: over metrics_max_connections or short of fds.");
  sample(out, "gpuobs_metrics_connections_refused_total", s.metrics_connections_refused);
  family(out, "gpuobs_metrics_accept_backoffs_total", "counter",
         "Failed accepts on this endpoint (EMFILE, ENFILE, ...), each followed by a pause before the next try.");
  sample(out, "gpuobs_metrics_accept_backoffs_total", s.metrics_accept_backoffs);

  uint64_t attached = 0;
  for (const auto& l : s.libraries) attached += l.probes_attached > 0 ? 1 : 0;
  family(out, "gpuobs_attached_libraries", "gauge",
         "GPU library files (device, inode) with at least one probe attached.");
  sample(out, "gpuobs_attached_libraries", attached);
  family(out, "gpuobs_gpu_processes", "gauge",
         "GPU processes in gpuobsd's health snapshot (live processes with GPU activity).");
  sample(out, "gpuobs_gpu_processes", s.processes.size());

  family(out, "gpuobs_process_launches_total", "counter", "Kernel launches stored, per process.");
  for (const auto& p : s.processes)
    fmt::format_to(std::back_inserter(out), "gpuobs_process_launches_total{{{}}} {}\n", process_labels(p), p.launches);
  family(out, "gpuobs_process_bytes_copied_total", "counter",
         "Bytes copied or set by memcpy/memset calls, per process.");
  for (const auto& p : s.processes)
    fmt::format_to(std::back_inserter(out), "gpuobs_process_bytes_copied_total{{{}}} {}\n", process_labels(p),
                   p.bytes_copied);
  family(out, "gpuobs_process_device_memory_bytes", "gauge",
         "Device memory allocated through the GPU API and not freed, per process.");
  for (const auto& p : s.processes)
    fmt::format_to(std::back_inserter(out), "gpuobs_process_device_memory_bytes{{{}}} {}\n", process_labels(p),
                   p.device_bytes_live);

  // GPU metrics (issue 19): one series per GPU and metric; labels bounded by
  // the GPUs of the host and the metric catalogue (gpu_metrics/metric_catalogue.cpp).
  family(out, "gpuobs_gpu_info", "gauge", "Always 1 for each GPU the metrics sampler watches; labels name it.");
  for (const auto& g : s.gpus)
    fmt::format_to(std::back_inserter(out), "gpuobs_gpu_info{{gpu=\"{}\",name=\"{}\"}} 1\n", escape_label_value(g.uuid),
                   escape_label_value(g.name));
  family(out, "gpuobs_gpu_metric", "gauge",
         "The latest sampled value of a GPU metric (metric label: name as in gpuobs report gpu_sum, unit in its "
         "suffix; clocks_event_reasons is NVML's throttle reason bit set).");
  for (const auto& g : s.gpus)
    for (const auto& [name, v] : g.metrics)
      fmt::format_to(std::back_inserter(out), "gpuobs_gpu_metric{{gpu=\"{}\",metric=\"{}\"}} {}\n",
                     escape_label_value(g.uuid), escape_label_value(name), v);
  // Issue 39: per process and engine, from the DRM clients' fdinfo
  // (labels bounded by the processes holding DRM files and their driver's
  // engine names), and GPU scheduler jobs per ring.
  family(out, "gpuobs_drm_engine_busy_seconds_total", "counter",
         "Time a process's work kept a GPU engine busy, as its DRM files report it in /proc/PID/fdinfo "
         "(drm-engine-<engine>), summed over its DRM files.");
  for (const auto& e : s.drm_engines)
    if (e.has_busy)
      fmt::format_to(
          std::back_inserter(out),
          "gpuobs_drm_engine_busy_seconds_total{{pid=\"{}\",process=\"{}\",driver=\"{}\",engine=\"{}\"}} {}\n", e.tgid,
          escape_label_value(e.comm), escape_label_value(e.driver), escape_label_value(e.engine),
          static_cast<double>(e.busy_ns) / 1e9);
  family(out, "gpuobs_drm_engine_cycles_total", "counter",
         "GPU cycles a process's work used on an engine (drm-cycles-<engine>: drivers that count cycles, xe).");
  for (const auto& e : s.drm_engines)
    if (e.has_cycles)
      fmt::format_to(std::back_inserter(out),
                     "gpuobs_drm_engine_cycles_total{{pid=\"{}\",process=\"{}\",driver=\"{}\",engine=\"{}\"}} {}\n",
                     e.tgid, escape_label_value(e.comm), escape_label_value(e.driver), escape_label_value(e.engine),
                     e.cycles);
  family(out, "gpuobs_gpu_ring_jobs_total", "counter",
         "GPU jobs the kernel's DRM GPU scheduler queued on a ring (drm_sched_job_queue) since gpuobsd started.");
  for (const auto& r : s.gpu_rings)
    fmt::format_to(std::back_inserter(out), "gpuobs_gpu_ring_jobs_total{{device=\"{}\",ring=\"{}\"}} {}\n",
                   escape_label_value(r.device), escape_label_value(r.ring), r.jobs);
  if (!s.diff_baseline.empty()) {
    family(out, "gpuobs_diff_regressed_series", "gauge",
           "Series (kernel, API, stream, stack) regressed in the last comparison of the current segment with "
           "diff_baseline (gpuobs diff's test and thresholds).");
    sample(out, "gpuobs_diff_regressed_series", s.diff_regressed);
    family(out, "gpuobs_diff_worst_regression_ratio", "gauge",
           "The largest new/base ratio among those series (1: none regressed).");
    sample(out, "gpuobs_diff_worst_regression_ratio", s.diff_worst_ratio);
    family(out, "gpuobs_diff_new_kernels", "gauge", "Kernels of the compared window that the baseline never launched.");
    sample(out, "gpuobs_diff_new_kernels", s.diff_new_kernels);
    family(out, "gpuobs_diff_comparisons_total", "counter", "Comparisons with diff_baseline made.");
    sample(out, "gpuobs_diff_comparisons_total", s.diff_comparisons);
    family(out, "gpuobs_diff_errors_total", "counter", "Comparisons that could not be made (gpuobs status says why).");
    sample(out, "gpuobs_diff_errors_total", s.diff_errors);
  }
  if (!s.ship_url.empty()) {
    family(out, "gpuobs_ship_backlog_segments", "gauge",
           "Finished segments not shipped to ClickHouse yet (ship_url); retention keeps them.");
    sample(out, "gpuobs_ship_backlog_segments", s.ship_backlog_segments);
    family(out, "gpuobs_ship_backlog_bytes", "gauge", "Size on disk of those segments.");
    sample(out, "gpuobs_ship_backlog_bytes", s.ship_backlog_bytes);
    family(out, "gpuobs_ship_segments_total", "counter", "Segments shipped to ClickHouse since gpuobsd started.");
    sample(out, "gpuobs_ship_segments_total", s.ship_segments);
    family(out, "gpuobs_ship_rows_total", "counter", "Rows shipped to ClickHouse since gpuobsd started.");
    sample(out, "gpuobs_ship_rows_total", s.ship_rows);
    family(out, "gpuobs_ship_failures_total", "counter",
           "Shipping attempts that failed (gpuobs status shows the last error); each retried with backoff.");
    sample(out, "gpuobs_ship_failures_total", s.ship_failures);
    family(out, "gpuobs_ship_last_success_timestamp_seconds", "gauge",
           "When a segment was last shipped (Unix time; 0: none since gpuobsd started).");
    sample(out, "gpuobs_ship_last_success_timestamp_seconds", s.ship_last_success_unix_s);
    family(out, "gpuobs_ship_unshippable_total", "counter",
           "Segments that are not readable captures (cut short by a full disk, ...): passed over, not shipped.");
    sample(out, "gpuobs_ship_unshippable_total", s.ship_unshippable);
    family(out, "gpuobs_unshipped_deleted_total", "counter",
           "Segments deleted before they were shipped: the disk was full (emergency deletion).");
    sample(out, "gpuobs_unshipped_deleted_total", s.unshipped_deleted);
  }
  family(out, "gpuobs_gpu_metric_query_errors_total", "counter",
         "GPU metric queries that failed (NVML errors other than not supported, unreadable sysfs files).");
  sample(out, "gpuobs_gpu_metric_query_errors_total", s.gpu_metric_query_errors);

  family(out, "gpuobs_segment_bytes", "gauge", "Size on disk of the capture segment being written (database and WAL).");
  sample(out, "gpuobs_segment_bytes", s.segment_bytes);
  family(out, "gpuobs_segments", "gauge", "Capture segments kept on disk.");
  sample(out, "gpuobs_segments", s.segments);
  family(out, "gpuobs_storage_bytes", "gauge", "Size on disk of all kept capture segments.");
  sample(out, "gpuobs_storage_bytes", s.storage_bytes);
  return out;
}

}  // namespace gpuobs
