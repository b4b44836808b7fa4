#include "daemon_state/health_json.h"

namespace gpuobs {

nlohmann::json to_json(const HealthSnapshot& h) {
  nlohmann::json libs = nlohmann::json::array(), procs = nlohmann::json::array();
  for (const auto& l : h.libraries)
    libs.push_back({{"path", l.path},
                    {"dev", l.dev},
                    {"inode", l.inode},
                    {"probes_attached", l.probes_attached},
                    {"probes_failed", l.probes_failed}});
  for (const auto& p : h.processes)
    procs.push_back({{"tgid", p.tgid},
                     {"comm", p.comm},
                     {"container_id", p.container_id},
                     {"launches", p.launches},
                     {"bytes_copied", p.bytes_copied},
                     {"device_bytes_live", p.device_bytes_live}});
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : h.gpus) {
    nlohmann::json m = nlohmann::json::object();
    for (const auto& [name, v] : g.metrics) m[name] = v;
    gpus.push_back({{"uuid", g.uuid}, {"name", g.name}, {"metrics", m}});
  }
  return {{"version", h.version},
          {"pid", h.pid},
          {"started_unix_s", h.started_unix_s},
          {"sampled_unix_s", h.sampled_unix_s},
          {"events_total", h.events_total},
          {"events_per_s", h.events_per_s},
          {"drops_total", h.drops_total},
          {"store_failed", h.store_failed},
          {"attach_failures", h.attach_failures},
          {"capture_state", h.capture_state},
          {"calls_before_attach", h.calls_before_attach},
          {"first_miss", h.first_miss},
          {"library_holds", h.library_holds},
          {"library_hold_timeouts", h.library_hold_timeouts},
          {"library_hold_max_ms", h.library_hold_max_ms},
          {"libraries", libs},
          {"processes", procs},
          {"segment_path", h.segment_path},
          {"segment_bytes", h.segment_bytes},
          {"segments", h.segments},
          {"storage_bytes", h.storage_bytes},
          {"emergency_deletions", h.emergency_deletions},
          {"nccl_stalls", h.nccl_stalls},
          {"store_failed_batches", h.store_failed_batches},
          {"metrics_connections", h.metrics_connections},
          {"metrics_connections_refused", h.metrics_connections_refused},
          {"metrics_accept_backoffs", h.metrics_accept_backoffs},
          {"gpus", gpus},
          {"gpu_metrics", h.gpu_metrics},
          {"gpu_metric_query_errors", h.gpu_metric_query_errors},
          {"diff",
           {{"baseline", h.diff_baseline},
            {"comparisons", h.diff_comparisons},
            {"errors", h.diff_errors},
            {"regressed", h.diff_regressed},
            {"new_kernels", h.diff_new_kernels},
            {"worst_ratio", h.diff_worst_ratio},
            {"last_error", h.diff_last_error}}},
          {"ship",
           {{"url", h.ship_url},
            {"segments", h.ship_segments},
            {"rows", h.ship_rows},
            {"failures", h.ship_failures},
            {"backlog_segments", h.ship_backlog_segments},
            {"backlog_bytes", h.ship_backlog_bytes},
            {"unshipped_deleted", h.unshipped_deleted},
            {"unshippable", h.ship_unshippable},
            {"last_success_unix_s", h.ship_last_success_unix_s},
            {"last_error", h.ship_last_error}}}};
}

Result<HealthSnapshot> health_from_json(const nlohmann::json& j) {
  try {
    HealthSnapshot h;
    h.version = j.at("version").get<std::string>();
    h.pid = j.at("pid").get<uint32_t>();
    h.started_unix_s = j.at("started_unix_s").get<int64_t>();
    h.sampled_unix_s = j.at("sampled_unix_s").get<int64_t>();
    h.events_total = j.at("events_total").get<uint64_t>();
    h.events_per_s = j.at("events_per_s").get<double>();
    h.drops_total = j.at("drops_total").get<uint64_t>();
    h.store_failed = j.at("store_failed").get<uint64_t>();
    h.attach_failures = j.at("attach_failures").get<uint64_t>();
    for (const auto& l : j.at("libraries"))
      h.libraries.push_back(LibraryHealth{l.at("path").get<std::string>(), l.at("dev").get<uint64_t>(),
                                          l.at("inode").get<uint64_t>(), l.at("probes_attached").get<int>(),
                                          l.at("probes_failed").get<int>()});
    for (const auto& p : j.at("processes"))
      h.processes.push_back(ProcessHealth{p.at("tgid").get<uint32_t>(), p.at("comm").get<std::string>(),
                                          p.at("container_id").get<std::string>(), p.at("launches").get<uint64_t>(),
                                          p.at("bytes_copied").get<uint64_t>(),
                                          p.at("device_bytes_live").get<int64_t>()});
    h.segment_path = j.at("segment_path").get<std::string>();
    h.segment_bytes = j.at("segment_bytes").get<uint64_t>();
    h.segments = j.at("segments").get<uint64_t>();
    h.storage_bytes = j.at("storage_bytes").get<uint64_t>();
    // Added in issue 37: absent from an older gpuobsd's file.
    h.capture_state = j.value("capture_state", std::string());
    h.calls_before_attach = j.value("calls_before_attach", uint64_t{0});
    h.first_miss = j.value("first_miss", std::string());
    h.library_holds = j.value("library_holds", uint64_t{0});
    h.library_hold_timeouts = j.value("library_hold_timeouts", uint64_t{0});
    h.library_hold_max_ms = j.value("library_hold_max_ms", 0.0);
    // Added in issue 15: absent from an older gpuobsd's file.
    h.emergency_deletions = j.value("emergency_deletions", uint64_t{0});
    h.nccl_stalls = j.value("nccl_stalls", uint64_t{0});
    h.store_failed_batches = j.value("store_failed_batches", uint64_t{0});
    h.metrics_connections = j.value("metrics_connections", uint64_t{0});
    h.metrics_connections_refused = j.value("metrics_connections_refused", uint64_t{0});
    h.metrics_accept_backoffs = j.value("metrics_accept_backoffs", uint64_t{0});
    // Added in issue 19.
    if (j.contains("gpus"))
      for (const auto& g : j.at("gpus")) {
        GpuHealth gh{g.at("uuid").get<std::string>(), g.at("name").get<std::string>(), {}};
        for (const auto& [k, v] : g.at("metrics").items()) gh.metrics.emplace_back(k, v.get<double>());
        h.gpus.push_back(std::move(gh));
      }
    h.gpu_metrics = j.value("gpu_metrics", std::string());
    h.gpu_metric_query_errors = j.value("gpu_metric_query_errors", uint64_t{0});
    // Added in issue 21.
    if (j.contains("diff")) {
      const auto& d = j.at("diff");
      h.diff_baseline = d.value("baseline", std::string());
      h.diff_comparisons = d.value("comparisons", uint64_t{0});
      h.diff_errors = d.value("errors", uint64_t{0});
      h.diff_regressed = d.value("regressed", uint64_t{0});
      h.diff_new_kernels = d.value("new_kernels", uint64_t{0});
      h.diff_worst_ratio = d.value("worst_ratio", 1.0);
      h.diff_last_error = d.value("last_error", std::string());
    }
    if (j.contains("ship")) {
      const auto& d = j.at("ship");
      h.ship_url = d.value("url", std::string());
      h.ship_segments = d.value("segments", uint64_t{0});
      h.ship_rows = d.value("rows", uint64_t{0});
      h.ship_failures = d.value("failures", uint64_t{0});
      h.ship_backlog_segments = d.value("backlog_segments", uint64_t{0});
      h.ship_backlog_bytes = d.value("backlog_bytes", uint64_t{0});
      h.unshipped_deleted = d.value("unshipped_deleted", uint64_t{0});
      h.ship_unshippable = d.value("unshippable", uint64_t{0});
      h.ship_last_success_unix_s = d.value("last_success_unix_s", int64_t{0});
      h.ship_last_error = d.value("last_error", std::string());
    }
    return h;
  } catch (const nlohmann::json::exception& e) {
    return make_error(std::string("malformed status file: ") + e.what(), "", 2);
  }
}

}  // namespace gpuobs
