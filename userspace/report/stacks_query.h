// Stacks weighted by a measure (launches, calls, bytes copied or allocated,
// blocked time, ioctls) and their frames: what `gpuobs stacks` prints and
// `gpuobs export folded` writes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "store/db.h"

namespace gpuobs {

enum class StackMeasure { launches, calls, copied, allocated, blocked, ioctls };
Result<StackMeasure> parse_measure(std::string_view s);
const char* measure_unit(StackMeasure m);  // "launches", "calls", "bytes", "ns", "ioctls"

struct StackFilter {
  std::optional<int64_t> pid;  // tgid
  std::string kernel;          // substring of the kernel name (launches only)
  std::string api;             // exact API name
  bool by_process = false;     // weigh (process, stack, leaf): StackLeaf.pid and comm set
};

// Weight of each (stack, leaf): the leaf is what happened at the top of the
// stack: the kernel launched, the API called, the ioctl made.
struct StackLeaf {
  int64_t stack_id;
  std::string leaf;
  int64_t weight;
  // StackFilter.by_process: the process the weight belongs to (else 0, "").
  int64_t pid = 0;
  std::string comm;
};
Result<std::vector<StackLeaf>> weigh_stacks(Db& db, StackMeasure m, const StackFilter& f);

struct StackFrame {
  std::string module;  // path
  std::string symbol;  // empty: unknown
  int64_t symbol_offset = 0;
  std::string file;  // empty: no line information
  int64_t line = 0;
  int64_t offset = 0;   // file offset of the return address
  bool python = false;  // a CPython frame (frames.kind 'python')
};
struct StackInfo {
  std::string end_reason;
  // Whose Python frames follow the native ones: "calling", "main" (the
  // thread ran no Python: the main thread's), empty: no Python walk.
  std::string python_thread;
  std::vector<StackFrame> frames;  // innermost first
};
Result<std::map<int64_t, StackInfo>> load_stacks(Db& db, const std::set<int64_t>& ids);

// The first of the main thread's Python frames in s (python_thread "main":
// the calling thread ran no Python), or s.frames.size() when it has none:
// where the outputs mark that the frames are another thread's.
size_t main_thread_python_start(const StackInfo& s);

// "symbol", or "module+0xoffset" when the frame has no symbol.
std::string frame_label(const StackFrame& f);

}  // namespace gpuobs
