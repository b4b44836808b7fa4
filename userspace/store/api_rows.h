// Typed rows for the CUDA driver API families (schema/migrations/002): each
// captured call, decoded by decode/api_record.h, bound into memory_ops,
// copies, stream_ops, syncs, gpu_modules or kernel_names (launches:
// store/launch_rows.h).
// Keeps the per-process state that turns handles into meaning: kernel names,
// live allocations. Used only by the writer thread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "catalogue/api_spec.h"
#include "decode/api_record.h"
#include "decode/decoder.h"
#include "store/db.h"

namespace gpuobs {

class ApiRowWriter {
 public:
  Status prepare(sqlite3* db);
  // Each returns the SQLite result code of its insert (SQLITE_DONE on success).
  int write_call(const ApiCallEvent& e, int64_t process_id);
  // A process is gone: its handles mean nothing any more.
  void forget_process(int64_t process_id);
  // The batch that stored the allocations was rolled back: their ids are void.
  void forget_allocations() { live_.clear(); }
  // The stack every row written next points to (0: none).
  void set_stack(int64_t stack_id) { stack_id_ = stack_id; }
  // Name lookups whose name string could not be read from the process.
  uint64_t unreadable_names() const { return unreadable_names_; }
  // A new segment (gpuobsd rotation) keeps the names learned so far: a
  // process resolves its kernels once, long before most of its launches.
  void carry_names_from(const ApiRowWriter& prev) { names_ = prev.names_; }
  // The demangled kernel name learned for a process's function handle.
  const std::string* name_of(int64_t pid, uint64_t handle) const;

 private:
  int write_memory(const MemoryCall& m, int64_t pid);
  int write_copy(const CopyCall& c, int64_t pid);
  int write_stream(const StreamCall& c, int64_t pid);
  int write_sync(const SyncCall& c, int64_t pid);
  int write_module(const ModuleCall& m, int64_t pid);
  int write_name(const ModuleCall& m, int64_t pid, const std::string& name, const std::string& demangled);

  using Param = Stmt::Param;
  // The named parameters every call table has (:ts ... :per_thread, :stack_id, :vendor).
  struct CallParams {
    Param ts, duration, process_id, tgid, tid, api, result, per_thread, stack_id, vendor;
  };
  // gpu_modules has no per_thread_stream column: per_thread_column false leaves it unbound.
  static CallParams call_params(Stmt& st, bool per_thread_column = true);
  // Binds the common columns, the current stack and the vendor; runs; resets.
  int run_call(Stmt& st, const CallParams& p, const CallCommon& c, int64_t pid);

  sqlite3* db_ = nullptr;
  int64_t stack_id_ = 0;
  std::string_view vendor_ = "cuda";
  uint64_t unreadable_names_ = 0;
  Stmt memory_, copy_, stream_, sync_, module_, name_;
  CallParams memory_p_, copy_p_, stream_p_, sync_p_, module_p_;
  struct {
    Param op, kind, address, bytes, stream, handle, flags, alloc_id;
  } mem_;
  struct {
    Param kind, direction, dst, src, bytes, value, stream, async;
  } cp_;
  struct {
    Param op, stream, event, handle, flags, priority;
  } so_;
  struct {
    Param target, stream, event, context, blocked_ns;
  } sy_;
  struct {
    Param op, kind, handle, source, path, name;
  } mod_;
  struct {
    Param ts, process_id, handle, kind, name, demangled, api, source, stack_id, vendor;
  } nm_;
  // (process_id, handle) -> (name as given to the driver, demangled)
  std::map<std::pair<int64_t, uint64_t>, std::pair<std::string, std::string>> names_;
  struct LiveAllocation {
    int64_t id;  // memory_ops.id of the alloc/create/map
    uint64_t bytes;
    ApiKind kind;
  };
  // (process_id, address or physical handle) -> the allocation behind it
  std::map<std::pair<int64_t, uint64_t>, LiveAllocation> live_;
};

}  // namespace gpuobs
