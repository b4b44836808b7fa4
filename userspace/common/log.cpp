#include "common/log.h"

#include <bpf/libbpf.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>
#include <string>

namespace gpuobs {
namespace {

// libbpf hands us printf-style messages; a verifier log can be many KiB, so
// format into a right-sized buffer instead of a fixed one.
int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return 0;
  std::string msg(static_cast<size_t>(n), '\0');
  std::vsnprintf(msg.data(), msg.size() + 1, fmt, args);
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  switch (level) {
    case LIBBPF_WARN: spdlog::warn("libbpf: {}", msg); break;
    case LIBBPF_INFO: spdlog::debug("libbpf: {}", msg); break;
    case LIBBPF_DEBUG: spdlog::trace("libbpf: {}", msg); break;
  }
  return n;
}

}  // namespace

void log_init(std::string_view level) {
  auto logger = spdlog::stderr_color_mt("gpuobs");
  logger->set_pattern("%^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(std::string(level)));
  libbpf_set_print(libbpf_print);
}

void print_error(std::string_view program, const Error& err) {
  std::fprintf(stderr, "%.*s: error: %s\n", static_cast<int>(program.size()), program.data(),
               err.message.c_str());
  if (!err.hint.empty()) std::fprintf(stderr, "hint: %s\n", err.hint.c_str());
}

}  // namespace gpuobs
