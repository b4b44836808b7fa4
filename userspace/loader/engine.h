// The capture engine: the one loader used by gpuobsd, `gpuobs record`, the
// benchmarks and the tests. Steps: preflight -> open -> configure -> load ->
// attach (tracepoints, then a plan of library probes) -> consume the ring.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "catalogue/api_spec.h"
#include "catalogue/driver_catalogue.h"
#include "common/modes.h"
#include "common/result.h"
#include "common/trace_format.h"
#include "events.h"
#include "loader/devices.h"
#include "loader/libraries.h"
#include "loader/owners.h"

struct gpuobs_bpf;
struct bpf_program;

namespace gpuobs {

struct EngineOptions {
  bool only_tracked = false;        // record mode: the tracked process tree only
  uint32_t ring_bytes = 16u << 20;  // rounded up to a power of two >= one page
  bool attach_ioctl = true;
  bool attach_process = true;
  // GPUOBS_EV_LIB_MAP records: a process mapped a file named like a GPU
  // runtime (bpf/library.bpf.h). For the library watch.
  bool attach_lib_map = false;
  // With attach_lib_map: stop (SIGSTOP) a process that maps a GPU library
  // whose inode is not in lib_known, until user space resumes it
  // (bpf/library.bpf.h).
  bool hold_on_map = false;
  // User-stack frames per event (0: none). Each frame costs 8 bytes of ring.
  uint32_t stack_depth = 64;
  // Bytes of user stack copied per event for DWARF unwinding (0: none).
  uint32_t stack_copy_bytes = 0;
  // --unwind bpf: unwind in BPF from tables loaded with set_unwind_proc; the
  // rows map holds this many rows (8 bytes each).
  bool unwind_in_bpf = false;
  uint32_t unwind_rows = 16u << 20;
  // CPython frames in every stack of a process described with
  // set_python_proc (bpf/python.bpf.h); up to min(stack_depth, 64) frames.
  bool python_stacks = true;
  // A thread that runs no Python takes its main thread's frames
  // (GPUOBS_PY_T_MAIN).
  bool python_main_thread = true;
  // GPU jobs from the kernel (bpf/gpu_sched.bpf.h): the GPU-scheduler
  // tracepoints this kernel has, and dma_fence_signaled. Optional: a
  // tracepoint the kernel lacks is reported (gpu_tracepoints()), never fatal.
  bool attach_gpu_jobs = true;
};

// One kernel tracepoint of the GPU job programs: attached, or why not.
struct TracepointResult {
  std::string system, event;  // "gpu_scheduler", "drm_sched_job_queue"
  std::string program;        // the BPF program
  uint32_t kind = 0;          // GPUOBS_GPU_TP_*
  uint32_t name_gen = 0;      // 0: the 6.17+ scheduler names, 1: the older ones
  ProbeStatus status = ProbeStatus::attached;
  std::string error;
  std::optional<TraceFormat> format;  // its format file, when the kernel has it
};

// One planned probe: {library, symbol, program}; the result says why not.
struct ProbeResult {
  LibraryFile library;
  std::string symbol;
  std::string program;
  ProbeStatus status = ProbeStatus::attached;
  std::string error;  // errno text
};

using Counters = std::array<uint64_t, GPUOBS_CNT__COUNT>;
const char* counter_name(int idx);

// Checks that BPF can work here: privileges, BTF, tracefs (mounted if absent).
Status preflight();

class Engine {
 public:
  using RecordHandler = std::function<void(const void* data, size_t size)>;

  static Result<std::unique_ptr<Engine>> create(const EngineOptions& opts);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Every symbol of an API table (catalogue/cuda_api.cpp, catalogue/hip_api.cpp) on one library file.
  // The links are kept per file (dev, inode): detach_library removes them.
  // Thread-safe against poll() (a worker thread attaches while the ring drains).
  std::vector<ProbeResult> attach_api(const LibraryFile& lib, std::span<const ApiSpec> table);
  // Removes every probe on this file; returns how many links are released.
  // The kernel side is released on a background thread (each uprobe waits
  // for an RCU grace period, ~80 ms): the caller, the library watch, must
  // not make the next process's attach wait. attach_api on the same file
  // waits for that release, so a file is never probed twice.
  size_t detach_library(uint64_t dev, uint64_t ino);
  // Files that have probes now.
  size_t attached_libraries() const;
  // Benchmarks only: do-nothing probes on these symbols (entry, and return
  // too when with_return), the cost floor of a probe there.
  std::vector<ProbeResult> attach_empty_probes(const LibraryFile& lib, const std::vector<std::string>& symbols,
                                               bool with_return = false);
  Status watch_device(const DeviceMatch& dev);
  // What the ioctl exit copies of each known driver request.
  Status set_ioctl_rules(const std::vector<IoctlRuleEntry>& rules);
  Status track(uint32_t tgid);

  Status start(RecordHandler handler);
  // Waits up to timeout_ms for a wake-up, then consumes everything available.
  // Returns the number of records consumed, or a negative errno.
  int poll(int timeout_ms);
  Counters counters() const;
  // Calls entered but not yet returned (entries of call_inflight).
  size_t inflight_calls() const;
  // The entries of outer_inflight (NCCL calls entered and not returned: the
  // stall watch) whose API number is in [first_api, last_api], as their
  // records stand (header, arguments; no result yet).
  std::vector<gpuobs_api_call> inflight_calls_between(uint32_t first_api, uint32_t last_api) const;
  uint32_t ring_bytes() const { return ring_bytes_; }
  uint32_t stack_depth() const { return stack_depth_; }
  // --unwind bpf: the rows array, mapped into this process (null otherwise).
  uint64_t* unwind_rows() const { return static_cast<uint64_t*>(rows_.get()); }
  uint32_t unwind_rows_capacity() const { return rows_cap_; }
  Status set_unwind_proc(uint32_t tgid, const gpuobs_unwind_proc& proc);
  void drop_unwind_proc(uint32_t tgid);
  // The interpreter of a Python process (userspace/stacks/python_process.h):
  // its stacks carry Python frames from now on.
  Status set_python_proc(uint32_t tgid, const gpuobs_py_proc& proc);
  void drop_python_proc(uint32_t tgid);
  bool uses_uprobe_multi() const { return multi_; }
  // The GPU job tracepoints (EngineOptions::attach_gpu_jobs): every one
  // the programs know, with its state on this kernel.
  const std::vector<TracepointResult>& gpu_tracepoints() const { return gpu_tps_; }
  // Tests: a loaded GPU job program (gpu_fence_signaled) on another
  // tracepoint of this kernel, one a test can fire at will (a syscall's):
  // its records then carry that event's entry, so the entry copy is checked
  // for real on a kernel whose GPU events never fire.
  Status attach_gpu_program_to(const std::string& program, const std::string& system, const std::string& event);
  // The mmap tracepoints of attach_lib_map are attached.
  bool lib_map_attached() const { return lib_map_; }
  // What BPF knows of a library file (lib_known), keyed as the kernel sees
  // the mapped file (kernel_dev(): the kernel's dev_t encoding):
  // GPUOBS_KNOWN_ATTACHED (a mapping is not held), GPUOBS_KNOWN_UNPROBED
  // (not held, recorded as unprobed), or forgotten (held again).
  Status set_library_known(uint32_t kdev, uint64_t ino, uint32_t value);
  void forget_library(uint32_t kdev, uint64_t ino);
  // The processes BPF holds (lib_held): tgid -> the hold's CLOCK_MONOTONIC ns.
  std::vector<std::pair<uint32_t, int64_t>> held_processes() const;
  // Deletes the lib_held entry of a process about to be resumed.
  void unheld(uint32_t tgid);

 private:
  Engine() = default;
  Status attach_tracepoints(const EngineOptions& opts);
  // Before load: reads the GPU job events' formats, turns autoload off for
  // those this kernel lacks, gives BPF the fence-key offsets.
  void plan_gpu_tracepoints(const EngineOptions& opts);
  void attach_gpu_tracepoints();
  // Library probes, per file (dev, inode): perf-event uprobe links and
  // uprobe-multi link fds.
  struct LibraryLinks {
    std::vector<Link> links;
    std::vector<Fd> multi_fds;
  };
  // One planned probe site: a symbol's offset, cookie and programs.
  struct Site {
    size_t result;  // index into the results
    uint64_t offset, cookie;
    std::vector<std::pair<bpf_program*, bool>> progs;  // (program, return probe)
  };
  void attach_sites(const LibraryFile& lib, const std::vector<Site>& sites, std::vector<ProbeResult>& results);
  // Fallback: perf-event uprobes, every (program, return probe) at one offset, all or nothing.
  ProbeResult attach_at(ProbeResult r, uint64_t offset, uint64_t cookie,
                        const std::vector<std::pair<bpf_program*, bool>>& progs, LibraryLinks& into);

  struct SkeletonDeleter {
    void operator()(gpuobs_bpf* s) const;  // gpuobs_bpf__destroy
  };
  // Declared first: destroyed last, after every link, mapping and the ring.
  std::unique_ptr<gpuobs_bpf, SkeletonDeleter> skel_;
  MappedRegion rows_;  // --unwind bpf: the rows map, mapped here
  RingBuffer ring_;
  std::vector<Link> links_;  // tracepoints
  // Destroys links in parallel (their RCU waits overlap).
  static void release_links(LibraryLinks& ll);
  void reap();  // the background thread of detach_library

  mutable std::mutex lib_mu_;
  std::map<std::pair<uint64_t, uint64_t>, LibraryLinks> lib_links_;
  // Detached files whose links are being released (lib_mu_).
  std::deque<std::pair<std::pair<uint64_t, uint64_t>, LibraryLinks>> reap_queue_;
  std::multiset<std::pair<uint64_t, uint64_t>> reaping_;
  std::condition_variable reap_cv_;
  bool reap_stop_ = false;
  std::thread reaper_;
  bool multi_ = false;
  bool lib_map_ = false;
  std::vector<TracepointResult> gpu_tps_;
  RecordHandler handler_;
  uint32_t ring_bytes_ = 0;
  uint32_t stack_depth_ = 0;
  uint32_t rows_cap_ = 0;
};

}  // namespace gpuobs
