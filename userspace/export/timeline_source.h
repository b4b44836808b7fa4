// What the exporters draw from the capture itself (the replay adds the GPU
// queues): host API calls and ioctls per thread, and live device memory per
// process. Rows are read as compactly as possible: a 1M-launch capture gives
// 1M host slices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "store/db.h"

namespace gpuobs::exporter {

// A host call: an API call (any family) or an ioctl, on its thread.
struct HostCall {
  int64_t ts_ns = 0;
  std::optional<int64_t> dur_ns;  // none: probed at entry only (launches, calls without a return probe)
  int64_t process_id = 0;
  uint32_t tid = 0;
  uint8_t table = 0;              // index into kHostTables
  int64_t row_id = 0;             // id in that table
  uint32_t name = 0;              // index into Timeline::strings: the API symbol, or "ioctl 0x.."
  uint32_t detail = 0;            // index into Timeline::strings: kernel name (launches), 0 = none
  std::optional<int64_t> result;  // API result, or the ioctl's return value
  // NCCL calls: 1 + index into Timeline::nccl; 0: not an NCCL call.
  uint32_t nccl = 0;
  // Its call stack as one line, innermost first ("f <- g (file.py:12) <- ..."):
  // index into Timeline::strings, 0 = no stack.
  uint32_t stack = 0;
};

// An NCCL call's communicator and place in it (kept apart from HostCall,
// which a million launches share).
struct NcclCallInfo {
  // The communicator: its identity across processes (0: unknown, e.g. made
  // by ncclCommInitAll) and its row in the capture (nccl_comms.id).
  uint64_t comm_hash = 0;
  int64_t comm_id = 0;
  // Collectives: order on the communicator (the same hash and seq in every
  // rank is the same collective); 0: not a collective.
  int64_t seq = 0;
  int64_t rank = -1, nranks = 0;  // -1 / 0: unknown (a split communicator)
  std::optional<int64_t> bytes;
  uint32_t op = 0;  // index into Timeline::strings: all_reduce, send, ...
};

inline constexpr const char* kHostTables[] = {"kernel_launches", "memory_ops",  "copies", "stream_ops",
                                              "syncs",           "gpu_modules", "ioctls", "nccl_calls"};
inline constexpr uint8_t kIoctlTable = 6;
inline constexpr uint8_t kNcclTable = 7;
int host_table_index(const std::string& table);  // -1: not a host table

struct ProcessInfo {
  int64_t process_id = 0;
  uint32_t tgid = 0;
  std::string name;  // comm
};

// Live bytes of device memory (kinds device, pitch, async, pool) of one
// process after a change, from the memory_timeline view.
struct MemorySample {
  int64_t process_id = 0;
  int64_t ts_ns = 0;
  int64_t live_bytes = 0;
};

// A GPU the metrics sampler found (schema 19), and one of its samples: a
// metric's value from ts_ns until its next sample.
struct GpuTrackInfo {
  int64_t gpu_id = 0;
  std::string name;  // "GPU 1: NVIDIA H100 80GB HBM3"
};
struct GpuSample {
  int64_t gpu_id = 0;
  uint32_t metric = 0;  // index into Timeline::strings: "sm_active_pct (%)"
  int64_t ts_ns = 0;
  double value = 0;
};

// A GPU job the kernel's GPU scheduler ran (schema 26): on its ring, from
// run to done (or its fence's signal).
struct GpuJobSpan {
  uint32_t device = 0;     // index into Timeline::strings: "0000:03:00.0" ("" before Linux 6.17)
  uint32_t ring = 0;       // index into Timeline::strings: "gfx_0.0.0"
  int64_t job_id = 0;      // gpu_jobs.id
  int64_t process_id = 0;  // the submitter; 0: not seen
  int64_t run_ns = 0;
  std::optional<int64_t> end_ns;  // none: unfinished at the capture's end
  std::optional<int64_t> queued_ns;
  std::optional<int64_t> seqno;  // the fence's seqno (6.17+)
};

struct Timeline {
  std::vector<std::string> strings{""};  // [0] = "": interned names
  std::vector<ProcessInfo> processes;    // every process of the capture, by id
  std::vector<HostCall> calls;           // ordered by (ts, table, row id)
  std::vector<NcclCallInfo> nccl;        // HostCall::nccl - 1
  std::vector<MemorySample> memory;      // ordered by (process, ts); one sample per instant
  std::vector<GpuTrackInfo> gpus;        // by id
  std::vector<GpuSample> gpu_samples;    // ordered by (gpu, metric, ts)
  // GPU times measured with record --gpu-time (schema 20): (host table
  // index << 56 | row id) -> [start, end) on the GPU.
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> gpu_times;
  std::vector<GpuJobSpan> gpu_jobs;  // ordered by (device, ring, run, id); jobs that ran only
  int64_t start_ns = 0, end_ns = 0;  // capture start and end (end: last event if the capture is open)
};

Result<Timeline> load_timeline(Db& capture);

}  // namespace gpuobs::exporter
