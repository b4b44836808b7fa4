#include "store/api_rows.h"

#include <cstring>

#include "common/demangle.h"
#include "events.h"

namespace gpuobs {
namespace {

// The columns every call table starts with (schema/migrations/002, 014), and their parameters.
constexpr const char* kCommon = "ts_mono_ns, duration_ns, process_id, tgid, tid, api_id, result, per_thread_stream";
constexpr const char* kCommonParams = ":ts, :duration, :process_id, :tgid, :tid, :api, :result, :per_thread";

// INSERT INTO table (common columns, cols, stack_id, vendor_id) VALUES (common parameters, params, :stack_id, :vendor)
std::string call_insert(const char* table, const char* cols, const char* params) {
  return std::string("INSERT INTO ") + table + " (" + kCommon + ", " + cols + ", stack_id, vendor_id) VALUES (" +
         kCommonParams + ", " + params + ", :stack_id, :vendor)";
}

}  // namespace

Status ApiRowWriter::prepare(sqlite3* db, StringTable* strings) {
  db_ = db;
  if (!strings) {
    own_strings_ = std::make_unique<StringTable>();
    if (auto s = own_strings_->prepare(db); !s) return s;
    strings = own_strings_.get();
  }
  strings_ = strings;
  auto stmt = [&](std::string sql) { return Stmt(db, sql); };
  memory_ = stmt(call_insert("memory_op_rows", "op_id, kind_id, address, bytes, stream, handle, flags, alloc_id",
                             ":op, :kind, :address, :bytes, :stream, :handle, :flags, :alloc_id"));
  // The shape of a copy: the call's columns but its time.
  copy_ = stmt(
      "INSERT INTO copy_shapes (process_id, tgid, tid, api_id, result, per_thread_stream, kind_id, direction_id, dst,"
      " src, bytes, value, stream, async, stack_id, vendor_id) VALUES (:process_id, :tgid, :tid, :api, :result,"
      " :per_thread, :kind, :direction, :dst, :src, :bytes, :value, :stream, :async, :stack_id, :vendor)");
  copy_row_ = stmt("INSERT INTO copy_rows (ts_mono_ns, duration_ns, shape_id) VALUES (:ts, :duration, :shape)");
  stream_ = stmt(call_insert("stream_op_rows", "op_id, stream, event, handle, flags, priority",
                             ":op, :stream, :event, :handle, :flags, :priority"));
  sync_ = stmt(call_insert("sync_rows", "target_id, stream, event, context, blocked_ns",
                           ":target, :stream, :event, :context, :blocked_ns"));
  context_ = stmt(call_insert("context_op_rows", "op_id, device, context, flags, ordinal, attribute, value",
                              ":op, :device, :context, :flags, :ordinal, :attribute, :value"));
  // gpu_modules has no per_thread_stream column.
  module_ = stmt(
      "INSERT INTO gpu_module_shapes (process_id, tgid, tid, api_id, result, op_id, kind_id, handle, source, path_id,"
      " name_id, stack_id, vendor_id) VALUES (:process_id, :tgid, :tid, :api, :result, :op, :kind, :handle, :source,"
      " :path, :name, :stack_id, :vendor)");
  module_row_ = stmt("INSERT INTO gpu_module_rows (ts_mono_ns, duration_ns, shape_id) VALUES (:ts, :duration, :shape)");
  name_ = stmt(
      "INSERT INTO kernel_name_rows (ts_mono_ns, process_id, handle, kind_id, name_id, demangled_id, api_id, source,"
      " stack_id, vendor_id) VALUES (:ts, :process_id, :handle, :kind, :name, :demangled, :api, :source, :stack_id,"
      " :vendor)");
  for (auto* s : {&memory_, &copy_, &stream_, &sync_, &module_, &name_, &copy_row_, &module_row_, &context_})
    if (!s->valid()) return make_error(std::string("cannot prepare API statements: ") + sqlite3_errmsg(db));
  // Every named parameter once, here: binding through them costs no lookup per row.
  memory_p_ = call_params(memory_);
  mem_ = {memory_.param(":op"),     memory_.param(":kind"),   memory_.param(":address"), memory_.param(":bytes"),
          memory_.param(":stream"), memory_.param(":handle"), memory_.param(":flags"),   memory_.param(":alloc_id")};
  copy_p_ = call_params(copy_, true, false);
  copy_row_p_ = {copy_row_.param(":ts"), copy_row_.param(":duration"), copy_row_.param(":shape")};
  module_row_p_ = {module_row_.param(":ts"), module_row_.param(":duration"), module_row_.param(":shape")};
  cp_ = {copy_.param(":kind"),  copy_.param(":direction"), copy_.param(":dst"),    copy_.param(":src"),
         copy_.param(":bytes"), copy_.param(":value"),     copy_.param(":stream"), copy_.param(":async")};
  stream_p_ = call_params(stream_);
  so_ = {stream_.param(":op"),     stream_.param(":stream"), stream_.param(":event"),
         stream_.param(":handle"), stream_.param(":flags"),  stream_.param(":priority")};
  sync_p_ = call_params(sync_);
  sy_ = {sync_.param(":target"), sync_.param(":stream"), sync_.param(":event"), sync_.param(":context"),
         sync_.param(":blocked_ns")};
  context_p_ = call_params(context_);
  ctx_ = {context_.param(":op"),    context_.param(":device"),  context_.param(":context"),
          context_.param(":flags"), context_.param(":ordinal"), context_.param(":attribute"),
          context_.param(":value")};
  module_p_ = call_params(module_, false, false);
  mod_ = {module_.param(":op"),     module_.param(":kind"), module_.param(":handle"),
          module_.param(":source"), module_.param(":path"), module_.param(":name")};
  nm_ = {name_.param(":ts"),       name_.param(":process_id"), name_.param(":handle"), name_.param(":kind"),
         name_.param(":name"),     name_.param(":demangled"),  name_.param(":api"),    name_.param(":source"),
         name_.param(":stack_id"), name_.param(":vendor")};
  for (auto* s : {&memory_, &copy_, &stream_, &sync_, &module_, &name_, &copy_row_, &module_row_, &context_})
    if (!s->unresolved().empty()) return make_error("API statement lacks parameters: " + s->unresolved());
  return {};
}

void ApiRowWriter::forget_process(int64_t pid) {
  names_.erase(names_.lower_bound({pid, 0}), names_.upper_bound({pid, UINT64_MAX}));
  live_.erase(live_.lower_bound({pid, 0}), live_.upper_bound({pid, UINT64_MAX}));
}

void ApiRowWriter::forget_batch_rows() {
  static_ids_.clear();
  // Shapes the batch inserted are gone with it; committed ones are inserted
  // once more when next used (a duplicate shape is harmless).
  copy_shapes_.clear();
  module_shapes_.clear();
  // Rows of earlier, committed batches are written once more: a duplicate
  // row is harmless, a missing one would leave a name without its row.
  for (auto& [key, known] : names_) known.stored = false;
}

void ApiRowWriter::carry_names_from(const ApiRowWriter& prev) {
  names_ = prev.names_;
  for (auto& [key, known] : names_) known.stored = false;
}

const std::string* ApiRowWriter::name_of(int64_t pid, uint64_t handle) const {
  auto it = names_.find({pid, handle});
  return it == names_.end() ? nullptr : &it->second.demangled;
}

int64_t ApiRowWriter::static_id(std::string_view text) {
  std::pair<const char*, size_t> key{text.data(), text.size()};
  if (auto it = static_ids_.find(key); it != static_ids_.end()) return it->second;
  int64_t id = strings_->intern(text);
  if (id) static_ids_.emplace(key, id);  // a failed insert is tried again
  else failed_id_ = true;
  return id;
}

std::optional<int64_t> ApiRowWriter::text_id(std::optional<std::string_view> text) {
  if (!text) return std::nullopt;
  int64_t id = strings_->intern(*text);
  if (!id) failed_id_ = true;
  return id;
}

int ApiRowWriter::write_call(const ApiCallEvent& e, int64_t pid) {
  learned_name_ = false;
  failed_id_ = false;
  const ApiSpec* s = api_by_id(e.api);
  if (!s) return SQLITE_MISMATCH;
  switch (s->family) {
    case Family::launch: return SQLITE_MISMATCH;      // store/launch_rows.h
    case Family::collective: return SQLITE_MISMATCH;  // store/nccl_rows.h
    case Family::memory: return write_memory(decode_memory(e, *s), pid);
    case Family::copy:
    case Family::memset: return write_copy(decode_copy(e, *s), pid);
    case Family::stream:
    case Family::event: return write_stream(decode_stream(e, *s), pid);
    case Family::sync: return write_sync(decode_sync(e, *s), pid);
    case Family::module: return write_module(decode_module(e, *s), pid);
    case Family::context: return write_context(decode_context(e, *s), pid);
  }
  return SQLITE_MISMATCH;
}

ApiRowWriter::CallParams ApiRowWriter::call_params(Stmt& st, bool per_thread_column, bool timed) {
  return {timed ? st.param(":ts") : Param{},
          timed ? st.param(":duration") : Param{},
          st.param(":process_id"),
          st.param(":tgid"),
          st.param(":tid"),
          st.param(":api"),
          st.param(":result"),
          per_thread_column ? st.param(":per_thread") : Param{},
          st.param(":stack_id"),
          st.param(":vendor")};
}

int ApiRowWriter::run_call(Stmt& st, const CallParams& p, const CallCommon& c, int64_t pid) {
  if (p.ts.index) st.bind(p.ts, c.ts_ns).bind(p.duration, c.duration_ns);
  st.bind(p.process_id, pid)
      .bind(p.tgid, c.tgid)
      .bind(p.tid, c.tid)
      .bind(p.api, static_id(c.api))
      .bind(p.result, c.result)
      .bind(p.stack_id, stack_id_ ? std::optional<int64_t>(stack_id_) : std::nullopt)
      .bind(p.vendor, static_id(to_string(c.vendor)));
  if (p.per_thread.index) st.bind(p.per_thread, int64_t{c.per_thread});
  if (failed_id_) {  // a row must not point at a string that is not there: it fails instead
    st.reset();
    return SQLITE_ERROR;
  }
  return st.exec();
}

int ApiRowWriter::write_memory(const MemoryCall& m, int64_t pid) {
  std::optional<uint64_t> bytes = m.bytes;
  std::optional<int64_t> alloc_id;
  ApiKind kind = m.kind;
  if (m.life == MemoryCall::Life::ends && m.call.ok) {
    auto it = live_.find({pid, m.key});
    if (it != live_.end()) {
      alloc_id = it->second.id;
      kind = it->second.kind;  // cuMemFree_v2 also frees managed and pitched memory
      if (!bytes) bytes = it->second.bytes;
      live_.erase(it);
    }
  }
  memory_.bind(mem_.op, static_id(to_string(m.op)))
      .bind(mem_.kind, static_id(to_string(kind)))
      .bind(mem_.address, m.address)
      .bind(mem_.bytes, bytes)
      .bind(mem_.stream, m.stream)
      .bind(mem_.handle, m.handle)
      .bind(mem_.flags, m.flags)
      .bind(mem_.alloc_id, alloc_id);
  int rc = run_call(memory_, memory_p_, m.call, pid);
  if (rc == SQLITE_DONE && m.life == MemoryCall::Life::begins && m.call.ok && m.key)
    live_[{pid, m.key}] = LiveAllocation{sqlite3_last_insert_rowid(db_), bytes.value_or(0), kind};
  return rc;
}

int ApiRowWriter::insert_row(Stmt& row, const decltype(copy_row_p_)& p, const CallCommon& c, int64_t shape) {
  return row.bind(p.ts, c.ts_ns).bind(p.duration, c.duration_ns).bind(p.shape, shape).exec();
}

int ApiRowWriter::write_copy(const CopyCall& c, int64_t pid) {
  CopyShape k;
  std::memset(&k, 0, sizeof k);
  k.pid = pid, k.stack = stack_id_, k.api_id = static_id(c.call.api), k.vendor_id = static_id(to_string(c.call.vendor));
  k.kind_id = static_id(c.memset ? "memset" : "copy");
  k.direction_id = c.memset ? 0 : static_id(to_string(c.direction));
  k.result = c.call.result.value_or(0), k.has_result = c.call.result.has_value();
  k.dst = c.dst, k.src = c.src.value_or(0), k.has_src = c.src.has_value(), k.bytes = c.bytes;
  k.value = c.value.value_or(0), k.has_value = c.value.has_value();
  k.stream = c.stream.value_or(0), k.has_stream = c.stream.has_value();
  k.tgid = c.call.tgid, k.tid = c.call.tid, k.per_thread = c.call.per_thread, k.async = c.async;
  if (failed_id_) return SQLITE_ERROR;  // a row must not point at a string that is not there
  const uint64_t h = InternTable<CopyShape>::hash(k);
  int64_t shape = copy_shapes_.find(k, h);
  if (!shape) {
    copy_.bind(cp_.kind, k.kind_id)
        .bind(cp_.direction, c.memset ? std::nullopt : std::optional<int64_t>(k.direction_id))
        .bind(cp_.dst, c.dst)
        .bind(cp_.src, c.src)
        .bind(cp_.bytes, c.bytes)
        .bind(cp_.value, c.value)
        .bind(cp_.stream, c.stream)
        .bind(cp_.async, int64_t{c.async});
    if (int rc = run_call(copy_, copy_p_, c.call, pid); rc != SQLITE_DONE) return rc;
    shape = sqlite3_last_insert_rowid(db_);
    copy_shapes_.insert(k, h, shape);
  }
  return insert_row(copy_row_, copy_row_p_, c.call, shape);
}

int ApiRowWriter::write_stream(const StreamCall& c, int64_t pid) {
  stream_.bind(so_.op, static_id(to_string(c.op)))
      .bind(so_.stream, c.stream)
      .bind(so_.event, c.event)
      .bind(so_.handle, c.handle)
      .bind(so_.flags, c.flags)
      .bind(so_.priority, c.priority);
  return run_call(stream_, stream_p_, c.call, pid);
}

int ApiRowWriter::write_context(const ContextCall& c, int64_t pid) {
  context_.bind(ctx_.op, static_id(to_string(c.op)))
      .bind(ctx_.device, c.device)
      .bind(ctx_.context, c.context)
      .bind(ctx_.flags, c.flags)
      .bind(ctx_.ordinal, c.ordinal)
      .bind(ctx_.attribute, c.attribute)
      .bind(ctx_.value, c.value);
  return run_call(context_, context_p_, c.call, pid);
}

int ApiRowWriter::write_sync(const SyncCall& c, int64_t pid) {
  sync_.bind(sy_.target, static_id(to_string(c.target)))
      .bind(sy_.stream, c.stream)
      .bind(sy_.event, c.event)
      .bind(sy_.context, c.context)
      .bind(sy_.blocked_ns, c.blocked_ns);
  return run_call(sync_, sync_p_, c.call, pid);
}

int ApiRowWriter::write_module(const ModuleCall& m, int64_t pid) {
  ModuleShape k;
  std::memset(&k, 0, sizeof k);
  std::optional<int64_t> path = text_id(m.path), name = text_id(m.name);
  k.pid = pid, k.stack = stack_id_, k.api_id = static_id(m.call.api), k.vendor_id = static_id(to_string(m.call.vendor));
  k.op_id = static_id(to_string(m.op)), k.kind_id = static_id(to_string(m.kind));
  k.path_id = path.value_or(0), k.has_path = path.has_value(), k.name_id = name.value_or(0);
  k.has_name = name.has_value();
  k.result = m.call.result.value_or(0), k.has_result = m.call.result.has_value();
  k.handle = m.handle.value_or(0), k.has_handle = m.handle.has_value();
  k.parent = m.parent.value_or(0), k.has_parent = m.parent.has_value();
  k.tgid = m.call.tgid, k.tid = m.call.tid;
  int rc = SQLITE_ERROR;
  if (!failed_id_) {  // a row must not point at a string that is not there
    const uint64_t h = InternTable<ModuleShape>::hash(k);
    int64_t shape = module_shapes_.find(k, h);
    if (!shape) {
      module_.bind(mod_.op, k.op_id)
          .bind(mod_.kind, k.kind_id)
          .bind(mod_.handle, m.handle)
          .bind(mod_.source, m.parent)
          .bind(mod_.path, path)
          .bind(mod_.name, name);
      rc = run_call(module_, module_p_, m.call, pid);
      if (rc == SQLITE_DONE) {
        shape = sqlite3_last_insert_rowid(db_);
        module_shapes_.insert(k, h, shape);
      }
    }
    if (shape) rc = insert_row(module_row_, module_row_p_, m.call, shape);
  }
  // get_function / get_kernel / kernel_function / register_function: learn handle -> name.
  switch (m.names) {
    case ModuleCall::Names::nothing: return rc;
    case ModuleCall::Names::from_kernel: {
      auto it = names_.find({pid, m.kernel});  // the CUkernel's name
      if (it == names_.end()) return rc;
      // No copy: a std::map entry stays in place when another is replaced,
      // and write_name replaces this one (handle == kernel) only by itself.
      int rc2 = write_name(m, pid, it->second.name, &it->second.demangled);
      return rc != SQLITE_DONE ? rc : rc2;
    }
    case ModuleCall::Names::from_text: {
      if (!m.name) {  // the name could not be read: launches stay explicitly unnamed
        ++unreadable_names_;
        return rc;
      }
      int rc2 = write_name(m, pid, *m.name, nullptr);
      return rc != SQLITE_DONE ? rc : rc2;
    }
  }
  return rc;
}

// A kernel_names row only when the handle's name is news to this file: the
// first lookup, a handle reused for another kernel, or the first lookup
// after a rotation or a rolled-back batch. A lookup that repeats what is
// known is its gpu_modules row alone (PyTorch on CUDA 13 looks its kernels
// up again and again), and costs no demangling.
int ApiRowWriter::write_name(const ModuleCall& m, int64_t pid, std::string_view name, const std::string* demangled) {
  uint64_t made = m.handle.value_or(0);
  auto it = names_.find({pid, made});
  bool same = it != names_.end() && it->second.name == name && (!demangled || it->second.demangled == *demangled);
  if (same && it->second.stored) return SQLITE_DONE;
  if (!same) {
    // Both texts are copied before the entry is replaced: they may view it.
    KnownName known{std::string(name), demangled ? *demangled : demangle(name), false};
    it = names_.insert_or_assign({pid, made}, std::move(known)).first;
    learned_name_ = true;
  }
  KnownName& known = it->second;
  failed_id_ = false;
  name_.bind(nm_.ts, m.call.ts_ns)
      .bind(nm_.process_id, pid)
      .bind(nm_.handle, made)
      .bind(nm_.kind, static_id(to_string(m.kind)))
      .bind(nm_.name, *text_id(known.name))
      .bind(nm_.demangled, *text_id(known.demangled))
      .bind(nm_.api, static_id(m.call.api))
      .bind(nm_.source, m.parent)
      .bind(nm_.stack_id, stack_id_ ? std::optional<int64_t>(stack_id_) : std::nullopt)
      .bind(nm_.vendor, static_id(to_string(m.call.vendor)));
  if (failed_id_) {
    name_.reset();
    return SQLITE_ERROR;
  }
  int rc = name_.exec();
  known.stored = rc == SQLITE_DONE;
  return rc;
}

}  // namespace gpuobs
