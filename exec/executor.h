// Runs one captured process's part of a schedule on the GPU: its streams
// (with their priorities), its threads (one replay thread per captured
// thread), each step in the capture's order with the captured host gaps, and
// synthetic GPU work of each step's length (docs/replay.md "Execute").
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/cuda_driver.h"
#include "exec/schedule_file.h"

namespace gpuobs::exec {

// ns -> spin-kernel cycles: a kernel of c cycles takes fixed_ns + c * ns_per_cycle
// of GPU time back to back, as measured with CUDA events at start.
struct Calibration {
  bool measured = false;            // false: no cuEventElapsedTime (a driver without timing): the defaults below
  std::string source = "default";   // events: timed at start with CUDA events; given: --fixed-ns/--ns-per-cycle
  double ns_per_cycle = 1.0 / 1.5;  // 1.5 GHz until measured
  double fixed_ns = 0;              // a spin kernel of 0 cycles, launch to launch on the GPU
  uint64_t cycles_for(int64_t ns) const;
};

// What the comparison needs to find this run's streams in its capture.
struct ProcessReport {
  int64_t process_id = 0;      // the captured process (processes.id) this part replays
  uint32_t pid = 0;            // the executor process that ran it
  int64_t t0_mono_ns = 0;      // the schedule's start (CLOCK_MONOTONIC)
  int64_t issued_mono_ns = 0;  // every step issued (then the executor's own wait for the GPU, not the schedule's)
  int64_t end_mono_ns = 0;     // the GPU idle
  Calibration calibration;
  struct StreamInfo {
    int32_t id = 0;
    uint64_t handle = 0;  // CUstream value (0: legacy, 0x2: per-thread)
    uint32_t tid = 0;     // per-thread streams: the executor thread that used it
  };
  std::vector<StreamInfo> streams;
  struct ThreadInfo {
    int32_t id = 0;
    uint32_t tid = 0;  // the executor thread that replayed it
  };
  std::vector<ThreadInfo> threads;
  std::string json() const;  // one line
};

class Executor {
 public:
  Executor(const CudaDriver& cuda, const ScheduleFile& schedule, int64_t process_id);
  // The context, the spin kernel, the process's streams and events, buffers for its largest copy.
  bool init(std::string& why);
  bool calibrate(std::string& why);
  void set_calibration(const Calibration& c) { report_.calibration = c; }
  // --calibrate-only: spin kernels of known cycles, back to back on one
  // stream, for `gpuobs record --gpu-time` to measure (CUPTI's kernel
  // durations are what the comparison measures, so the fit from them is the
  // one that makes a re-executed kernel as long as the original). Returns the
  // sequence as JSON: [[cycles, count], ...] in launch order.
  bool calibration_sequence(std::string& json, std::string& why);
  // Issues every step from t0 (CLOCK_MONOTONIC ns) and waits for the GPU.
  bool run(int64_t t0_mono_ns, std::string& why);
  const ProcessReport& report() const { return report_; }

 private:
  bool issue(const Step& s, std::string& why);
  void replay_thread(int32_t thread, int64_t t0, std::string& why);
  bool check(CUresult r, const char* call, std::string& why) const;

  const CudaDriver& cu_;
  const ScheduleFile& sched_;
  int64_t process_id_;
  Handle ctx_ = nullptr, module_ = nullptr, spin_ = nullptr;
  std::vector<Handle> streams_;  // by stream id (this process's only; others null)
  std::vector<Handle> events_;
  CUdeviceptr dev_a_ = 0, dev_b_ = 0;
  void* pinned_ = nullptr;
  std::vector<char> pageable_;
  std::vector<int64_t> order_;     // this process's step indexes, in issue order
  std::vector<int64_t> position_;  // step index -> its place in order_ (-1: another process's)
  std::atomic<int64_t> next_{0};   // the place in order_ whose turn it is
  std::atomic<bool> failed_{false};
  ProcessReport report_;
};

int64_t now_mono_ns();

}  // namespace gpuobs::exec
