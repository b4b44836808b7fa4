// NCCL calls decoded (Family::collective): an ApiCallEvent and its ApiSpec
// become one NcclCall with the values its row needs. Pure, like
// decode/api_record.h: which communicator a handle is, its rank and the
// sequence number of a collective are state across calls, kept by whoever
// reads these (store/nccl_rows.cpp, capture/nccl_watch.cpp) with NcclComms.
// Enum values and prototypes: docs/reference/abi-reference.md §7 (NCCL 2.28.9).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "catalogue/api_spec.h"
#include "decode/api_record.h"

namespace gpuobs {

struct NcclCall {
  CallCommon call;
  NcclOp op = NcclOp::comm_init;
  // The communicator the call is on; for an init or a split, the one made
  // (0: not read, or the call failed).
  uint64_t comm = 0;
  std::optional<uint64_t> parent;   // split: the communicator split
  std::optional<uint64_t> id_hash;  // init: nccl_id_hash of the unique id (same in every rank)
  std::optional<int64_t> rank, nranks, color, device;
  std::optional<uint64_t> count, stream, send_buf, recv_buf;
  std::optional<uint32_t> dtype, redop;
  std::optional<int64_t> peer;  // root (broadcast, reduce) or peer (send, recv)
};

NcclCall decode_nccl(const ApiCallEvent& e, const ApiSpec& spec);

// Collectives are matched across ranks by their order on a communicator;
// point-to-point calls and groups are not collectives.
bool nccl_is_collective(NcclOp op);
// Bytes of a datatype (0: unknown) and its name ("float32", ...; "type N" unknown).
uint32_t nccl_dtype_bytes(uint32_t dtype);
std::string_view nccl_dtype_name(uint32_t dtype);
// "sum", "prod", "max", "min", "avg"; "user" for ncclRedOpCreatePreMulSum's.
std::string_view nccl_redop_name(uint32_t op);
// The bytes a call moves as its caller sees them: the larger buffer
// (all_gather: sendcount * nranks elements received; reduce_scatter:
// recvcount * nranks sent; all_to_all: count * nranks each way; gather and
// scatter: count * nranks at the root), count elements for the others. None when the datatype or a needed nranks is
// unknown. Gather and scatter: count * nranks at the root (rank == peer), count elsewhere; count * nranks when the rank
// is unknown.
std::optional<uint64_t> nccl_bytes(const NcclCall& c, std::optional<int64_t> nranks,
                                   std::optional<int64_t> rank = std::nullopt);
// The identity of a communicator across processes: the first 16 bytes of its
// unique id (since NCCL 2.16 a random 64-bit magic, then the root's socket
// address), hashed (FNV-1a, 63 bits so it fits SQLite's INTEGER unsigned).
uint64_t nccl_id_hash(uint64_t word0, uint64_t word1);
// A split communicator's identity: its parent's, which split of the parent
// it came from (the 1st, 2nd, ...: splits are collective on the parent, so
// every rank counts them alike) and the color (every rank that passes the
// same color to that split is in it).
uint64_t nccl_split_hash(uint64_t parent_hash, int64_t ordinal, int64_t color);

// What a process's communicator handles are: identity, rank, size; and the
// sequence number of each collective on each (1, 2, ...). Fed every NCCL
// call of a capture in order; used by the store and the stall watch.
class NcclComms {
 public:
  struct Comm {
    uint64_t id_hash = 0;  // 0: unknown (made by ncclCommInitAll, or its init was not seen)
    std::optional<int64_t> rank, nranks, device;
    int64_t next_seq = 1;
    int64_t splits = 0;  // ncclCommSplit calls on it so far (collective: the same order in every rank)
    bool destroyed = false;
  };
  // Updates the state with c (an init, a split, a destroy, a device query)
  // and returns the sequence number c takes (collectives only; 0 otherwise).
  int64_t observe(uint32_t tgid, const NcclCall& c);
  const Comm* find(uint32_t tgid, uint64_t comm) const;
  void forget_process(uint32_t tgid);

 private:
  std::map<std::pair<uint32_t, uint64_t>, Comm> comms_;
};

}  // namespace gpuobs
