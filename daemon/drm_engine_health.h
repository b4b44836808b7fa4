// The DRM clients' fdinfo samples (gpu_metrics/drm_fdinfo.h) summed per
// process and engine for gpuobsd's health snapshot and Prometheus text.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "daemon_state/health.h"
#include "gpu_metrics/drm_fdinfo.h"

namespace gpuobs {

// comm_of names a process (default: /proc/PID/comm); rows ordered by
// (pid, driver, engine).
std::vector<DrmEngineHealth> drm_engine_health(const std::vector<gpumetrics::DrmClientSample>& samples,
                                               const std::function<std::string(uint32_t)>& comm_of = {});

}  // namespace gpuobs
