// gpuobsd's rolling comparison (issue 21, docs/diff.md "In the daemon"): every
// diff_interval, the last diff_window seconds of the current segment against
// a baseline capture (diff_baseline: a good run recorded earlier, or a copy
// of a segment), per second, as `gpuobs diff` compares them; the result goes
// to the status file and to Prometheus gauges with no labels (bounded).
// Runs on its own thread: reading a window of a segment takes a while and
// must not hold up the ring.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace gpuobs::daemon {

struct DiffWatchState {
  std::string baseline;      // the baseline's path ('' : off)
  uint64_t comparisons = 0;  // done since the daemon started
  uint64_t errors = 0;       // comparisons that could not be made
  uint64_t regressed = 0;    // series regressed in the last comparison
  uint64_t new_kernels = 0;  // kernels of the window the baseline never launched
  double worst_ratio = 1;    // the largest new/base ratio among the regressed series (1: none)
  std::string last_error;    // of the last comparison that failed ('' after a good one)
};

class DiffWatch {
 public:
  DiffWatch(std::string baseline, std::chrono::seconds interval, double window_s)
      : baseline_(std::move(baseline)), interval_(interval), window_s_(window_s) {}
  ~DiffWatch() { stop(); }
  void start();
  void stop();
  // The segment being written (rotation changes it).
  void set_current(const std::string& path);
  DiffWatchState state() const;
  // One comparison now (the thread's step; tests call it directly).
  void compare_once();

 private:
  void run();
  const std::string baseline_;
  const std::chrono::seconds interval_;
  const double window_s_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::string current_;
  DiffWatchState state_;
  std::set<std::string> notes_said_;  // the comparison thread's own
  std::thread thread_;
};

}  // namespace gpuobs::daemon
