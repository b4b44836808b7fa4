// The bytes of a launch run (schema/migrations/016): up to kRunLaunches
// launches of one transaction, consecutive in time, in one row. Per launch two
// unsigned LEB128 varints: its key minus the previous key (the first: minus
// the run's id, so 0) and its shape id minus the previous one, zigzag-encoded
// (the first: minus 0). The launches view decodes the same bytes in SQL; the
// tests hold the two to each other.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gpuobs {

// What a run holds at most: one row's insert over 64 launches, and a blob
// (about 200 bytes) that stays on its B-tree page.
inline constexpr size_t kRunLaunches = 64;
// And spans at most this much time from its first launch to its last, so the
// runs of a time window start at most this far before it
// (store/launch_table.h reads them so).
inline constexpr int64_t kMaxRunSpanNs = 1'000'000'000;

class LaunchRunEncoder {
 public:
  // A new run whose first launch has this key (the row's id).
  void start(int64_t first_key);
  // Keys strictly increasing within a run.
  void add(int64_t key, int64_t shape);
  size_t launches() const { return launches_; }
  int64_t first_key() const { return first_; }
  int64_t last_key() const { return key_; }
  const std::string& bytes() const { return bytes_; }

 private:
  void put(uint64_t v);
  std::string bytes_;
  int64_t first_ = 0, key_ = 0, shape_ = 0;
  size_t launches_ = 0;
};

struct RunLaunch {
  int64_t key, shape;
  bool operator==(const RunLaunch&) const = default;
};

// Appends the run's launches to out. False when the bytes are not a
// well-formed run (a varint cut short or longer than 10 bytes, a key that does
// not increase or steps past the 1 s span, a shape id below 1): out then has
// the launches before the damage, as the launches view shows them.
bool decode_launch_run(int64_t first_key, std::span<const uint8_t> bytes, std::vector<RunLaunch>& out);

}  // namespace gpuobs
