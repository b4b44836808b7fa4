// A HealthSnapshot written as Prometheus text exposition format 0.0.4: one
// HELP and one TYPE line per metric family, label values escaped (\\, \", \n).
// Kept apart from the HTTP server so it can be tested without a socket.
#pragma once

#include <string>

#include "daemon_state/health.h"

namespace gpuobs {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string render_prometheus(const HealthSnapshot& s);

// The label-value escaping of the format: backslash, double quote and line feed.
std::string escape_label_value(const std::string& v);

}  // namespace gpuobs
