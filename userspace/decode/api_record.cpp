#include "decode/api_record.h"

#include <array>
#include <cstring>

#include "events.h"

namespace gpuobs {
namespace {

uint64_t arg(const ApiCallEvent& e, uint8_t pos) { return pos ? e.args[(pos - 1) & 7] : 0; }
// A 32-bit argument (unsigned int flags, int modes) in a 64-bit register: the
// upper half is unspecified by the ABI.
uint64_t arg32(const ApiCallEvent& e, uint8_t pos) { return arg(e, pos) & 0xffffffffu; }
std::optional<uint64_t> arg_if(const ApiCallEvent& e, uint8_t pos) {
  return pos ? std::optional<uint64_t>(arg(e, pos)) : std::nullopt;
}
// A memset value of 1, 2 or 4 bytes.
uint64_t arg_bytes(const ApiCallEvent& e, uint8_t pos, uint8_t width) {
  return width >= 8 ? arg(e, pos) : arg(e, pos) & ((1ull << (8 * width)) - 1);
}
bool out_read(const ApiCallEvent& e) { return e.flags & GPUOBS_CALL_F_OUT_READ; }
// The string blob without its NUL terminator.
std::string_view blob_text(const ApiCallEvent& e) {
  std::string_view b(e.blob);
  return b.substr(0, b.find('\0'));
}

template <class T>
T read_at(std::string_view blob, size_t off) {
  T v{};
  if (off + sizeof(T) <= blob.size()) std::memcpy(&v, blob.data() + off, sizeof(T));
  return v;
}

// CUmemorytype: 1 host, 2 device, 3 array, 4 unified (cuda.h).
MemType memtype(uint32_t t) { return t >= 1 && t <= 4 ? static_cast<MemType>(t) : MemType::unknown; }

// CUDA_MEMCPY2D (128 B) / CUDA_MEMCPY3D (200 B) offsets, from cuda.h 13.0
// compiled with gcc x86-64: src memory type, host, device, array; then dst.
// CUDA_MEMCPY3D_PEER has these fields at the same offsets.
struct CopyDesc {
  size_t src_type, src_host, dst_type, dst_host, width, height, depth;
};
constexpr CopyDesc kCopy2D{16, 24, 72, 80, 112, 120, 0};
constexpr CopyDesc kCopy3D{32, 40, 120, 128, 176, 184, 192};

uint64_t desc_address(std::string_view blob, size_t type_off, size_t host_off) {
  switch (read_at<uint32_t>(blob, type_off)) {
    case 1: return read_at<uint64_t>(blob, host_off);       // host pointer
    case 3: return read_at<uint64_t>(blob, host_off + 16);  // CUarray
    default: return read_at<uint64_t>(blob, host_off + 8);  // device or unified pointer
  }
}

// The direction a copy symbol names (cuMemcpyHtoD: host to device).
CopyDirection named_direction(ApiKind k) {
  using H = CopyDirection::How;
  auto sides = [](MemType src, MemType dst) { return CopyDirection{H::sides, src, dst}; };
  switch (k) {
    case ApiKind::HtoD: return sides(MemType::host, MemType::device);
    case ApiKind::DtoH: return sides(MemType::device, MemType::host);
    case ApiKind::DtoD: return sides(MemType::device, MemType::device);
    case ApiKind::DtoA: return sides(MemType::device, MemType::array);
    case ApiKind::AtoD: return sides(MemType::array, MemType::device);
    case ApiKind::HtoA: return sides(MemType::host, MemType::array);
    case ApiKind::AtoH: return sides(MemType::array, MemType::host);
    case ApiKind::AtoA: return sides(MemType::array, MemType::array);
    case ApiKind::peer: return {H::peer};
    default: return {H::inferred};  // cuMemcpy(Async): unified addressing
  }
}

// hipMemcpyKind (driver_types.h): what the caller declared.
CopyDirection hip_direction(uint64_t kind) {
  using H = CopyDirection::How;
  switch (kind) {
    case 0: return {H::sides, MemType::host, MemType::host};
    case 1: return {H::sides, MemType::host, MemType::device};
    case 2: return {H::sides, MemType::device, MemType::host};
    case 3:
    case 1024: return {H::sides, MemType::device, MemType::device};  // 1024: hipMemcpyDeviceToDeviceNoCU
    case 4: return {H::inferred};                                    // hipMemcpyDefault
  }
  return {H::undeclared};
}

}  // namespace

CallCommon call_common(const ApiCallEvent& e, const ApiSpec& s) {
  bool returned = e.flags & GPUOBS_CALL_F_RETURNED;
  CallCommon c;
  c.ts_ns = e.hdr.ts_ns;
  c.tgid = e.hdr.tgid;
  c.tid = e.hdr.tid;
  c.api = s.symbol;
  if (returned) c.duration_ns = e.duration_ns;
  if (returned && !s.no_result) c.result = e.ret;
  c.per_thread = s.per_thread;
  c.ok = !returned || e.ret == 0;
  c.vendor = s.vendor;
  return c;
}

std::string_view to_string(CopyDirection d) {
  switch (d.how) {
    case CopyDirection::How::peer: return "peer";
    case CopyDirection::How::inferred: return "default";
    case CopyDirection::How::undeclared: return "unknown";
    case CopyDirection::How::sides: break;
  }
  // "XtoY" for the 5 x 5 pairs of MemType, indexed by its values.
  static constexpr auto kText = [] {
    constexpr char kLetter[] = "?HDAU";
    std::array<std::array<char, 4>, 25> t{};
    for (size_t i = 0; i < 25; ++i) t[i] = {kLetter[i / 5], 't', 'o', kLetter[i % 5]};
    return t;
  }();
  auto index = [](MemType m) { return static_cast<size_t>(m) < 5 ? static_cast<size_t>(m) : 0; };
  return {kText[index(d.src) * 5 + index(d.dst)].data(), 4};
}

std::string_view to_string(StreamOp op) {
  switch (op) {
    case StreamOp::stream_create: return "stream_create";
    case StreamOp::stream_destroy: return "stream_destroy";
    case StreamOp::stream_query: return "stream_query";
    case StreamOp::wait_event: return "wait_event";
    case StreamOp::capture_begin: return "capture_begin";
    case StreamOp::capture_end: return "capture_end";
    case StreamOp::host_func: return "host_func";
    case StreamOp::graph_launch: return "graph_launch";
    case StreamOp::event_create: return "event_create";
    case StreamOp::event_record: return "event_record";
    case StreamOp::event_query: return "event_query";
    case StreamOp::event_destroy: return "event_destroy";
  }
  return "unknown";
}

MemoryCall decode_memory(const ApiCallEvent& e, const ApiSpec& s) {
  MemoryCall m;
  m.call = call_common(e, s);
  m.op = s.op;
  m.kind = s.kind;
  bool begins = s.op == ApiOp::alloc || s.op == ApiOp::create || s.op == ApiOp::map;
  m.life = begins ? MemoryCall::Life::begins : MemoryCall::Life::ends;
  if (s.bytes) m.bytes = arg(e, s.bytes) * (s.count ? arg(e, s.count) : 1);
  if (s.stream) m.stream = arg(e, s.stream);
  uint64_t handle = arg(e, s.handle);
  if (s.op == ApiOp::create) {
    handle = out_read(e) ? e.out_value : 0;  // no address: a physical allocation is mapped later
  } else {
    m.address = s.op == ApiOp::alloc ? (out_read(e) ? e.out_value : 0) : arg(e, s.dst);
  }
  if (handle) m.handle = handle;
  // cuMemCreate/cuMemMap take unsigned long long flags; the others unsigned int.
  bool flags64 = s.op == ApiOp::create || s.op == ApiOp::map;
  if (s.flags) m.flags = flags64 ? arg(e, s.flags) : arg32(e, s.flags);
  bool by_handle = s.op == ApiOp::create || s.op == ApiOp::release;
  m.key = by_handle ? handle : m.address.value_or(0);
  return m;
}

CopyCall decode_copy(const ApiCallEvent& e, const ApiSpec& s) {
  CopyCall c;
  c.call = call_common(e, s);
  c.memset = s.family == Family::memset;
  c.async = s.op == ApiOp::copy_async || s.op == ApiOp::memset_async;
  c.dst = arg(e, s.dst);
  if (s.stream) c.stream = arg(e, s.stream);
  if (c.memset) {
    c.bytes = arg(e, s.bytes) * (s.count ? arg(e, s.count) : 1) * s.elem;
    if (s.value_width_arg) {
      // A pattern behind a pointer (zeCommandListAppendMemoryFill): its
      // value when it is 1, 2 or 4 bytes and was read; else unknown.
      uint64_t width = arg(e, s.value_width_arg);
      if ((width == 1 || width == 2 || width == 4) && e.blob.size() >= width) {
        c.value_width = static_cast<uint8_t>(width);
        c.value = read_at<uint32_t>(e.blob, 0) & ((1ull << (8 * width)) - 1);
      }
      return c;
    }
    c.value = arg_bytes(e, s.value, s.elem);
    c.value_width = s.elem;
    return c;
  }
  c.src = arg(e, s.src);
  if (s.kind == ApiKind::two_d || s.kind == ApiKind::three_d) {
    const CopyDesc& d = s.kind == ApiKind::two_d ? kCopy2D : kCopy3D;
    std::string_view b(e.blob);
    c.direction = {CopyDirection::How::sides, memtype(read_at<uint32_t>(b, d.src_type)),
                   memtype(read_at<uint32_t>(b, d.dst_type))};
    c.src = desc_address(b, d.src_type, d.src_host);
    c.dst = desc_address(b, d.dst_type, d.dst_host);
    uint64_t depth = d.depth ? read_at<uint64_t>(b, d.depth) : 1;
    c.bytes = read_at<uint64_t>(b, d.width) * read_at<uint64_t>(b, d.height) * depth;
  } else {
    c.direction = named_direction(s.kind);
    c.bytes = arg(e, s.bytes);
  }
  if (s.dir_arg) c.direction = hip_direction(arg32(e, s.dir_arg));
  return c;
}

StreamCall decode_stream(const ApiCallEvent& e, const ApiSpec& s) {
  StreamCall c;
  c.call = call_common(e, s);
  bool event_family = s.family == Family::event;
  switch (s.op) {
    case ApiOp::create: c.op = event_family ? StreamOp::event_create : StreamOp::stream_create; break;
    case ApiOp::destroy: c.op = event_family ? StreamOp::event_destroy : StreamOp::stream_destroy; break;
    case ApiOp::query: c.op = event_family ? StreamOp::event_query : StreamOp::stream_query; break;
    case ApiOp::record: c.op = StreamOp::event_record; break;
    case ApiOp::wait_event: c.op = StreamOp::wait_event; break;
    case ApiOp::capture_begin: c.op = StreamOp::capture_begin; break;
    case ApiOp::capture_end: c.op = StreamOp::capture_end; break;
    case ApiOp::host_func: c.op = StreamOp::host_func; break;
    default: c.op = StreamOp::graph_launch; break;
  }
  c.stream = arg_if(e, s.stream);
  c.event = arg_if(e, s.event);
  c.handle = arg_if(e, s.handle);
  uint64_t made = out_read(e) ? e.out_value : 0;  // 0: the call failed before writing it
  if (s.op == ApiOp::create) (event_family ? c.event : c.stream) = made;
  if (s.op == ApiOp::capture_end) c.handle = made;
  // Level Zero passes handle arrays: out_arg is then the first element, read
  // at return (the lists a queue executes, the events a list waits on).
  if (s.out_arg && s.op == ApiOp::wait_event) c.event = made ? std::optional<uint64_t>(made) : std::nullopt;
  if (s.out_arg && s.op == ApiOp::graph_launch) c.handle = made ? std::optional<uint64_t>(made) : std::nullopt;
  if (s.flags) c.flags = arg32(e, s.flags);
  if (s.value) c.priority = static_cast<int32_t>(arg(e, s.value));  // int priority
  return c;
}

SyncCall decode_sync(const ApiCallEvent& e, const ApiSpec& s) {
  SyncCall c;
  c.call = call_common(e, s);
  c.target = s.kind;
  c.stream = arg_if(e, s.stream);
  c.event = arg_if(e, s.event);
  c.context = arg_if(e, s.handle);
  c.blocked_ns = c.call.duration_ns;  // the return probe measures the whole wait
  return c;
}

ModuleCall decode_module(const ApiCallEvent& e, const ApiSpec& s) {
  ModuleCall m;
  m.call = call_common(e, s);
  m.op = s.op;
  m.kind = s.kind;
  // __hipRegisterFunction returns nothing: the handle it names is an argument.
  bool registers = s.op == ApiOp::register_function;
  bool made = registers || (out_read(e) && m.call.ok);
  if (made) m.handle = registers ? arg(e, s.handle) : e.out_value;
  if (s.handle && !registers) m.parent = arg(e, s.handle);
  bool string_blob = s.blob_kind == GPUOBS_BLOB_STRING || s.blob_kind == GPUOBS_BLOB_STRING_AT;
  std::string_view text = string_blob ? blob_text(e) : std::string_view();
  bool load = s.op == ApiOp::load;
  if (!text.empty()) (load ? m.path : m.name) = text;
  if (load || !made) {
    m.names = ModuleCall::Names::nothing;  // failed lookups name nothing
  } else if (s.op == ApiOp::kernel_function) {
    m.names = ModuleCall::Names::from_kernel;
    m.kernel = arg(e, s.handle);  // cuKernelGetFunction(CUfunction*, CUkernel)
  } else {
    m.names = ModuleCall::Names::from_text;
  }
  return m;
}

ContextCall decode_context(const ApiCallEvent& e, const ApiSpec& s) {
  ContextCall c;
  c.call = call_common(e, s);
  c.op = s.op;
  // An int written through the pointer: the 8 bytes read at return hold
  // whatever follows it in the caller's memory above the low 4.
  auto out_int = [&]() -> std::optional<int64_t> {
    if (!out_read(e) || !c.call.ok) return std::nullopt;
    return static_cast<int32_t>(e.out_value & 0xffffffffu);
  };
  if (s.device) c.device = static_cast<int32_t>(arg32(e, s.device));
  if (s.flags) c.flags = arg32(e, s.flags);
  switch (s.op) {
    case ApiOp::driver_version:
    case ApiOp::device_count: c.value = out_int(); break;
    case ApiOp::device_get:
      c.ordinal = static_cast<int32_t>(arg32(e, s.value));
      c.device = out_int();
      break;
    case ApiOp::device_attribute:
      c.attribute = static_cast<int32_t>(arg32(e, s.value));
      c.value = out_int();
      break;
    case ApiOp::device_total_mem:
      if (out_read(e) && c.call.ok) c.value = static_cast<int64_t>(e.out_value);
      break;
    case ApiOp::context_create:
    case ApiOp::primary_retain:
      if (out_read(e) && c.call.ok) c.context = e.out_value;
      break;
    case ApiOp::context_destroy: c.context = arg_if(e, s.handle); break;
    default: break;
  }
  return c;
}

}  // namespace gpuobs
