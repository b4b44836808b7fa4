#include "common/log.h"

#include <bpf/libbpf.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/terminal_text.h"

namespace gpuobs {
namespace {

// %v with the message made terminal-safe. Messages carry traced names (comm,
// library paths): an embedded newline could forge a whole log line, so each
// line after the first is indented, and other controls are escaped. libbpf's
// multi-line verifier logs stay readable that way.
class SafeMessageFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string_view text(msg.payload.data(), msg.payload.size());
    for (size_t start = 0;;) {
      size_t nl = text.find('\n', start);
      std::string line = terminal_safe(text.substr(start, nl == std::string_view::npos ? nl : nl - start));
      if (start) dest.append(std::string_view("\n    "));
      dest.append(line.data(), line.data() + line.size());
      if (nl == std::string_view::npos) break;
      start = nl + 1;
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<SafeMessageFlag>(); }
};

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
  if (msg.starts_with("libbpf: ")) msg.erase(0, 8);  // libbpf names itself; so does our prefix
  spdlog::log(libbpf_message_level(level, msg), "libbpf: {}", msg);
  return n;
}

}  // namespace

spdlog::level::level_enum libbpf_message_level(enum libbpf_print_level level, std::string_view msg) {
  switch (level) {
    case LIBBPF_WARN:
      // The verifier's log of a rejected program (hundreds of lines) is for
      // whoever asked for it: the load error and its hint say -v debug.
      return msg.find("-- BEGIN PROG LOAD LOG --") != std::string_view::npos ? spdlog::level::debug
                                                                             : spdlog::level::warn;
    case LIBBPF_INFO: return spdlog::level::debug;
    case LIBBPF_DEBUG: return spdlog::level::trace;
  }
  return spdlog::level::trace;
}

void log_init(std::string_view level) {
  // Colour only on a terminal (the sink's automatic mode), and never with
  // NO_COLOR set to anything (https://no-color.org).
  const char* no_color = std::getenv("NO_COLOR");
  auto logger = spdlog::stderr_color_mt(
      "gpuobs", no_color && *no_color ? spdlog::color_mode::never : spdlog::color_mode::automatic);
  auto f = make_safe_formatter();
  f->set_pattern("%^%l%$: %v");
  logger->set_formatter(std::move(f));
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(std::string(level)));
  libbpf_set_print(libbpf_print);
}

std::unique_ptr<spdlog::pattern_formatter> make_safe_formatter() {
  auto f = std::make_unique<spdlog::pattern_formatter>();
  f->add_flag<SafeMessageFlag>('v');
  return f;
}

void print_error(std::string_view program, const Error& err) {
  std::fprintf(stderr, "%.*s: error: %s\n", static_cast<int>(program.size()), program.data(),
               terminal_safe(err.message).c_str());
  if (!err.hint.empty()) std::fprintf(stderr, "hint: %s\n", terminal_safe(err.hint).c_str());
}

}  // namespace gpuobs
