// Turns the raw return addresses of a record into an interned stack id, in
// the capture thread, while the process still exists: per process, a snapshot
// of its mappings (read when it maps a GPU library or is first seen, and
// again when an address of a later record falls outside every known mapping)
// maps each address to (file, file offset). Files are identified by (dev, inode) and kept open, so they
// can be symbolized after the process has gone. Identical stacks from any
// process share one id: frames are (module, offset), not addresses.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "events.h"
#include "stacks/cfi_unwinder.h"
#include "stacks/proc_maps.h"
#include "stacks/python_process.h"
#include "stacks/stack_types.h"
#include "stacks/table_builder.h"

namespace gpuobs {

struct StackStats {
  uint64_t with_stack = 0;         // records that carried a stack
  uint64_t empty = 0;              // ... with no usable frame
  uint64_t stacks = 0;             // distinct stacks
  uint64_t frames = 0;             // distinct (module, offset) frames
  uint64_t modules = 0;            // distinct files (and pseudo-modules)
  uint64_t maps_reads = 0;         // /proc/PID/maps snapshots taken
  uint64_t maps_unreadable = 0;    // the process was gone before its mappings were read
  uint64_t walks_broken = 0;       // stacks cut at an address outside code (a frame without a frame pointer)
  uint64_t sp_frames_dropped = 0;  // records whose [sp] word was not a return address: caller missing
  uint64_t files_unopened = 0;     // mapped files that could not be opened (no symbols)
  // --unwind bpf
  uint64_t bpf_unwound = 0;   // records unwound in BPF
  uint64_t table_rows = 0;    // unwind rows loaded
  uint64_t table_files = 0;   // files with a table
  uint64_t table_failed = 0;  // files without one (no .eh_frame_hdr, unreadable, table full)
  // Python frames (issue 18)
  uint64_t py_stacks = 0;        // records that carried Python frames
  uint64_t py_frames = 0;        // distinct Python frames
  uint64_t py_torn = 0;          // records whose Python frames ended at a frame without a code object
  uint64_t py_gone = 0;          // ... at a code object not read before the process exited
  uint64_t py_placed_outer = 0;  // records whose native walk did not reach the interpreter: Python frames appended
};

// StackDef.flags bit (beside GPUOBS_STACK_F_*): a DWARF walk ran off the end
// of the copied stack (end_reason 'copy': a larger --stack-copy goes further).
constexpr uint32_t kStackCopyEnd = 1u << 16;

class StackResolver {
 public:
  // Receives definitions (ModuleDef, FrameDef, StackDef), in order, before
  // the stack id that needs them is returned.
  struct Sink {
    std::function<void(const ModuleDef&)> module;
    std::function<void(const FrameDef&)> frame;
    std::function<void(const StackDef&)> stack;
  };
  // now: CLOCK_MONOTONIC, the clock of the records' timestamps (tests pass
  // their own).
  explicit StackResolver(Sink sink, std::string proc_root = "/proc", std::function<uint64_t()> now = {});

  // 0 when the record has no stack.
  int64_t resolve(uint32_t tgid, const RawStack& raw, uint64_t ts_ns);
  // The process just mapped code (a GPU library, bpf/library.bpf.h): take
  // its mappings now. A short-lived process may be gone by the time its
  // first stack is resolved; this snapshot still names its frames.
  void on_mapped(uint32_t tgid);
  void on_fork(uint32_t parent, uint32_t child);
  void on_exec(uint32_t tgid);
  void on_exit(uint32_t tgid);
  // The process runs this CPython interpreter: its records' Python frames
  // are named and merged into their stacks (python_process.h).
  void set_python(uint32_t tgid, std::shared_ptr<PythonProcess> py);
  const PythonProcess* python(uint32_t tgid) const;
  // --unwind dwarf: frames kept per stack (--stack-depth; BPF's walks stop
  // there by themselves).
  void set_max_frames(size_t n) { max_frames_ = n; }
  // The writer lost definitions (a rolled-back batch): send them all again.
  void redefine_all();
  // --unwind bpf: unwind tables go into rows[0 .. capacity) and each
  // process's mapping table to publish(tgid, table) (null: delete it).
  void enable_bpf_unwind(uint64_t* rows, uint32_t capacity,
                         std::function<void(uint32_t, const gpuobs_unwind_proc*)> publish);
  // Publishes tables finished since the last call (the capture loop calls it).
  void tick() {
    if (builder_) collect_tables();
  }
  const StackStats& stats() const { return stats_; }
  const UnwindStats& unwind_stats() const { return unwinder_.stats(); }

 private:
  struct Range {
    uint64_t start, end, offset;
    bool exec;
    const ModuleDef* module;
  };
  struct Process {
    std::vector<Range> ranges;  // sorted by start
    std::shared_ptr<PythonProcess> py;
    bool loaded = false;
    uint64_t read_ns = 0;        // when the last snapshot was read (now_)
    uint64_t reread_gap_ns = 0;  // the least time from that read to a re-read on a miss
    // (flags, raw addresses) -> stack id: the same call site repeats.
    struct Cached {
      int64_t stack_id;
      bool sp_dropped;    // counted again for every record with this stack
      bool python;        // ... and so is a stack with Python frames
      uint64_t retry_ns;  // 0: final; else resolved from a stale snapshot, again from this time (now_)
    };
    std::unordered_map<std::string, Cached> cache;
  };
  // False when the process's maps could not be read (the snapshot before
  // stays); counted, and remembered for a process never read, only when
  // count_unreadable.
  bool load(Process& p, uint32_t tgid, bool count_unreadable = true);
  void publish_tables(const Process& p, uint32_t tgid);
  // Takes the tables the builder finished and republishes the processes
  // that map those files.
  void collect_tables();
  struct FileTable {
    bool requested = false, ok = false;
    uint32_t row_start = 0, row_count = 0;
    std::vector<TableBuilder::Done::Load> loads;
  };
  const Range* find(const Process& p, uint64_t ip) const;
  const ModuleDef* module_for(uint32_t tgid, const Mapping& m);
  const ModuleDef* pseudo(const std::string& name);
  int64_t frame_id(int64_t module_id, uint64_t offset);
  // The Python frames of a record as frame ids in groups, one group per
  // interpreter call (innermost first); py_status as StackDef's.
  void python_groups(Process& p, const RawStack& raw, std::vector<std::vector<int64_t>>& groups, int& py_status);
  int64_t python_frame_id(const PyCode& code, int line);

  Sink sink_;
  CfiUnwinder unwinder_;
  std::unique_ptr<TableBuilder> builder_;
  std::function<void(uint32_t, const gpuobs_unwind_proc*)> publish_;
  std::map<int64_t, FileTable> tables_;  // by module id
  std::string proc_root_;
  std::function<uint64_t()> now_;
  size_t max_frames_ = GPUOBS_STACK_MAX;
  StackStats stats_;
  std::unordered_map<uint32_t, Process> procs_;
  std::map<std::pair<uint64_t, uint64_t>, std::unique_ptr<ModuleDef>> files_;  // (dev, inode)
  std::map<std::string, std::unique_ptr<ModuleDef>> pseudo_;
  std::map<std::string, std::unique_ptr<ModuleDef>> py_files_;  // Python sources, by co_filename
  std::vector<const ModuleDef*> modules_;                       // by id - 1
  std::map<std::pair<int64_t, uint64_t>, int64_t> frames_;
  std::vector<FrameDef> frame_defs_;
  std::map<std::tuple<uint32_t, int, uint32_t, std::vector<int64_t>>, int64_t> stacks_;
  std::vector<StackDef> stack_defs_;
  std::string key_;  // resolve()'s cache key, reused from record to record
};

}  // namespace gpuobs
