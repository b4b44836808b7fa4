// gpuobsd's shipper (issue 23; docs/operations.md, "Fleet"): every finished
// segment goes to ClickHouse (fleet/shipper.h: at least once, never twice),
// oldest first, on its own thread so that a slow or absent server never
// holds up capture. A shipped segment gets a marker file beside it
// (<segment>.shipped); retention keeps every segment without one (only a
// full disk deletes them, and says so). Failures back off from 1 s to 5 min
// and show in the status file, gpuobs status and the Prometheus metrics.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon_state/segments.h"
#include "fleet/clickhouse_client.h"

namespace gpuobs::daemon {

struct ShipState {
  std::string url;                                                     // where to (no password), '' : off
  uint64_t shipped_segments = 0, shipped_rows = 0, shipped_bytes = 0;  // since the daemon started
  uint64_t backlog_segments = 0, backlog_bytes = 0;                    // finished segments not shipped yet
  uint64_t failures = 0;
  uint64_t unshippable = 0;  // segments that are not readable captures: marked and passed over
  std::string last_error;    // of the last try that failed ('' after a success)
  int64_t last_success_unix_s = 0;
};

// The marker of a shipped segment: it holds where to (the URL without a
// password), so a segment shipped to another server or database is shipped
// again; "not shipped: WHY" marks one that can never be (not a readable
// capture), so that it no longer holds up the others or retention.
std::string shipped_marker(const std::string& segment_path);
bool is_marked_shipped(const std::string& segment_path);  // to any server
bool is_marked_shipped_to(const std::string& segment_path, const std::string& url);

class FleetShip {
 public:
  FleetShip(fleet::Endpoint ep, std::string state_dir, std::chrono::seconds interval)
      : ch_(with_cancel(std::move(ep), &cancel_)), state_dir_(std::move(state_dir)), interval_(interval) {
    state_.url = ch_.endpoint().display();
  }
  ~FleetShip() { stop(); }
  void start();
  void stop();
  // The segment being written, never shipped; a rotation wakes the shipper.
  void set_current(const std::string& path);
  ShipState state() const;
  // One pass: every finished unshipped segment, oldest first, until one
  // fails (the thread's step; tests call it directly). True: none failed.
  bool ship_once();

 private:
  static fleet::Endpoint with_cancel(fleet::Endpoint ep, const std::atomic<bool>* cancel) {
    ep.cancel = cancel;
    return ep;
  }
  void run();
  void count_backlog();
  // The segments a pass may ship: finished ones, oldest first. The newest
  // segment file is never one of them: it is the one being written, or the
  // one a rotation has just made and not yet announced.
  std::vector<segments::SegmentFile> finished() const;
  std::atomic<bool> cancel_{false};  // set by stop(): requests under way are abandoned
  const fleet::ClickHouse ch_;
  const std::string state_dir_;
  const std::chrono::seconds interval_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false, woken_ = false;
  std::string current_;
  ShipState state_;
  std::thread thread_;
};

}  // namespace gpuobs::daemon
