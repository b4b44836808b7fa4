#include "store/api_rows.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <tuple>

#include "events.h"

namespace gpuobs {
namespace {

// Common leading columns of every call table (schema/migrations/002).
constexpr const char* kCommon = "ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, per_thread_stream";

std::string demangle(const std::string& name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out(d);
  std::free(d);
  return out;
}

uint64_t arg(const ApiCallEvent& e, uint8_t pos) { return pos ? e.args[(pos - 1) & 7] : 0; }
// A 32-bit argument (unsigned int flags, int modes) in a 64-bit register: the
// upper half is unspecified by the ABI.
uint64_t arg32(const ApiCallEvent& e, uint8_t pos) { return arg(e, pos) & 0xffffffffu; }
// A memset value of 1, 2 or 4 bytes.
uint64_t arg_bytes(const ApiCallEvent& e, uint8_t pos, uint8_t width) {
  return width >= 8 ? arg(e, pos) : arg(e, pos) & ((1ull << (8 * width)) - 1);
}
bool ok(const ApiCallEvent& e) { return !(e.flags & GPUOBS_CALL_F_RETURNED) || e.ret == 0; }

template <class T>
T read_at(const std::string& blob, size_t off) {
  T v{};
  if (off + sizeof(T) <= blob.size()) std::memcpy(&v, blob.data() + off, sizeof(T));
  return v;
}

// CUmemorytype: 1 host, 2 device, 3 array, 4 unified (cuda.h).
char memtype_letter(uint32_t t) {
  switch (t) {
    case 1: return 'H';
    case 2: return 'D';
    case 3: return 'A';
    case 4: return 'U';
  }
  return '?';
}

// CUDA_MEMCPY2D (128 B) / CUDA_MEMCPY3D (200 B) offsets, from cuda.h 13.0
// compiled with gcc x86-64: src memory type, host, device, array; then dst.
struct CopyDesc {
  size_t src_type, src_host, dst_type, dst_host, width, height, depth;
};
constexpr CopyDesc kCopy2D{16, 24, 72, 80, 112, 120, 0};
constexpr CopyDesc kCopy3D{32, 40, 120, 128, 176, 184, 192};

uint64_t desc_address(const std::string& blob, size_t type_off, size_t host_off) {
  switch (read_at<uint32_t>(blob, type_off)) {
    case 1: return read_at<uint64_t>(blob, host_off);       // host pointer
    case 3: return read_at<uint64_t>(blob, host_off + 16);  // CUarray
    default: return read_at<uint64_t>(blob, host_off + 8);  // device or unified pointer
  }
}

// hipMemcpyKind (driver_types.h): what the caller declared.
std::string hip_copy_direction(uint64_t kind) {
  switch (kind) {
    case 0: return "HtoH";
    case 1: return "HtoD";
    case 2: return "DtoH";
    case 3: return "DtoD";
    case 4: return "default";
    case 1024: return "DtoD";  // hipMemcpyDeviceToDeviceNoCU
  }
  return "unknown";
}

}  // namespace

Status ApiRowWriter::prepare(sqlite3* db) {
  db_ = db;
  auto stmt = [&](std::string sql) { return Stmt(db, sql); };
  memory_ = stmt(std::string("INSERT INTO memory_ops (") + kCommon +
                 ", op, kind, address, bytes, stream, handle, flags, alloc_id, stack_id, vendor) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?40,?41)");
  copy_ = stmt(std::string("INSERT INTO copies (") + kCommon +
               ", kind, direction, dst, src, bytes, value, stream, async, stack_id, vendor) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?40,?41)");
  stream_ = stmt(std::string("INSERT INTO stream_ops (") + kCommon +
                 ", op, stream, event, handle, flags, priority, stack_id, vendor) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?40,?41)");
  sync_ = stmt(std::string("INSERT INTO syncs (") + kCommon +
               ", target, stream, event, context, blocked_ns, stack_id, vendor) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?40,?41)");
  module_ = stmt("INSERT INTO gpu_modules (ts_mono_ns, duration_ns, process_id, tgid, tid, api, result, op, kind,"
                 " handle, source, path, name, stack_id, vendor) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?40,?41)");
  name_ = stmt("INSERT INTO kernel_names (ts_mono_ns, process_id, handle, kind, name, demangled, api, source, stack_id,"
               " vendor) VALUES (?,?,?,?,?,?,?,?,?40,?41)");
  for (auto* s : {&memory_, &copy_, &stream_, &sync_, &module_, &name_})
    if (!s->valid()) return make_error(std::string("cannot prepare API statements: ") + sqlite3_errmsg(db));
  return {};
}

void ApiRowWriter::forget_process(int64_t pid) {
  names_.erase(names_.lower_bound({pid, 0}), names_.upper_bound({pid, UINT64_MAX}));
  live_.erase(live_.lower_bound({pid, 0}), live_.upper_bound({pid, UINT64_MAX}));
}

const std::string* ApiRowWriter::name_of(int64_t pid, uint64_t handle) const {
  auto it = names_.find({pid, handle});
  return it == names_.end() ? nullptr : &it->second.second;
}

int ApiRowWriter::write_call(const ApiCallEvent& e, int64_t pid) {
  const ApiSpec* s = api_by_id(e.api);
  if (!s) return SQLITE_MISMATCH;
  vendor_ = s->vendor;
  switch (s->family) {
    case Family::launch: return SQLITE_MISMATCH;  // store/launch_rows.h
    case Family::memory: return write_memory(e, *s, pid);
    case Family::copy:
    case Family::memset: return write_copy(e, *s, pid);
    case Family::stream:
    case Family::event: return write_stream(e, *s, pid);
    case Family::sync: return write_sync(e, *s, pid);
    case Family::module: return write_module(e, *s, pid);
  }
  return SQLITE_MISMATCH;
}

void ApiRowWriter::bind_common(Stmt& st, const ApiCallEvent& e, const ApiSpec& s, int64_t pid) {
  bool returned = e.flags & GPUOBS_CALL_F_RETURNED;
  st.bind(1, e.hdr.ts_ns);
  if (returned) st.bind(2, e.duration_ns); else st.bind_null(2);
  st.bind(3, pid).bind(4, e.hdr.tgid).bind(5, e.hdr.tid).bind(6, s.symbol);
  if (returned && !s.no_result) st.bind(7, e.ret); else st.bind_null(7);
  st.bind(8, int64_t{s.per_thread});
}

int ApiRowWriter::write_memory(const ApiCallEvent& e, const ApiSpec& s, int64_t pid) {
  bool out_ok = e.flags & GPUOBS_CALL_F_OUT_READ;
  uint64_t bytes = arg(e, s.bytes) * (s.count ? arg(e, s.count) : 1);
  uint64_t address = 0, handle = arg(e, s.handle);
  std::optional<int64_t> alloc_id;
  std::string kind(s.kind);
  bool has_bytes = s.bytes != 0;
  if (s.op == "alloc") address = out_ok ? e.out_value : 0;
  else if (s.op == "create") handle = out_ok ? e.out_value : 0;
  else address = arg(e, s.dst);
  // The key of an allocation: its address, or the physical handle for create/release.
  bool by_handle = s.op == "create" || s.op == "release";
  uint64_t key = by_handle ? handle : address;
  if ((s.op == "free" || s.op == "release" || s.op == "unmap") && ok(e)) {
    auto it = live_.find({pid, key});
    if (it != live_.end()) {
      alloc_id = it->second.id;
      kind = it->second.kind;  // cuMemFree_v2 also frees managed and pitched memory
      if (!has_bytes) bytes = it->second.bytes;
      has_bytes = true;
      live_.erase(it);
    }
  }
  bind_common(memory_, e, s, pid);
  memory_.bind(9, s.op).bind(10, kind);
  if (address || s.op != "create") memory_.bind(11, address); else memory_.bind_null(11);
  if (has_bytes) memory_.bind(12, bytes); else memory_.bind_null(12);
  if (s.stream) memory_.bind(13, arg(e, s.stream)); else memory_.bind_null(13);
  if (handle) memory_.bind(14, handle); else memory_.bind_null(14);
  // cuMemCreate/cuMemMap take unsigned long long flags; the others unsigned int.
  bool flags64 = s.op == "create" || s.op == "map";
  if (s.flags) memory_.bind(15, flags64 ? arg(e, s.flags) : arg32(e, s.flags)); else memory_.bind_null(15);
  if (alloc_id) memory_.bind(16, *alloc_id); else memory_.bind_null(16);
  int rc = run(memory_);
  if ((s.op == "alloc" || s.op == "create" || s.op == "map") && ok(e) && key)
    live_[{pid, key}] = LiveAllocation{sqlite3_last_insert_rowid(db_), bytes, kind};
  return rc;
}

int ApiRowWriter::write_copy(const ApiCallEvent& e, const ApiSpec& s, int64_t pid) {
  bool memset = s.family == Family::memset;
  std::string direction(s.kind);
  uint64_t dst = arg(e, s.dst), src = arg(e, s.src), bytes = 0;
  if (memset) {
    bytes = arg(e, s.bytes) * (s.count ? arg(e, s.count) : 1) * s.elem;
  } else if (s.kind == "2d" || s.kind == "3d") {
    const CopyDesc& d = s.kind == "2d" ? kCopy2D : kCopy3D;
    direction = std::string(1, memtype_letter(read_at<uint32_t>(e.blob, d.src_type))) + "to" +
                memtype_letter(read_at<uint32_t>(e.blob, d.dst_type));
    src = desc_address(e.blob, d.src_type, d.src_host);
    dst = desc_address(e.blob, d.dst_type, d.dst_host);
    bytes = read_at<uint64_t>(e.blob, d.width) * read_at<uint64_t>(e.blob, d.height) *
            (d.depth ? read_at<uint64_t>(e.blob, d.depth) : 1);
  } else {
    bytes = arg(e, s.bytes);
  }
  if (s.dir_arg) direction = hip_copy_direction(arg32(e, s.dir_arg));
  bind_common(copy_, e, s, pid);
  copy_.bind(9, std::string_view(memset ? "memset" : "copy"));
  if (memset) copy_.bind_null(10); else copy_.bind(10, direction);
  copy_.bind(11, dst);
  if (memset) copy_.bind_null(12); else copy_.bind(12, src);
  copy_.bind(13, bytes);
  if (memset) copy_.bind(14, arg_bytes(e, s.value, s.elem)); else copy_.bind_null(14);
  if (s.stream) copy_.bind(15, arg(e, s.stream)); else copy_.bind_null(15);
  copy_.bind(16, int64_t{s.op.ends_with("_async")});
  return run(copy_);
}

int ApiRowWriter::write_stream(const ApiCallEvent& e, const ApiSpec& s, int64_t pid) {
  bool out_ok = e.flags & GPUOBS_CALL_F_OUT_READ;
  std::string op = (s.family == Family::event ? "event_" : "") + std::string(s.op);
  if (s.family == Family::stream && (s.op == "create" || s.op == "destroy" || s.op == "query")) op = "stream_" + op;
  uint64_t stream = arg(e, s.stream), event = arg(e, s.event), handle = arg(e, s.handle);
  if (s.op == "create") (s.family == Family::event ? event : stream) = out_ok ? e.out_value : 0;
  if (s.op == "capture_end") handle = out_ok ? e.out_value : 0;
  bind_common(stream_, e, s, pid);
  stream_.bind(9, op);
  if (s.stream || (s.family == Family::stream && s.op == "create")) stream_.bind(10, stream); else stream_.bind_null(10);
  if (s.event || (s.family == Family::event && s.op == "create")) stream_.bind(11, event); else stream_.bind_null(11);
  if (s.handle || s.op == "capture_end") stream_.bind(12, handle); else stream_.bind_null(12);
  if (s.flags) stream_.bind(13, arg32(e, s.flags)); else stream_.bind_null(13);
  if (s.value) stream_.bind(14, static_cast<int64_t>(static_cast<int32_t>(arg(e, s.value)))); else stream_.bind_null(14);
  return run(stream_);
}

int ApiRowWriter::write_sync(const ApiCallEvent& e, const ApiSpec& s, int64_t pid) {
  bind_common(sync_, e, s, pid);
  sync_.bind(9, s.kind);
  if (s.stream) sync_.bind(10, arg(e, s.stream)); else sync_.bind_null(10);
  if (s.event) sync_.bind(11, arg(e, s.event)); else sync_.bind_null(11);
  if (s.handle) sync_.bind(12, arg(e, s.handle)); else sync_.bind_null(12);
  if (e.flags & GPUOBS_CALL_F_RETURNED) sync_.bind(13, e.duration_ns); else sync_.bind_null(13);
  return run(sync_);
}

int ApiRowWriter::write_module(const ApiCallEvent& e, const ApiSpec& s, int64_t pid) {
  bool returned = e.flags & GPUOBS_CALL_F_RETURNED;
  // __hipRegisterFunction returns nothing: the handle it names is an argument.
  bool registers = s.op == "register_function";
  bool out_ok = registers || ((e.flags & GPUOBS_CALL_F_OUT_READ) && ok(e));
  uint64_t made = registers ? arg(e, s.handle) : e.out_value;
  bool is_load = s.op == "load";
  std::string text = s.blob_kind == GPUOBS_BLOB_STRING ? blob_string(e) : std::string();
  module_.bind(1, e.hdr.ts_ns);
  if (returned) module_.bind(2, e.duration_ns); else module_.bind_null(2);
  module_.bind(3, pid).bind(4, e.hdr.tgid).bind(5, e.hdr.tid).bind(6, s.symbol);
  if (returned && !s.no_result) module_.bind(7, e.ret); else module_.bind_null(7);
  module_.bind(8, s.op).bind(9, s.kind);
  if (out_ok) module_.bind(10, made); else module_.bind_null(10);
  if (s.handle && !registers) module_.bind(11, arg(e, s.handle)); else module_.bind_null(11);
  if (is_load && !text.empty()) module_.bind(12, text); else module_.bind_null(12);
  if (!is_load && !text.empty()) module_.bind(13, text); else module_.bind_null(13);
  int rc = run(module_);
  if (is_load || !out_ok) return rc;  // failed lookups name nothing

  // get_function / get_kernel / kernel_function: learn handle -> name.
  std::string name, pretty;
  if (s.op == "kernel_function") {
    auto it = names_.find({pid, e.args[1]});  // the CUkernel's name
    if (it == names_.end()) return rc;
    std::tie(name, pretty) = it->second;
  } else {
    if (text.empty()) {  // the name could not be read: launches stay explicitly unnamed
      ++unreadable_names_;
      return rc;
    }
    name = text;
    pretty = demangle(name);
  }
  names_[{pid, made}] = {name, pretty};
  name_.bind(1, e.hdr.ts_ns).bind(2, pid).bind(3, made).bind(4, s.kind).bind(5, name).bind(6, pretty)
      .bind(7, s.symbol);
  if (registers) name_.bind_null(8); else name_.bind(8, arg(e, s.handle));
  int rc2 = run(name_);
  return rc != SQLITE_DONE ? rc : rc2;
}

}  // namespace gpuobs
