#include "common/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/terminal_text.h"

namespace gpuobs {
namespace {

std::chrono::milliseconds progress_delay() {
  if (const char* v = std::getenv("GPUOBS_PROGRESS_AFTER_MS"); v && *v) return std::chrono::milliseconds(std::atol(v));
  return std::chrono::milliseconds(1000);
}

}  // namespace

bool Progress::enabled() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDERR_FILENO) && !(term && std::strcmp(term, "dumb") == 0);
}

Progress::Progress(std::string label, std::function<uint64_t()> count, std::string unit)
    : label_(terminal_safe(label)), unit_(std::move(unit)), count_(std::move(count)) {
  if (!enabled()) return;
  auto after = progress_delay();
  if (after.count() <= 0) draw();  // at once: nothing can end before the first line
  thread_ = std::thread([this, after] { run(after); });
}

Progress::~Progress() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (drawn_) std::fputs("\r\033[K", stderr);  // erase the line: what follows starts clean
  std::fflush(stderr);
}

void Progress::run(std::chrono::milliseconds after) {
  std::unique_lock lk(mu_);
  if (cv_.wait_for(lk, after, [this] { return stop_; })) return;
  while (!stop_) {
    draw();
    cv_.wait_for(lk, std::chrono::milliseconds(250), [this] { return stop_; });
  }
}

void Progress::draw() {
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char line[256];
  int n = std::snprintf(line, sizeof line, "\r\033[K%s: %.1f s", label_.c_str(), s);
  if (count_ && n > 0 && static_cast<size_t>(n) < sizeof line) {
    uint64_t done = count_();
    std::snprintf(line + n, sizeof line - static_cast<size_t>(n), ", %llu %s (%.0f/s)",
                  static_cast<unsigned long long>(done), unit_.c_str(), s > 0 ? static_cast<double>(done) / s : 0.0);
  }
  std::fputs(line, stderr);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace gpuobs
