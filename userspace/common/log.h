// Logging: spdlog to stderr; libbpf's messages routed through it untruncated.
#pragma once

#include <spdlog/pattern_formatter.h>

#include <memory>
#include <string_view>

#include "common/result.h"

namespace gpuobs {

// level: "trace", "debug", "info", "warn", "error", "off".
void log_init(std::string_view level);
// A pattern formatter whose %v is the message made terminal-safe
// (common/terminal_text.h): every logger that can reach a terminal uses it.
std::unique_ptr<spdlog::pattern_formatter> make_safe_formatter();
// Print an Error as the CLI shows it: "gpuobs: error: ..." and "hint: ...".
void print_error(std::string_view program, const Error& err);

}  // namespace gpuobs
