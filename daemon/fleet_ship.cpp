#include "daemon/fleet_ship.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "daemon_state/segments.h"
#include "fleet/shipper.h"

namespace gpuobs::daemon {
namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string shipped_marker(const std::string& segment_path) { return segment_path + ".shipped"; }

bool is_marked_shipped(const std::string& segment_path) {
  return ::access(shipped_marker(segment_path).c_str(), F_OK) == 0;
}

void FleetShip::start() {
  count_backlog();
  thread_ = std::thread([this] { run(); });
}

void FleetShip::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FleetShip::set_current(const std::string& path) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    current_ = path;
    woken_ = true;
  }
  cv_.notify_all();
}

ShipState FleetShip::state() const {
  std::lock_guard<std::mutex> lk(mu_);
  return state_;
}

void FleetShip::count_backlog() {
  std::string cur;
  {
    std::lock_guard<std::mutex> lk(mu_);
    cur = current_;
  }
  uint64_t n = 0, bytes = 0;
  for (const auto& s : segments::list(state_dir_)) {
    if (std::filesystem::path(s.path).filename() == std::filesystem::path(cur).filename()) continue;
    if (is_marked_shipped(s.path)) continue;
    ++n;
    bytes += s.bytes;
  }
  std::lock_guard<std::mutex> lk(mu_);
  state_.backlog_segments = n;
  state_.backlog_bytes = bytes;
}

bool FleetShip::ship_once() {
  std::string cur;
  {
    std::lock_guard<std::mutex> lk(mu_);
    cur = current_;
  }
  bool ok = true;
  for (const auto& s : segments::list(state_dir_)) {  // oldest first
    if (std::filesystem::path(s.path).filename() == std::filesystem::path(cur).filename()) continue;
    if (is_marked_shipped(s.path)) continue;
    fleet::ShipOptions opt;
    opt.keep_going = [this] {
      std::lock_guard<std::mutex> lk(mu_);
      return !stopping_;
    };
    auto st = fleet::ship_capture(ch_, s.path, opt);
    if (!st) {
      std::lock_guard<std::mutex> lk(mu_);
      ++state_.failures;
      if (state_.last_error != st.error().message)
        spdlog::warn("cannot ship segment {} to {}: {}", s.path, state_.url, st.error().message);
      state_.last_error = st.error().message;
      ok = false;
      break;
    }
    int fd = ::open(shipped_marker(s.path).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (fd >= 0) ::close(fd);
    spdlog::info("segment {} shipped to {}: {} rows", s.path, state_.url, st->rows_sent);
    std::lock_guard<std::mutex> lk(mu_);
    ++state_.shipped_segments;
    state_.shipped_rows += st->rows_sent;
    state_.shipped_bytes += st->bytes_sent;
    state_.last_error.clear();
    state_.last_success_unix_s = unix_now();
  }
  count_backlog();
  return ok;
}

void FleetShip::run() {
  std::chrono::seconds backoff(1);
  for (;;) {
    bool ok = ship_once();
    auto wait = ok ? interval_ : backoff;
    backoff = ok ? std::chrono::seconds(1) : std::min(backoff * 2, std::chrono::seconds(300));
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, wait, [this] { return stopping_ || woken_; });
    woken_ = false;
    if (stopping_) return;
  }
}

}  // namespace gpuobs::daemon
