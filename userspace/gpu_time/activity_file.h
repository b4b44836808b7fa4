// Reading back the file of inject/cupti/ (activity_format.h): every slot
// checked, times moved onto CLOCK_MONOTONIC, kernel names reassembled. A file
// that cannot be trusted at all (no header, bad magic, a newer format) is an
// error; damage after a good header (a slot cut short at the end, a record of
// an unknown type or with impossible times, a broken name) is counted in
// ReadCounts and the rest is read.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"

namespace gpuobs::gpu_time {

enum class ActivityKind : uint8_t { kernel, memcpy, memset, driver_api, runtime_api };

// One activity record, its times on CLOCK_MONOTONIC (the capture's clock).
struct Activity {
  ActivityKind kind = ActivityKind::kernel;
  uint32_t pid = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device_id = 0;         // kernel, memcpy, memset
  uint32_t context_id = 0;        // kernel, memcpy, memset
  uint32_t stream_id = 0;         // kernel, memcpy, memset: CUPTI's id
  uint32_t correlation_id = 0;    // all kinds
  uint32_t tid = 0;               // driver_api, runtime_api: kernel tid; 0 when the writer had only pthread ids
  uint32_t cbid = 0;              // driver_api
  uint32_t result = 0;            // driver_api: CUresult
  uint64_t bytes = 0;             // memcpy, memset
  uint8_t copy_kind = 0;          // memcpy: CUpti_ActivityMemcpyKind
  uint8_t src_kind = 0;           // memcpy
  uint8_t dst_kind = 0;           // memcpy
  uint32_t grid[3] = {0, 0, 0};   // kernel
  uint32_t block[3] = {0, 0, 0};  // kernel
  uint64_t name_hash = 0;         // kernel: key of ActivityFile::names
};

// What the header of one writing process said, and its last stats record.
struct ActivityProcess {
  uint32_t pid = 0;
  uint32_t version = 0;
  uint32_t clock_kind = 0;      // GtClockKind
  uint32_t tid_kind = 0;        // GtTidKind
  uint32_t cupti_version = 0;   // cuptiGetVersion(), 0 unknown
  uint32_t enabled = 0;         // GtEnabledKind bits
  int64_t to_monotonic_ns = 0;  // added to the file's times (0 for kGtClockMonotonic)
  uint64_t realtime_ns = 0;     // CLOCK_REALTIME at the writer's start
  bool stats_seen = false;      // a GtStats record was read
  bool stats_final = false;     // ... and the last one was written at exit
  uint64_t cupti_dropped = 0;
  uint64_t records_written = 0;
  uint64_t write_errors = 0;
  uint64_t buffer_failures = 0;
  uint64_t unknown_kinds = 0;
};

// Damage and volume, each slot counted once.
struct ReadCounts {
  uint64_t slots = 0;                 // whole slots read
  uint64_t headers = 0;               // file headers (one per writing process; a pid's later one replaces it)
  uint64_t activities = 0;            // records kept in ActivityFile::activities
  uint64_t truncated_tail_bytes = 0;  // bytes after the last whole slot: a write cut short
  uint64_t unknown_type = 0;          // slots whose type this reader does not know
  uint64_t without_header = 0;        // records of a pid whose header came nowhere before them
  uint64_t bad_times = 0;             // start or end 0, end before start, or outside CLOCK_MONOTONIC's range
  uint64_t bad_names = 0;  // name chunks out of range or disagreeing; names incomplete or not matching their hash
};

struct ActivityFile {
  std::vector<ActivityProcess> processes;           // in the order their headers came
  std::vector<Activity> activities;                 // in file order
  std::unordered_map<uint64_t, std::string> names;  // kernel name hash -> name
  ReadCounts counts;

  const ActivityProcess* process(uint32_t pid) const;
  // The kernel's name, or nullptr when no complete name record came.
  const std::string* name_of(uint64_t hash) const;
};

// `what` names the bytes in error messages (a path).
Result<ActivityFile> parse_activity_file(std::span<const uint8_t> bytes, std::string_view what = "activity file");
// A regular file only (not followed through a link), at most max_bytes.
inline constexpr uint64_t kMaxActivityFileBytes = 16ull << 30;
Result<ActivityFile> read_activity_file(const std::string& path, uint64_t max_bytes = kMaxActivityFileBytes);

}  // namespace gpuobs::gpu_time
