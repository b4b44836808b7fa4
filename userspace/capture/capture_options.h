// The capture options `gpuobs record` and gpuobsd share (issue 20): one set
// of defaults, one validation, one help text, typed values (UnwindMode, not
// its word). Each program binds them to its own fields; gpuobsd adds the
// config file's spellings (ring_mb besides --ring-mb).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/modes.h"
#include "common/result.h"

namespace CLI {
class App;
}

namespace gpuobs {

// The defaults and bounds, the single source for both programs.
// 64 MiB: a launch record with the default 64-frame stack area takes 632
// bytes of the ring, so 16 MiB held 18 ms of a busy 8-GPU host's 1.5 M
// launches/s and 8 processes starting together overflowed it (issue 17:
// 25,000-28,000 drops); 64 MiB held that burst with none.
inline constexpr uint32_t kRingMbDefault = 64, kRingMbMax = 1024;  // ring_mb << 20 fits 32 bits
inline constexpr uint32_t kStackDepthDefault = 64, kStackDepthMax = 127;
inline constexpr uint32_t kStackCopyDefault = 16384, kStackCopyMax = 65536;
// A collective some ranks entered and others not this long is a stall
// (capture/nccl_watch.h); NCCL's own default watchdog in PyTorch waits 10 min.
inline constexpr uint32_t kNcclStallDefaultS = 30, kNcclStallMaxS = 86400;
// GPU metrics sampled per second (issue 19): 10 is Nsight Systems' and the
// vendor exporters' usual rate and costs well under 0.1% of a core per GPU
// (docs/performance.md); 0 turns the sampler off.
inline constexpr uint32_t kMetricsHzDefault = 10, kMetricsHzMax = 100;
// The two NVML queries that cost about a millisecond of CPU per GPU each on
// the H200 (docs/gpu_metrics.md, "Cost"): GPM (SM active, tensor, DRAM
// bandwidth: Hopper and later), averaged over this interval, and the
// per-process utilization (NVML keeps its samples between calls; each is
// stored at its own time). Every 10 s in gpuobsd (DCGM's exporter publishes
// every 30 s), which keeps the sampler near 0.5% of a core for 8 GPUs;
// every 1 s in gpuobs record; --detail-interval-ms 100: every tick.
inline constexpr uint32_t kDetailIntervalMsDefault = 10000, kDetailIntervalMsMax = 3600000;
inline constexpr uint32_t kRecordDetailIntervalMs = 1000;  // gpuobs record's default

// The capture options that take a value, as `gpuobs record` spells them: its
// command splitter (cli/record.cpp) skips each one's value when it looks for
// where the command starts. add_capture_options() throws std::logic_error if
// it defines a value option missing here (a missing one swallowed its value:
// "--nccl-stall 2" was refused).
inline constexpr const char* kCaptureValueOptions[] = {
    "--libcuda",    "--libhip",     "--watch-dev",     "--ring-mb",    "--stack-depth",        "--unwind",
    "--stack-copy", "--nccl-stall", "--python-stacks", "--metrics-hz", "--detail-interval-ms", "--python-main-thread"};

// Where the parsed values go.
struct CaptureOptionFields {
  std::vector<std::string>* libcuda = nullptr;
  std::vector<std::string>* libhip = nullptr;
  std::vector<std::string>* watch_dev = nullptr;
  bool* gpu_devices = nullptr;
  uint32_t* ring_mb = nullptr;
  uint32_t* stack_depth = nullptr;
  UnwindMode* unwind = nullptr;
  uint32_t* stack_copy = nullptr;
  uint32_t* nccl_stall_s = nullptr;
  bool* python_stacks = nullptr;
  uint32_t* metrics_hz = nullptr;
  uint32_t* detail_interval_ms = nullptr;
  bool* python_main_thread = nullptr;
};

// Adds --libcuda, --libhip, --watch-dev, --no-gpu-devices, --ring-mb,
// --stack-depth, --unwind, --stack-copy, --nccl-stall, --python-stacks,
// --python-main-thread and --metrics-hz, range-checked (out-of-range
// values are refused, never clamped or wrapped). config_spellings: also
// --ring_mb and the like, the keys of gpuobsd's config file.
void add_capture_options(CLI::App& app, const CaptureOptionFields& f, bool config_spellings);

// What no single option can check: a stack copy size other than the default
// applies only to --unwind dwarf. The error names the option as `spelling`.
Status check_capture_options(UnwindMode unwind, uint32_t stack_copy, const char* spelling);

}  // namespace gpuobs
