// gpuobsd's segment files: <state_dir>/capture-<UTC yyyymmddThhmmss>-<seq>.gpuobs,
// a `current` symlink to the one being written, and retention (oldest first).
// Shared by gpuobsd (writes) and gpuobs (lists, resolves --segment).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpuobs::segments {

struct SegmentFile {
  std::string path;
  int64_t seq = 0;
  uint64_t bytes = 0;        // the file and its -wal
  int64_t mtime_unix_s = 0;  // last written
};

// The segment file name for seq, started at unix_s (UTC).
std::string segment_name(int64_t seq, int64_t unix_s);
// Every segment file in dir, sorted by sequence number (oldest first).
std::vector<SegmentFile> list(const std::string& dir);
// One more than the highest sequence number in dir (1 when there is none).
int64_t next_seq(const std::string& dir);
// Points <dir>/current at path (atomically: a new link renamed over the old one).
Status set_current(const std::string& dir, const std::string& path);
// The file <dir>/current points to.
Result<std::string> current(const std::string& dir);

struct Retention {
  uint64_t keep_segments = 0;  // 0: no count limit
  uint64_t keep_bytes = 0;     // 0: no size limit
  uint64_t max_age_s = 0;      // 0: no age limit
  // Shipping to ClickHouse is on: a segment not shipped yet (no
  // <segment>.shipped beside it) is kept whatever the limits say.
  bool keep_unshipped = false;
};
// Deletes the oldest segments until the limits hold; never current_path.
// Returns the paths deleted.
std::vector<std::string> enforce(const std::string& dir, const Retention& r, const std::string& current_path,
                                 int64_t now_unix_s);

// `gpuobs --segment SPEC`: N, all, FROM..TO (sequence numbers, inclusive).
Result<std::vector<std::string>> select(const std::string& dir, const std::string& spec);

}  // namespace gpuobs::segments
