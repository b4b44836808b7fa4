#include "decode/nccl_record.h"

#include <cstring>

#include "events.h"

namespace gpuobs {
namespace {

uint64_t arg(const ApiCallEvent& e, uint8_t pos) { return pos ? e.args[(pos - 1) & 7] : 0; }
// int and enum arguments: the upper half of the register is unspecified.
int64_t arg_int(const ApiCallEvent& e, uint8_t pos) { return static_cast<int32_t>(arg(e, pos) & 0xffffffffu); }
uint32_t arg_u32(const ApiCallEvent& e, uint8_t pos) { return static_cast<uint32_t>(arg(e, pos)); }

}  // namespace

NcclCall decode_nccl(const ApiCallEvent& e, const ApiSpec& s) {
  NcclCall c;
  c.call = call_common(e, s);
  c.op = s.nccl;
  bool out = e.flags & GPUOBS_CALL_F_OUT_READ;
  // ncclInProgress (7): a nonblocking init or split that goes on in the
  // background; the handle is written and valid already.
  bool made = !(e.flags & GPUOBS_CALL_F_RETURNED) || e.ret == 0 || e.ret == 7;
  switch (s.nccl) {
    case NcclOp::comm_init:
      if (s.blob_arg) {
        // ncclCommInitRankScalable: the first id, copied from its pointer.
        if (e.blob_kind == GPUOBS_BLOB_STRUCT && e.blob.size() >= 16 && !(e.flags & GPUOBS_CALL_F_BLOB_FAULT)) {
          uint64_t w[2];
          std::memcpy(w, e.blob.data(), sizeof w);
          c.id_hash = nccl_id_hash(w[0], w[1]);
        }
      } else if (!(e.flags & GPUOBS_CALL_F_STACK_ARGS_MISSING)) {
        c.id_hash = nccl_id_hash(e.args[6], e.args[7]);
      }
      [[fallthrough]];
    case NcclOp::comm_init_all:
      if (out && made) c.comm = e.out_value;
      if (s.nranks_arg) c.nranks = arg_int(e, s.nranks_arg);
      if (s.rank_arg) c.rank = arg_int(e, s.rank_arg);
      return c;
    case NcclOp::comm_split:
      c.parent = arg(e, s.handle);
      c.color = arg_int(e, 2);
      if (out && made) c.comm = e.out_value;
      return c;
    case NcclOp::comm_device:
      c.comm = arg(e, s.handle);
      if (out && c.call.ok) c.device = static_cast<int32_t>(e.out_value & 0xffffffffu);
      return c;
    case NcclOp::comm_rank:
    case NcclOp::comm_count: {
      c.comm = arg(e, s.handle);
      if (!out || !c.call.ok) return c;
      int64_t v = static_cast<int32_t>(e.out_value & 0xffffffffu);
      (s.nccl == NcclOp::comm_rank ? c.rank : c.nranks) = v;
      return c;
    }
    case NcclOp::comm_destroy:
    case NcclOp::comm_abort: c.comm = arg(e, s.handle); return c;
    case NcclOp::group_start:
    case NcclOp::group_end: return c;
    default: break;
  }
  c.comm = arg(e, s.handle);
  c.count = arg(e, s.bytes);
  if (s.stream) c.stream = arg(e, s.stream);
  if (s.src) c.send_buf = arg(e, s.src);
  if (s.dst) c.recv_buf = arg(e, s.dst);
  if (s.dtype_arg) c.dtype = arg_u32(e, s.dtype_arg);
  if (s.redop_arg) c.redop = arg_u32(e, s.redop_arg);
  if (s.peer_arg) c.peer = arg_int(e, s.peer_arg);
  return c;
}

bool nccl_is_collective(NcclOp op) {
  switch (op) {
    case NcclOp::all_reduce:
    case NcclOp::broadcast:
    case NcclOp::reduce:
    case NcclOp::all_gather:
    case NcclOp::reduce_scatter:
    case NcclOp::all_to_all:
    case NcclOp::gather:
    case NcclOp::scatter: return true;
    default: return false;
  }
}

uint32_t nccl_dtype_bytes(uint32_t dtype) {
  // ncclInt8, Uint8, Int32, Uint32, Int64, Uint64, Float16, Float32, Float64,
  // Bfloat16, Float8e4m3, Float8e5m2 (0..11).
  constexpr uint32_t kBytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return dtype < std::size(kBytes) ? kBytes[dtype] : 0;
}

std::string_view nccl_dtype_name(uint32_t dtype) {
  constexpr std::string_view kNames[] = {"int8",    "uint8",   "int32",   "uint32",   "int64",      "uint64",
                                         "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return dtype < std::size(kNames) ? kNames[dtype] : std::string_view("unknown");
}

std::string_view nccl_redop_name(uint32_t op) {
  constexpr std::string_view kNames[] = {"sum", "prod", "max", "min", "avg"};
  return op < std::size(kNames) ? kNames[op] : std::string_view("user");
}

std::optional<uint64_t> nccl_bytes(const NcclCall& c, std::optional<int64_t> nranks, std::optional<int64_t> rank) {
  if (!c.count || !c.dtype) return std::nullopt;
  uint64_t elem = nccl_dtype_bytes(*c.dtype);
  if (!elem) return std::nullopt;
  uint64_t bytes = *c.count * elem;
  switch (c.op) {
    case NcclOp::all_gather:
    case NcclOp::reduce_scatter:
    case NcclOp::gather:
    case NcclOp::scatter:
      // Only the root's buffer holds every rank's part.
      if (rank && c.peer && *rank != *c.peer) return bytes;
      [[fallthrough]];
    case NcclOp::all_to_all:
      if (!nranks || *nranks <= 0) return std::nullopt;
      return bytes * static_cast<uint64_t>(*nranks);
    default: return bytes;
  }
}

uint64_t nccl_id_hash(uint64_t word0, uint64_t word1) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t w : {word0, word1})
    for (int i = 0; i < 8; ++i) {
      h ^= (w >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  return h & 0x7fffffffffffffffull;
}

uint64_t nccl_split_hash(uint64_t parent_hash, int64_t ordinal, int64_t color) {
  return nccl_id_hash(nccl_id_hash(parent_hash, static_cast<uint64_t>(ordinal)), static_cast<uint64_t>(color));
}

int64_t NcclComms::observe(uint32_t tgid, const NcclCall& c) {
  switch (c.op) {
    case NcclOp::comm_init:
    case NcclOp::comm_init_all:
      if (c.comm) {
        Comm& m = comms_[{tgid, c.comm}];
        m = Comm{};  // a handle reused after a destroy is a new communicator
        m.id_hash = c.id_hash.value_or(0);
        m.rank = c.rank;
        m.nranks = c.nranks;
        if (c.op == NcclOp::comm_init_all) m.rank = 0;  // the first of ndev, all in this process
      }
      return 0;
    case NcclOp::comm_split: {
      // Every rank of the parent calls the split, NOCOLOR ones too (no new
      // communicator for them): count it in each.
      auto parent = comms_.find({tgid, c.parent.value_or(0)});
      int64_t ordinal = parent != comms_.end() ? ++parent->second.splits : 0;
      if (c.comm) {
        Comm m;
        if (parent != comms_.end() && parent->second.id_hash && c.color)
          m.id_hash = nccl_split_hash(parent->second.id_hash, ordinal, *c.color);
        comms_[{tgid, c.comm}] = m;
      }
      return 0;
    }
    case NcclOp::comm_device:
      if (auto it = comms_.find({tgid, c.comm}); it != comms_.end() && c.device) it->second.device = c.device;
      return 0;
    case NcclOp::comm_rank:
    case NcclOp::comm_count:
      // What NCCL answers is the truth (a split's rank is known no other way).
      if (auto it = comms_.find({tgid, c.comm}); it != comms_.end()) {
        if (c.rank) it->second.rank = c.rank;
        if (c.nranks) it->second.nranks = c.nranks;
      }
      return 0;
    case NcclOp::comm_destroy:
    case NcclOp::comm_abort:
      if (auto it = comms_.find({tgid, c.comm}); it != comms_.end()) it->second.destroyed = true;
      return 0;
    default: break;
  }
  if (!nccl_is_collective(c.op) || !c.comm) return 0;
  // A communicator whose init was not seen (gpuobs started later) still
  // numbers its collectives, from the first one seen: its id is unknown, so
  // nothing is matched across ranks on it.
  return comms_[{tgid, c.comm}].next_seq++;
}

const NcclComms::Comm* NcclComms::find(uint32_t tgid, uint64_t comm) const {
  auto it = comms_.find({tgid, comm});
  return it == comms_.end() ? nullptr : &it->second;
}

void NcclComms::forget_process(uint32_t tgid) {
  comms_.erase(comms_.lower_bound({tgid, 0}), comms_.upper_bound({tgid, UINT64_MAX}));
}

}  // namespace gpuobs
