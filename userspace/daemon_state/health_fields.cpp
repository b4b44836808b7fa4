#include "daemon_state/health_fields.h"

namespace gpuobs {
namespace {

using H = HealthSnapshot;
using W = HealthField::When;

// In the order the Prometheus text gives them. Issue numbers say when a
// field appeared (absent from an older gpuobsd's status file: its default).
// One field per line, so the list reads as a table (clang-format would split each entry).
// clang-format off
const HealthField kFields[] = {
    {"version", &H::version, nullptr, "", "gpuobsd's version (gpuobs_build_info's label)", W::always, true},
    {"pid", &H::pid, nullptr, "", "gpuobsd's pid", W::always, true},
    {"started_unix_s", &H::started_unix_s, nullptr, "", "when gpuobsd started (Unix time)", W::always, true},
    {"sampled_unix_s", &H::sampled_unix_s, nullptr, "", "when this snapshot was taken (Unix time)", W::always, true},
    {"events_total", &H::events_total, "gpuobs_events_total", "counter", "Records consumed from the BPF ring buffer.", W::always, true},
    {"events_per_s", &H::events_per_s, "gpuobs_events_per_second", "gauge", "Records consumed per second over the last sample interval.", W::always, true},
    {"drops_total", &H::drops_total, "gpuobs_drops_total", "counter", "Events lost in BPF (ring full, failed reads), all drop counters summed.", W::always, true},
    {"store_failed", &H::store_failed, "gpuobs_store_failed_total", "counter", "Rows the writer could not store (disk full, I/O errors).", W::always, true},
    {"attach_failures", &H::attach_failures, "gpuobs_attach_failures_total", "counter", "Probes or libraries that failed to attach.", W::always, true},
    // Issue 37: whether the segment saw every call.
    {"capture_state", &H::capture_state, nullptr, "", "the current segment's capture.state as it would be written now"},
    {"calls_before_attach", &H::calls_before_attach, "gpuobs_calls_before_attach_total", "counter", "GPU library mappings after which a process could call the library before its probes were live (gpuobs report coverage); any makes the segment incomplete."},
    {"first_miss", &H::first_miss, nullptr, "", "the first such mapping, said as gpuobs status says it"},
    {"library_holds", &H::library_holds, "gpuobs_library_holds_total", "counter", "Processes stopped at their first mapping of a GPU library until its probes were made."},
    {"library_hold_timeouts", &H::library_hold_timeouts, "gpuobs_library_hold_timeouts_total", "counter", "Holds ended by library_hold before the probes were made."},
    {"library_hold_max_ms", &H::library_hold_max_ms, nullptr, "", "the longest hold, in milliseconds"},
    {"segment_path", &H::segment_path, nullptr, "", "the capture being written", W::always, true},
    {"segment_bytes", &H::segment_bytes, "gpuobs_segment_bytes", "gauge", "Size on disk of the capture segment being written (database and WAL).", W::always, true},
    {"segments", &H::segments, "gpuobs_segments", "gauge", "Capture segments kept on disk.", W::always, true},
    {"storage_bytes", &H::storage_bytes, "gpuobs_storage_bytes", "gauge", "Size on disk of all kept capture segments.", W::always, true},
    // Issue 15: failure modes.
    {"store_failed_batches", &H::store_failed_batches, "gpuobs_store_failed_batches_total", "counter", "Writer batches rolled back (disk full, I/O errors); their rows count in gpuobs_store_failed_total."},
    {"emergency_deletions", &H::emergency_deletions, "gpuobs_emergency_deletions_total", "counter", "Segments deleted, oldest first, because the state directory's disk was full."},
    {"nccl_stalls", &H::nccl_stalls, "gpuobs_nccl_stalls_total", "counter", "NCCL/RCCL collectives found stalled: entered by some ranks of a communicator and not by others, or not returned from, for longer than nccl_stall seconds (gpuobs report nccl_stalls)."},
    {"metrics_connections", &H::metrics_connections, "gpuobs_metrics_connections", "gauge", "Connections to this endpoint open now."},
    {"metrics_connections_refused", &H::metrics_connections_refused, "gpuobs_metrics_connections_refused_total", "counter", "Connections to this endpoint answered 503 and closed: over metrics_max_connections or short of fds."},
    {"metrics_accept_backoffs", &H::metrics_accept_backoffs, "gpuobs_metrics_accept_backoffs_total", "counter", "Failed accepts on this endpoint (EMFILE, ENFILE, ...), each followed by a pause before the next try."},
    // Issue 19: GPU metrics.
    {"gpu_metrics", &H::gpu_metrics, nullptr, "", "what the metrics sampler watches, or why nothing"},
    {"gpu_metric_query_errors", &H::gpu_metric_query_errors, "gpuobs_gpu_metric_query_errors_total", "counter", "GPU metric queries that failed (NVML errors other than not supported, unreadable sysfs files)."},
    // Issue 21: the rolling comparison with diff_baseline.
    {"diff.baseline", &H::diff_baseline, nullptr, "", "diff_baseline, empty when off"},
    {"diff.regressed", &H::diff_regressed, "gpuobs_diff_regressed_series", "gauge", "Series (kernel, API, stream, stack) regressed in the last comparison of the current segment with diff_baseline (gpuobs diff's test and thresholds).", W::diff_on},
    {"diff.worst_ratio", &H::diff_worst_ratio, "gpuobs_diff_worst_regression_ratio", "gauge", "The largest new/base ratio among those series (1: none regressed).", W::diff_on},
    {"diff.new_kernels", &H::diff_new_kernels, "gpuobs_diff_new_kernels", "gauge", "Kernels of the compared window that the baseline never launched.", W::diff_on},
    {"diff.comparisons", &H::diff_comparisons, "gpuobs_diff_comparisons_total", "counter", "Comparisons with diff_baseline made.", W::diff_on},
    {"diff.errors", &H::diff_errors, "gpuobs_diff_errors_total", "counter", "Comparisons that could not be made (gpuobs status says why).", W::diff_on},
    {"diff.last_error", &H::diff_last_error, nullptr, "", "why the last comparison could not be made"},
    // Issue 23: shipping to ClickHouse.
    {"ship.url", &H::ship_url, nullptr, "", "ship_url, empty when off"},
    {"ship.backlog_segments", &H::ship_backlog_segments, "gpuobs_ship_backlog_segments", "gauge", "Finished segments not shipped to ClickHouse yet (ship_url); retention keeps them.", W::ship_on},
    {"ship.backlog_bytes", &H::ship_backlog_bytes, "gpuobs_ship_backlog_bytes", "gauge", "Size on disk of those segments.", W::ship_on},
    {"ship.segments", &H::ship_segments, "gpuobs_ship_segments_total", "counter", "Segments shipped to ClickHouse since gpuobsd started.", W::ship_on},
    {"ship.rows", &H::ship_rows, "gpuobs_ship_rows_total", "counter", "Rows shipped to ClickHouse since gpuobsd started.", W::ship_on},
    {"ship.failures", &H::ship_failures, "gpuobs_ship_failures_total", "counter", "Shipping attempts that failed (gpuobs status shows the last error); each retried with backoff.", W::ship_on},
    {"ship.last_success_unix_s", &H::ship_last_success_unix_s, "gpuobs_ship_last_success_timestamp_seconds", "gauge", "When a segment was last shipped (Unix time; 0: none since gpuobsd started).", W::ship_on},
    {"ship.unshippable", &H::ship_unshippable, "gpuobs_ship_unshippable_total", "counter", "Segments that are not readable captures (cut short by a full disk, ...): passed over, not shipped.", W::ship_on},
    {"ship.unshipped_deleted", &H::unshipped_deleted, "gpuobs_unshipped_deleted_total", "counter", "Segments deleted before they were shipped: the disk was full (emergency deletion).", W::ship_on},
    {"ship.last_error", &H::ship_last_error, nullptr, "", "the last shipping error"},
};
// clang-format on

}  // namespace

std::span<const HealthField> health_fields() { return kFields; }

}  // namespace gpuobs
