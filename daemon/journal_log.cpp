#include "daemon/journal_log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "common/log.h"

namespace gpuobs::daemon {
namespace {

// %* -> "<N>", the syslog priority of the message's level.
class PriorityFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    int prio = 6;
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug: prio = 7; break;
      case spdlog::level::info: prio = 6; break;
      case spdlog::level::warn: prio = 4; break;
      case spdlog::level::err: prio = 3; break;
      case spdlog::level::critical: prio = 2; break;
      default: break;
    }
    char buf[4] = {'<', static_cast<char>('0' + prio), '>', 0};
    dest.append(buf, buf + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<PriorityFlag>(); }
};

}  // namespace

bool stderr_is_journal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  if (!js || !*js) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  return ::fstat(2, &st) == 0 && static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

void log_init(std::string_view level) {
  gpuobs::log_init(level);
  auto f = make_safe_formatter();  // traced names in messages stay inert on a terminal
  if (stderr_is_journal()) f->add_flag<PriorityFlag>('*').set_pattern("%*%v");
  else f->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$: %v");
  spdlog::default_logger()->set_formatter(std::move(f));
}

}  // namespace gpuobs::daemon
