// A schedule file as `gpuobs replay --schedule-out` writes it (docs/replay.md
// "Schedule"), read into what the executor needs. The executor reads the
// file, not the replay's C++ types: the JSON is the contract, so the
// executor stays a small program with no SQLite or gpuobs library in it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuobs::exec {

enum class Kind : uint8_t {
  kernel,
  graph,
  host_func,
  copy,
  memset,
  event_record,
  event_wait,
  stream_sync,
  event_sync,
  context_sync
};

struct Stream {
  int32_t id = 0;
  int64_t process_id = 0;
  std::string kind;  // legacy, per_thread, created, unknown
  bool non_blocking = false;
  int32_t priority = 0;
};

struct Thread {
  int32_t id = 0;
  int64_t process_id = 0;
  uint32_t tid = 0;
};

struct Step {
  int64_t index = 0;
  Kind kind = Kind::kernel;
  int32_t thread = 0;
  int32_t stream = -1;
  int32_t event = -1;
  int64_t at_ns = 0;
  int64_t gap_ns = 0;
  int64_t host_ns = 0;  // 0: the capture has no return for it (launches): the next gap counts from its entry
  int64_t gpu_ns = 0;
  uint64_t bytes = 0;
  std::string direction;
  bool async = false;
};

struct ScheduleFile {
  std::vector<Stream> streams;
  std::vector<Thread> threads;
  std::vector<Step> steps;  // in issue order (index 0, 1, ...)
  int32_t events = 0;
  int64_t duration_ns = 0;
  bool no_host_gaps = false;  // the edits the gaps carry: a thread's first step then starts at once
  double speed = 1.0;         // ... or at at_ns / speed
};

// Reads and checks the file: every step's thread, stream and event exist,
// indexes run 0, 1, ...; false with `why` naming the first problem.
bool read_schedule(const std::string& path, ScheduleFile& out, std::string& why);

}  // namespace gpuobs::exec
