// Logging: spdlog to stderr; libbpf's messages routed through it untruncated.
#pragma once

#include <string_view>

#include "common/result.h"

namespace gpuobs {

// level: "trace", "debug", "info", "warn", "error", "off".
void log_init(std::string_view level);
// Print an Error as the CLI shows it: "gpuobs: error: ..." and "hint: ...".
void print_error(std::string_view program, const Error& err);

}  // namespace gpuobs
