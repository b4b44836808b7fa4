// The non-launch CUDA/HIP calls decoded: an ApiCallEvent (registers, the
// out-value, the blob) and its ApiSpec become one typed record per family,
// holding exactly the values its row needs. Pure functions over bytes, like
// decode_ioctl(): no SQLite, no state. What needs state across calls (which
// allocation a free releases, handle -> kernel name) stays in the store,
// which only binds these values (store/api_rows.cpp).
// Layouts and prototypes: docs/reference/abi-reference.md §4.2 (CUDA), §5.2 (HIP).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "catalogue/api_spec.h"
#include "decode/decoder.h"

namespace gpuobs {

// The columns every call table starts with (schema/migrations/002).
struct CallCommon {
  uint64_t ts_ns = 0;
  uint32_t tgid = 0, tid = 0;
  std::string_view api;                 // the symbol (static: the catalogue's)
  std::optional<uint64_t> duration_ns;  // none: the call did not return (entry-only probe, or still inside)
  std::optional<int64_t> result;        // none: did not return, or returns void
  bool per_thread = false;              // a _ptsz/_ptds/_spt variant
  bool ok = true;                       // returned 0, or not seen returning
  Vendor vendor = Vendor::cuda;
};

// memory_ops: alloc, free, create, release, map, unmap.
struct MemoryCall {
  // What the call does to an allocation's life (the store pairs them per process).
  enum class Life : uint8_t { begins, ends };
  CallCommon call;
  ApiOp op = ApiOp::alloc;
  ApiKind kind = ApiKind::none;  // the spec's; a free takes its allocation's kind in the store
  Life life = Life::begins;
  std::optional<uint64_t> address;  // alloc: the new address (0 when not read); none for create
  std::optional<uint64_t> bytes;    // none: the call names no size (a free: the store knows it)
  std::optional<uint64_t> stream;
  std::optional<uint64_t> handle;  // pool, physical handle (create: the new one); none when 0
  std::optional<uint64_t> flags;   // 32 bits, except cuMemCreate/cuMemMap (unsigned long long)
  // The allocation's key: its address, or the physical handle (create, release); 0: none.
  uint64_t key = 0;
};

// Where a copy's side lives: CUmemorytype (cuda.h), unknown for any other value.
enum class MemType : uint8_t { unknown = 0, host = 1, device = 2, array = 3, unified = 4 };

// A copy's direction as stored in copies.direction.
struct CopyDirection {
  enum class How : uint8_t {
    sides,       // "HtoD", "UtoA", "?toD" (src and dst)
    peer,        // "peer": between devices (cuMemcpyPeer)
    inferred,    // "default": the driver infers it from the addresses
    undeclared,  // "unknown": a hipMemcpyKind this build does not know
  };
  How how = How::sides;
  MemType src = MemType::unknown, dst = MemType::unknown;
  bool operator==(const CopyDirection&) const = default;
};
std::string_view to_string(CopyDirection d);  // static text

// copies: copies and memsets.
struct CopyCall {
  CallCommon call;
  bool memset = false;
  bool async = false;
  CopyDirection direction;  // copies only
  uint64_t dst = 0;
  std::optional<uint64_t> src;    // copies only
  uint64_t bytes = 0;             // 2D/3D: width * height * depth from the descriptor; memsets: elements * width
  std::optional<uint64_t> value;  // memsets only: masked to value_width bytes
  uint8_t value_width = 0;        // memsets: 1, 2 or 4 (D8, D16, D32)
  std::optional<uint64_t> stream;
};

// stream_ops: streams and events.
enum class StreamOp : uint8_t {
  stream_create,
  stream_destroy,
  stream_query,
  wait_event,
  capture_begin,
  capture_end,
  host_func,
  graph_launch,
  event_create,
  event_record,
  event_query,
  event_destroy,
};
std::string_view to_string(StreamOp op);

struct StreamCall {
  CallCommon call;
  StreamOp op = StreamOp::stream_create;
  std::optional<uint64_t> stream;   // create: the new stream (0 when not read)
  std::optional<uint64_t> event;    // create: the new event (0 when not read)
  std::optional<uint64_t> handle;   // graph, host function; capture_end: the new graph
  std::optional<uint64_t> flags;    // unsigned int
  std::optional<int64_t> priority;  // int
};

// syncs.
struct SyncCall {
  CallCommon call;
  ApiKind target = ApiKind::none;  // stream, event, context
  std::optional<uint64_t> stream, event, context;
  std::optional<uint64_t> blocked_ns;  // the time the caller waited (did not return: none)
};

// gpu_modules, and what a call teaches about kernel names (kernel_names).
struct ModuleCall {
  // Where the name of the handle made comes from.
  enum class Names : uint8_t {
    nothing,      // a load, or a call that failed: names nothing
    from_text,    // the name string the caller passed (none in `name`: it could not be read)
    from_kernel,  // cuKernelGetFunction: the name the CUkernel `kernel` has
  };
  CallCommon call;
  ApiOp op = ApiOp::load;
  ApiKind kind = ApiKind::none;
  std::optional<uint64_t> handle;        // the module, function or kernel made (none: failed / not read)
  std::optional<uint64_t> parent;        // the module, library or kernel it came from
  std::optional<std::string_view> path;  // loads from a file; views e.blob
  std::optional<std::string_view> name;  // lookups by name; views e.blob
  Names names = Names::nothing;
  uint64_t kernel = 0;  // from_kernel: the CUkernel
};

// context_ops (schema 24): the driver's, devices' and contexts' set-up.
struct ContextCall {
  CallCommon call;
  ApiOp op = ApiOp::init;
  std::optional<int64_t> device;     // the CUdevice argument, or the one cuDeviceGet returned
  std::optional<uint64_t> context;   // made (cuCtxCreate, primary retain: none when not read) or destroyed
  std::optional<uint64_t> flags;     // unsigned int
  std::optional<int64_t> ordinal;    // cuDeviceGet's
  std::optional<int64_t> attribute;  // cuDeviceGetAttribute's CUdevice_attribute
  // What the call returned through its pointer: the driver version, the
  // device count, the attribute's value (int), the device's total bytes.
  std::optional<int64_t> value;
};

// The common columns of a call of spec s (shared by decode/nccl_record.cpp).
CallCommon call_common(const ApiCallEvent& e, const ApiSpec& s);

// Each decodes one call of its family (spec.family); string views point into e.blob.
MemoryCall decode_memory(const ApiCallEvent& e, const ApiSpec& spec);
CopyCall decode_copy(const ApiCallEvent& e, const ApiSpec& spec);      // Family::copy and Family::memset
StreamCall decode_stream(const ApiCallEvent& e, const ApiSpec& spec);  // Family::stream and Family::event
SyncCall decode_sync(const ApiCallEvent& e, const ApiSpec& spec);
ModuleCall decode_module(const ApiCallEvent& e, const ApiSpec& spec);
ContextCall decode_context(const ApiCallEvent& e, const ApiSpec& spec);

}  // namespace gpuobs
