// One side of `gpuobs diff`: the captures (files, or gpuobsd segments) and
// the time window read, turned into series keyed so that the same work in
// two runs meets the same key: process name (not pid), kernel or API name,
// a stream label (not the handle, which differs from run to run), and the
// stack as its frames' function names (not addresses, not lines).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/result.h"
#include "diff/diff_stats.h"

namespace gpuobs::diff {

// What a row compares. Count measures (launches, calls) are compared as
// rates; the others as distributions of one value per event, except
// alloc_peak (one number per side).
enum class Measure {
  launches,        // kernel launches (count)
  gpu_time,        // a launch's GPU duration, ns (--gpu-time)
  calls,           // API calls other than launches (count)
  latency,         // an API call's host duration, ns (synchronizations excluded: blocked)
  blocked,         // a synchronization's blocked time, ns
  copy_bytes,      // bytes copied or set (total; per-copy sizes tested)
  copy_bandwidth,  // bytes per second of a copy on the GPU (--gpu-time; a sync copy's host time is its latency)
  alloc_peak,      // peak live bytes per process name and memory kind
  launch_gap,      // time between consecutive launches on one stream, ns
  nccl_bytes,      // bytes per collective call (total; per-call sizes tested)
};
std::string_view to_string(Measure m);
// Distribution measures carry one sample per event; count measures do not.
bool is_distribution(Measure m);
// Lower is better for every measure but copy_bandwidth.
bool higher_is_worse(Measure m);

struct Key {
  Measure measure{};
  std::string process;  // comm
  std::string name;     // kernel, API symbol, copy "api direction", memory kind, collective op
  std::string stream;   // legacy, per-thread, stream#N (order of first use in the process); '' where none
  std::string stack;    // the stack's signature; '' without stacks (or --no-stacks)
  // (Spelled out: clang-tidy 14 misreads a defaulted operator<=>.)
  auto tied() const { return std::tie(measure, process, name, stream, stack); }
  bool operator<(const Key& o) const { return tied() < o.tied(); }
  bool operator==(const Key& o) const { return tied() == o.tied(); }
};

struct Series {
  Reservoir samples;       // distribution measures: one value per event
  uint64_t count = 0;      // events (launches, calls, copies, gaps)
  double total = 0;        // copy_bytes/nccl_bytes: bytes; others: sum of samples
  double peak = 0;         // alloc_peak: bytes
  std::string stack_text;  // the stack as a reader reads it (first seen)
};

// Files (one capture, or a range of segments: their series add up) and the
// window of each, in seconds since that file's capture started (< 0: open).
struct WindowSpec {
  std::vector<std::string> files;
  double since_s = -1, until_s = -1;
  // The last this many seconds of each file, to its last commit (a segment
  // being written: gpuobsd's rolling comparison); < 0: unset.
  double last_s = -1;
};

struct Filters {
  int64_t pid = 0;                    // 0: every process
  std::string process;                // comm; '': every process
  std::string kernel;                 // substring of the kernel name (launches and GPU times only); '': all
  bool stacks = true;                 // false: keys without the stack (--no-stacks)
  std::string step_kernel, step_api;  // the step marker (exact names), if any
};

struct SideInfo {
  std::vector<std::string> files;
  int min_schema = 0, max_schema = 0;
  std::set<std::string> hosts, gpuobs_versions, unwinds;
  double seconds = 0;             // first to last launch or call of each file's window, summed
  uint64_t steps = 0;             // step markers seen
  uint64_t events = 0;            // launches + calls + copies read
  uint64_t gpu_timed = 0;         // launches and copies with a measured GPU time
  bool segments = false;          // a file is a gpuobsd segment (its memory counts start at the segment's start)
  std::set<std::string> kernels;  // kernel names launched
  std::set<std::string> stacks;   // signatures of the stacks behind launches and calls
};

struct Side {
  SideInfo info;
  std::map<Key, Series> series;
};

// Reads every file of `w` (each opened read-only and checked), adding its
// window's events to one Side. Errors (exit 2): a file that is no capture,
// a schema older than the reports read.
Result<Side> read_side(const WindowSpec& w, const Filters& f);

}  // namespace gpuobs::diff
