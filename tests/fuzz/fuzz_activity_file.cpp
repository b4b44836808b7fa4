// The CUPTI activity file of record --gpu-time (userspace/gpu_time/): written
// by the traced program's process, so untrusted. Input: the file's bytes.
// The reader must reject or count every damage (ASan/UBSan), and whatever it
// reads goes through the join with a few calls made from the records, which
// must account for every activity: joined, without a row, or ambiguous.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "gpu_time/activity_file.h"
#include "gpu_time/activity_join.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuobs::gpu_time;
  auto file = parse_activity_file(std::span<const uint8_t>(data, size), "fuzz input");
  if (!file.ok()) return 0;
  std::vector<HostCall> calls;
  uint64_t gpu = 0;
  for (const Activity& a : file->activities) {
    if (a.kind == ActivityKind::driver_api || a.kind == ActivityKind::runtime_api) {
      // A call where each API record says one entered (one kind per record, cycling).
      HostCall c;
      c.row_id = calls.size() + 1;
      c.tgid = a.pid;
      c.tid = a.tid;
      c.ts_ns = a.start_ns;
      c.kind = static_cast<HostCallKind>(calls.size() % 4);
      calls.push_back(c);
    } else {
      ++gpu;
    }
  }
  JoinResult r = join_activities(calls, file->activities);
  const JoinCounts& n = r.counts;
  // Every GPU activity is joined (directly or as an extra of its call), or counted as not.
  if (n.joined_by_correlation + n.joined_by_order + n.activities_without_row + n.activities_ambiguous != gpu)
    std::abort();
  for (size_t i = 1; i < r.rows.size(); ++i)
    if (r.rows[i - 1].row_id >= r.rows[i].row_id) std::abort();
  for (const GpuTime& t : r.rows)
    if (t.end_ns < t.start_ns) std::abort();
  return 0;
}
