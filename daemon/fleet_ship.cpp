#include "daemon/fleet_ship.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

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

bool is_marked_shipped_to(const std::string& segment_path, const std::string& url) {
  std::ifstream in(shipped_marker(segment_path));
  std::string line;
  if (!std::getline(in, line)) return false;
  return line == url || line.rfind("not shipped: ", 0) == 0;
}

namespace {

void write_marker(const std::string& segment_path, const std::string& text) {
  std::string tmp = shipped_marker(segment_path) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text << "\n";
    if (!out) {
      spdlog::warn("cannot write {}: the segment will be shipped again", tmp);
      return;
    }
  }
  if (::rename(tmp.c_str(), shipped_marker(segment_path).c_str()) != 0)
    spdlog::warn("cannot write {}: {}", shipped_marker(segment_path), std::strerror(errno));
}

}  // namespace

void FleetShip::start() {
  count_backlog();
  thread_ = std::thread([this] { run(); });
}

void FleetShip::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cancel_ = true;
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

std::vector<segments::SegmentFile> FleetShip::finished() const {
  std::string cur;
  {
    std::lock_guard<std::mutex> lk(mu_);
    cur = current_;
  }
  auto all = segments::list(state_dir_);  // oldest first
  if (!all.empty()) all.pop_back();       // the newest: being written, or about to be
  std::vector<segments::SegmentFile> out;
  for (auto& s : all)
    if (std::filesystem::path(s.path).filename() != std::filesystem::path(cur).filename() &&
        !is_marked_shipped_to(s.path, state_.url))
      out.push_back(std::move(s));
  return out;
}

void FleetShip::count_backlog() {
  uint64_t n = 0, bytes = 0;
  for (const auto& s : finished()) {
    ++n;
    bytes += s.bytes;
  }
  std::lock_guard<std::mutex> lk(mu_);
  state_.backlog_segments = n;
  state_.backlog_bytes = bytes;
}

bool FleetShip::ship_once() {
  bool ok = true;
  for (const auto& s : finished()) {
    fleet::ShipOptions opt;
    opt.keep_going = [this] { return !cancel_.load(); };
    auto st = fleet::ship_capture(ch_, s.path, opt);
    if (!st && st.error().exit_code == 2) {
      // Not a readable capture (a file a full disk cut short, ...): it can
      // never be shipped, so it must not hold up the segments after it, nor
      // retention.
      spdlog::warn("segment {} cannot be shipped: {}; passed over", s.path, st.error().message);
      write_marker(s.path, "not shipped: " + st.error().message);
      std::lock_guard<std::mutex> lk(mu_);
      ++state_.unshippable;
      continue;
    }
    if (!st) {
      if (cancel_) break;  // stopping: not a failure
      std::lock_guard<std::mutex> lk(mu_);
      ++state_.failures;
      if (state_.last_error != st.error().message)
        spdlog::warn("cannot ship segment {} to {}: {}", s.path, state_.url, st.error().message);
      state_.last_error = st.error().message;
      ok = false;
      break;
    }
    write_marker(s.path, state_.url);
    spdlog::info("segment {} shipped to {}: {} rows", s.path, state_.url, st->rows_sent);
    if (!st->tables_missing.empty()) {
      std::string names;
      for (const auto& t : st->tables_missing) names += (names.empty() ? "" : ", ") + t;
      spdlog::warn("segment {}: {} not shipped: the database at {} has no such table (gpuobs clickhouse init adds it)",
                   s.path, names, state_.url);
    }
    if (!st->columns_missing.empty()) {
      std::string names;
      for (const auto& c : st->columns_missing) names += (names.empty() ? "" : ", ") + c;
      spdlog::warn(
          "segment {}: columns {} not shipped: the database at {} lacks them (gpuobs clickhouse init adds them)",
          s.path, names, state_.url);
    }
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
