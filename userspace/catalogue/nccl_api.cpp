// The NCCL table (libnccl.so.2; RCCL's librccl.so.1 exports the same names
// with the same arguments): communicators, collectives, point-to-point calls
// and groups, each probed at entry and return (result and host time). The
// register map of each prototype: docs/reference/abi-reference.md §7 (NCCL 2.28.9).
// A ncclUniqueId is passed by value (128 bytes, on the stack), so in
// ncclCommInitRank(comm*, nranks, id, rank) `rank` is the third integer
// register and the id's first 16 bytes are the two stack slots the generic
// probe reads as arguments 7 and 8 (decode/nccl_record.cpp hashes them).
// ncclCommInitRankScalable takes its ids by pointer: the first id's first 16
// bytes are copied at entry instead. ncclBcast is not probed: it calls the
// exported ncclBroadcast, which is.
#include "catalogue/api_spec.h"
#include "events.h"

namespace gpuobs {
namespace {

constexpr Family C = Family::collective;
constexpr ProbeKind ER = ProbeKind::outer_entry_return;
constexpr Vendor N = Vendor::nccl;
constexpr uint8_t kBlobStruct = GPUOBS_BLOB_STRUCT;

// Ids from 2001, dense, never renumbered: only append.
// clang-format off
constexpr ApiSpec kNccl[] = {
    // ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank)
    {.id = 2001, .symbol = "ncclCommInitRank", .family = C, .op = ApiOp::create, .probe = ER, .out_arg = 1, .vendor = N, .nccl = NcclOp::comm_init, .nranks_arg = 2, .rank_arg = 3},
    // ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config)
    {.id = 2002, .symbol = "ncclCommInitRankConfig", .family = C, .op = ApiOp::create, .probe = ER, .out_arg = 1, .vendor = N, .nccl = NcclOp::comm_init, .nranks_arg = 2, .rank_arg = 3},
    // ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist): the first communicator is read
    {.id = 2003, .symbol = "ncclCommInitAll", .family = C, .op = ApiOp::create, .probe = ER, .out_arg = 1, .vendor = N, .nccl = NcclOp::comm_init_all, .nranks_arg = 2},
    // ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config)
    {.id = 2004, .symbol = "ncclCommSplit", .family = C, .op = ApiOp::create, .probe = ER, .out_arg = 4, .handle = 1, .vendor = N, .nccl = NcclOp::comm_split},
    {.id = 2005, .symbol = "ncclCommDestroy", .family = C, .op = ApiOp::destroy, .probe = ER, .handle = 1, .vendor = N, .nccl = NcclOp::comm_destroy},
    {.id = 2006, .symbol = "ncclCommAbort", .family = C, .op = ApiOp::destroy, .probe = ER, .handle = 1, .vendor = N, .nccl = NcclOp::comm_abort},
    // ncclCommCuDevice(ncclComm_t comm, int* device): the device, when the application asks
    {.id = 2007, .symbol = "ncclCommCuDevice", .family = C, .op = ApiOp::query, .probe = ER, .out_arg = 2, .handle = 1, .vendor = N, .nccl = NcclOp::comm_device},
    // ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream)
    {.id = 2008, .symbol = "ncclAllReduce", .family = C, .op = ApiOp::launch, .probe = ER, .dst = 2, .src = 1, .bytes = 3, .stream = 7, .handle = 6, .vendor = N, .nccl = NcclOp::all_reduce, .dtype_arg = 4, .redop_arg = 5},
    // ncclBroadcast(sendbuff, recvbuff, count, datatype, root, comm, stream)
    {.id = 2009, .symbol = "ncclBroadcast", .family = C, .op = ApiOp::launch, .probe = ER, .dst = 2, .src = 1, .bytes = 3, .stream = 7, .handle = 6, .vendor = N, .nccl = NcclOp::broadcast, .dtype_arg = 4, .peer_arg = 5},
    // ncclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream)
    {.id = 2010, .symbol = "ncclReduce", .family = C, .op = ApiOp::launch, .probe = ER, .dst = 2, .src = 1, .bytes = 3, .stream = 8, .handle = 7, .vendor = N, .nccl = NcclOp::reduce, .dtype_arg = 4, .redop_arg = 5, .peer_arg = 6},
    // ncclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream)
    {.id = 2011, .symbol = "ncclAllGather", .family = C, .op = ApiOp::launch, .probe = ER, .dst = 2, .src = 1, .bytes = 3, .stream = 6, .handle = 5, .vendor = N, .nccl = NcclOp::all_gather, .dtype_arg = 4},
    // ncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream)
    {.id = 2012, .symbol = "ncclReduceScatter", .family = C, .op = ApiOp::launch, .probe = ER, .dst = 2, .src = 1, .bytes = 3, .stream = 7, .handle = 6, .vendor = N, .nccl = NcclOp::reduce_scatter, .dtype_arg = 4, .redop_arg = 5},
    // ncclAlltoAll(sendbuff, recvbuff, count, datatype, comm, stream): NCCL 2.28+
    {.id = 2013, .symbol = "ncclAlltoAll", .family = C, .op = ApiOp::launch, .probe = ER, .dst = 2, .src = 1, .bytes = 3, .stream = 6, .handle = 5, .vendor = N, .nccl = NcclOp::all_to_all, .dtype_arg = 4},
    // ncclSend(sendbuff, count, datatype, peer, comm, stream)
    {.id = 2014, .symbol = "ncclSend", .family = C, .op = ApiOp::launch, .probe = ER, .src = 1, .bytes = 2, .stream = 6, .handle = 5, .vendor = N, .nccl = NcclOp::send, .dtype_arg = 3, .peer_arg = 4},
    // ncclRecv(recvbuff, count, datatype, peer, comm, stream)
    {.id = 2015, .symbol = "ncclRecv", .family = C, .op = ApiOp::launch, .probe = ER, .dst = 1, .bytes = 2, .stream = 6, .handle = 5, .vendor = N, .nccl = NcclOp::recv, .dtype_arg = 3, .peer_arg = 4},
    {.id = 2016, .symbol = "ncclGroupStart", .family = C, .op = ApiOp::capture_begin, .probe = ER, .vendor = N, .nccl = NcclOp::group_start},
    {.id = 2017, .symbol = "ncclGroupEnd", .family = C, .op = ApiOp::capture_end, .probe = ER, .vendor = N, .nccl = NcclOp::group_end},
    // ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config):
    // NCCL 2.23+; the ids by pointer, the first one's first 16 bytes copied at entry (the blob)
    {.id = 2018, .symbol = "ncclCommInitRankScalable", .family = C, .op = ApiOp::create, .probe = ER, .out_arg = 1, .blob_arg = 5, .blob_kind = kBlobStruct, .blob_len = 16, .vendor = N, .nccl = NcclOp::comm_init, .nranks_arg = 2, .rank_arg = 3},
    // ncclGather(sendbuff, recvbuff, count, datatype, root, comm, stream): NCCL 2.28+
    {.id = 2019, .symbol = "ncclGather", .family = C, .op = ApiOp::launch, .probe = ER, .dst = 2, .src = 1, .bytes = 3, .stream = 7, .handle = 6, .vendor = N, .nccl = NcclOp::gather, .dtype_arg = 4, .peer_arg = 5},
    // ncclScatter(sendbuff, recvbuff, count, datatype, root, comm, stream): NCCL 2.28+
    {.id = 2020, .symbol = "ncclScatter", .family = C, .op = ApiOp::launch, .probe = ER, .dst = 2, .src = 1, .bytes = 3, .stream = 7, .handle = 6, .vendor = N, .nccl = NcclOp::scatter, .dtype_arg = 4, .peer_arg = 5},
    // ncclAllToAll(sendbuff, recvbuff, count, datatype, comm, stream): RCCL's spelling (ncclAlltoAll's arguments)
    {.id = 2021, .symbol = "ncclAllToAll", .family = C, .op = ApiOp::launch, .probe = ER, .dst = 2, .src = 1, .bytes = 3, .stream = 6, .handle = 5, .vendor = N, .nccl = NcclOp::all_to_all, .dtype_arg = 4},
    // ncclCommUserRank(const ncclComm_t comm, int* rank), ncclCommCount(const ncclComm_t comm, int* count): the
    // rank and size when the application asks (a split's rank is known no other way)
    {.id = 2022, .symbol = "ncclCommUserRank", .family = C, .op = ApiOp::query, .probe = ER, .out_arg = 2, .handle = 1, .vendor = N, .nccl = NcclOp::comm_rank},
    {.id = 2023, .symbol = "ncclCommCount", .family = C, .op = ApiOp::query, .probe = ER, .out_arg = 2, .handle = 1, .vendor = N, .nccl = NcclOp::comm_count},
};
// clang-format on

}  // namespace

std::span<const ApiSpec> nccl_api_table() { return kNccl; }

}  // namespace gpuobs
