// Logging: spdlog to stderr; libbpf's messages routed through it untruncated.
#pragma once

#include <bpf/libbpf.h>
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
// The level a libbpf message is logged at: its warnings as warnings, except
// a rejected program's verifier log, which goes to debug (issue 20).
spdlog::level::level_enum libbpf_message_level(enum libbpf_print_level level, std::string_view msg);
// Print an Error as the CLI shows it: "gpuobs: error: ..." and "hint: ...".
void print_error(std::string_view program, const Error& err);

}  // namespace gpuobs
