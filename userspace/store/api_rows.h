// Typed rows for the CUDA driver API families (schema/migrations/002): each
// captured call decoded with its ApiSpec into memory_ops, copies, stream_ops,
// syncs, modules or kernel_names (launches: store/launch_rows.h). Keeps the per-process
// state that turns handles into meaning: kernel names, live allocations.
// Used only by the writer thread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "decode/cuda_api.h"
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
  int write_memory(const ApiCallEvent& e, const ApiSpec& s, int64_t pid);
  int write_copy(const ApiCallEvent& e, const ApiSpec& s, int64_t pid);
  int write_stream(const ApiCallEvent& e, const ApiSpec& s, int64_t pid);
  int write_sync(const ApiCallEvent& e, const ApiSpec& s, int64_t pid);
  int write_module(const ApiCallEvent& e, const ApiSpec& s, int64_t pid);
  void bind_common(Stmt& st, const ApiCallEvent& e, const ApiSpec& s, int64_t pid);

  // Binds the current stack and vendor (parameters ?40 and ?41 of every insert), runs, resets.
  int run(Stmt& st) {
    if (stack_id_) st.bind(40, stack_id_); else st.bind_null(40);
    st.bind(41, vendor_);
    return st.exec();
  }

  sqlite3* db_ = nullptr;
  int64_t stack_id_ = 0;
  std::string_view vendor_ = "cuda";
  uint64_t unreadable_names_ = 0;
  Stmt memory_, copy_, stream_, sync_, module_, name_;
  // (process_id, handle) -> (name as given to the driver, demangled)
  std::map<std::pair<int64_t, uint64_t>, std::pair<std::string, std::string>> names_;
  struct LiveAllocation {
    int64_t id;  // memory_ops.id of the alloc/create/map
    uint64_t bytes;
    std::string kind;
  };
  // (process_id, address or physical handle) -> the allocation behind it
  std::map<std::pair<int64_t, uint64_t>, LiveAllocation> live_;
};

}  // namespace gpuobs
