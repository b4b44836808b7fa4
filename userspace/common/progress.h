// A progress line on stderr for work that can take more than a second
// (record's drain at the end, exports, replay, reports over big captures):
// what is running, for how long, and, where the work counts something, how
// many and how fast. Only on a terminal: never into a pipe or a file, never
// with TERM=dumb, and not at all for work that ends within the first second
// (GPUOBS_PROGRESS_AFTER_MS sets that delay; tests set 0). The line is
// redrawn 4 times a second by its own thread and erased at the end.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gpuobs {

class Progress {
 public:
  // count (optional, called from the progress thread: must be thread-safe)
  // gives how many `unit`s are done so far.
  explicit Progress(std::string label, std::function<uint64_t()> count = {}, std::string unit = "events");
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Whether progress lines are drawn in this process (stderr is a terminal).
  static bool enabled();

 private:
  void draw();
  void run(std::chrono::milliseconds after);

  std::string label_, unit_;
  std::function<uint64_t()> count_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, drawn_ = false;
  std::thread thread_;
};

}  // namespace gpuobs
