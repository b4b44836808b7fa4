// Prometheus text exposition format 0.0.4 for gpuobsd's health snapshot.
// Counters end in _total and only grow for one daemon run; gauges are the
// value at the sample. Per-process series carry pid, comm and container
// (empty outside a container) so a scrape can be joined with `gpuobs report`.
#include "metrics_text.h"

#include <fmt/format.h>

#include <iterator>
#include <string>
#include <type_traits>
#include <variant>

#include "daemon_state/health_fields.h"

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
  // Every scalar field with a family, from the one list
  // (daemon_state/health_fields.cpp); diff and ship series only while on.
  for (const HealthField& f : health_fields()) {
    if (!f.metric) continue;
    if (f.when == HealthField::When::diff_on && s.diff_baseline.empty()) continue;
    if (f.when == HealthField::When::ship_on && s.ship_url.empty()) continue;
    family(out, f.metric, f.type, f.help);
    std::visit(
        [&](auto member) {
          if constexpr (!std::is_same_v<std::remove_cvref_t<decltype(s.*member)>, std::string>)
            sample(out, f.metric, s.*member);
        },
        f.member);
  }

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
  return out;
}

}  // namespace gpuobs
