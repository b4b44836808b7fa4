// Typed rows for the CUDA driver API families (schema/migrations/002, 014):
// each captured call, decoded by decode/api_record.h, bound into
// memory_op_rows, copy_rows, stream_op_rows, sync_rows, gpu_module_rows or
// kernel_name_rows (read through the views memory_ops, copies, ...; launches:
// store/launch_rows.h). Every text is bound as its id in `strings`.
// Keeps the per-process state that turns handles into meaning: kernel names,
// live allocations. Used only by the writer thread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "catalogue/api_spec.h"
#include "decode/api_record.h"
#include "decode/decoder.h"
#include "store/db.h"
#include "store/intern_table.h"
#include "store/string_table.h"

namespace gpuobs {

class ApiRowWriter {
 public:
  // strings: the writer's string table (it outlives this writer); none: a
  // table of its own (a writer alone on db, as in tests).
  Status prepare(sqlite3* db, StringTable* strings = nullptr);
  // Each returns the SQLite result code of its insert (SQLITE_DONE on success).
  int write_call(const ApiCallEvent& e, int64_t process_id);
  // Whether the last write_call taught a (process, handle) a name it did not
  // have: only then can a launch's kernel name have changed.
  bool learned_name() const { return learned_name_; }
  // A process is gone: its handles mean nothing any more.
  void forget_process(int64_t process_id);
  // The batch that stored the allocations was rolled back: their ids are void.
  void forget_allocations() { live_.clear(); }
  // The batch that stored strings and kernel_names rows was rolled back: the
  // string ids cached are void (the StringTable reloads), and each name's
  // next lookup writes its row again.
  void forget_batch_rows();
  // The stack every row written next points to (0: none).
  void set_stack(int64_t stack_id) { stack_id_ = stack_id; }
  // Name lookups whose name string could not be read from the process.
  uint64_t unreadable_names() const { return unreadable_names_; }
  // A new segment (gpuobsd rotation) keeps the names learned so far: a
  // process resolves its kernels once, long before most of its launches.
  // The new file has none of their kernel_names rows: the next lookup of
  // each writes one there.
  void carry_names_from(const ApiRowWriter& prev);
  // The demangled kernel name learned for a process's function handle.
  const std::string* name_of(int64_t pid, uint64_t handle) const;

 private:
  int write_memory(const MemoryCall& m, int64_t pid);
  int write_copy(const CopyCall& c, int64_t pid);
  int write_stream(const StreamCall& c, int64_t pid);
  int write_sync(const SyncCall& c, int64_t pid);
  int write_module(const ModuleCall& m, int64_t pid);
  int write_context(const ContextCall& c, int64_t pid);
  // demangled: the name's demangled form if known (none: demangle name).
  int write_name(const ModuleCall& m, int64_t pid, std::string_view name, const std::string* demangled);
  // The strings id of a text of static storage (catalogue symbols, the
  // to_string of an enum), cached by address: a row hashes no text. 0: the
  // insert into strings failed.
  int64_t static_id(std::string_view text);
  // Any text (kernel names, paths); nullopt stays NULL.
  std::optional<int64_t> text_id(std::optional<std::string_view> text);

  using Param = Stmt::Param;
  // The named parameters every call table has (:ts ... :per_thread, :stack_id, :vendor).
  struct CallParams {
    Param ts, duration, process_id, tgid, tid, api, result, per_thread, stack_id, vendor;
  };
  // gpu_modules has no per_thread_stream column: per_thread_column false leaves it unbound;
  // a shape statement has no time: timed false leaves :ts and :duration unbound.
  static CallParams call_params(Stmt& st, bool per_thread_column = true, bool timed = true);
  // Binds the common columns, the current stack and the vendor; runs; resets.
  int run_call(Stmt& st, const CallParams& p, const CallCommon& c, int64_t pid);

  sqlite3* db_ = nullptr;
  StringTable* strings_ = nullptr;
  std::unique_ptr<StringTable> own_strings_;
  int64_t stack_id_ = 0;
  uint64_t unreadable_names_ = 0;
  bool learned_name_ = false;
  bool failed_id_ = false;  // a text_id or static_id of this row failed: the row is not written
  Stmt memory_, copy_, stream_, sync_, module_, name_, context_;
  CallParams memory_p_, copy_p_, stream_p_, sync_p_, module_p_, context_p_;
  // Copies and module calls as launches are stored (schema 14): a row holds
  // the time, the duration and a shape id; the shape, everything else, once.
  Stmt copy_row_, module_row_;
  struct {
    Param ts, duration, shape;
  } copy_row_p_, module_row_p_;
  // Keys are zero-filled before they are set (padding included): hashed as bytes.
  struct CopyShape {
    int64_t pid, stack, api_id, vendor_id, kind_id, direction_id, result;
    uint64_t dst, src, bytes, value, stream;
    uint32_t tgid, tid;
    uint8_t has_result, has_src, has_value, has_stream, per_thread, async, pad[2];
  };
  struct ModuleShape {
    int64_t pid, stack, api_id, vendor_id, op_id, kind_id, path_id, name_id, result;
    uint64_t handle, parent;
    uint32_t tgid, tid;
    uint8_t has_result, has_handle, has_parent, has_path, has_name, pad[3];
  };
  InternTable<CopyShape> copy_shapes_;
  InternTable<ModuleShape> module_shapes_;
  // Inserts a call's row: its time, its duration and its shape. SQLite's code.
  int insert_row(Stmt& row, const decltype(copy_row_p_)& p, const CallCommon& c, int64_t shape);
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
    Param op, device, context, flags, ordinal, attribute, value;
  } ctx_;
  struct {
    Param op, kind, handle, source, path, name;
  } mod_;
  struct {
    Param ts, process_id, handle, kind, name, demangled, api, source, stack_id, vendor;
  } nm_;
  struct KnownName {
    std::string name;       // as given to the driver
    std::string demangled;  // what launches show
    bool stored = false;    // this file has its kernel_names row
  };
  // (process_id, handle) -> its name
  std::map<std::pair<int64_t, uint64_t>, KnownName> names_;
  struct AddressHash {
    size_t operator()(const std::pair<const char*, size_t>& k) const {
      return std::hash<const void*>{}(k.first) ^ (k.second * 0x9e3779b97f4a7c15ull);
    }
  };
  // (address, length) of a static text -> its strings id
  std::unordered_map<std::pair<const char*, size_t>, int64_t, AddressHash> static_ids_;
  struct LiveAllocation {
    int64_t id;  // memory_ops.id of the alloc/create/map
    uint64_t bytes;
    ApiKind kind;
  };
  // (process_id, address or physical handle) -> the allocation behind it
  std::map<std::pair<int64_t, uint64_t>, LiveAllocation> live_;
};

}  // namespace gpuobs
