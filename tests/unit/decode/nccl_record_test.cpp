// NCCL calls decoded from raw records (decode/nccl_record.h): arguments by
// the register map of abi-reference.md §7, bytes per operation, the
// communicator identity and the sequence numbers NcclComms gives.
#include "decode/nccl_record.h"

#include <gtest/gtest.h>

#include <cstring>

#include "events.h"

using namespace gpuobs;

namespace {

ApiCallEvent call(const char* symbol, std::initializer_list<uint64_t> args, uint32_t tgid = 7, int64_t ret = 0,
                  uint64_t out = 0) {
  const ApiSpec* s = api_by_symbol(symbol);
  EXPECT_NE(s, nullptr) << symbol;
  ApiCallEvent e{};
  e.hdr = gpuobs_hdr{GPUOBS_EV_API_CALL, 0, 1000, tgid, tgid};
  size_t i = 0;
  for (uint64_t a : args) e.args[i++] = a;
  e.api = s ? s->id : 0;
  e.ret = ret;
  e.flags = GPUOBS_CALL_F_RETURNED | (out ? GPUOBS_CALL_F_OUT_READ : 0);
  e.out_value = out;
  return e;
}

NcclCall decode(const ApiCallEvent& e) { return decode_nccl(e, *api_by_id(e.api)); }

}  // namespace

TEST(NcclRecord, TheTableNamesEveryProbedCallOnceWithItsIds) {
  auto t = nccl_api_table();
  ASSERT_EQ(t.size(), 23u);
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].id, 2001 + i);
    EXPECT_EQ(t[i].family, Family::collective);
    EXPECT_EQ(t[i].probe, ProbeKind::outer_entry_return) << t[i].symbol;  // NCCL calls make libcuda calls
    EXPECT_EQ(api_by_id(t[i].id), &t[i]);
  }
  EXPECT_EQ(api_table_for_library("/opt/x/nvidia/nccl/lib/libnccl.so.2").data(), t.data());
  EXPECT_EQ(api_table_for_library("/opt/rocm/lib/librccl.so.1").data(), t.data());
  EXPECT_EQ(api_table_for_library("/usr/lib/libamdhip64.so.6").data(), hip_api_table().data());
  EXPECT_EQ(api_table_for_library("/usr/lib/libcuda.so.1").data(), cuda_api_table().data());
}

TEST(NcclRecord, CollectivesTakeTheirArgumentsFromTheRegisterMap) {
  // ncclReduce(send, recv, count, datatype, op, root, comm, stream): comm and stream on the stack.
  NcclCall r = decode(call("ncclReduce", {0x100, 0x200, 32, 8, 1, 2, 0xc0, 0x5000}));
  EXPECT_EQ(r.op, NcclOp::reduce);
  EXPECT_EQ(r.comm, 0xc0u);
  EXPECT_EQ(r.stream, 0x5000u);
  EXPECT_EQ(r.count, 32u);
  EXPECT_EQ(nccl_dtype_name(*r.dtype), "float64");
  EXPECT_EQ(nccl_redop_name(*r.redop), "prod");
  EXPECT_EQ(r.peer, 2);
  EXPECT_EQ(r.send_buf, 0x100u);
  EXPECT_EQ(r.recv_buf, 0x200u);
  EXPECT_EQ(nccl_bytes(r, 4), 256u);
  // 32-bit enums: the register's upper half is unspecified.
  NcclCall a = decode(call("ncclAllReduce", {1, 2, 1024, 0xdead00000007ull, 0xbeef00000000ull, 0xc0, 0x5001}));
  EXPECT_EQ(*a.dtype, 7u);
  EXPECT_EQ(nccl_redop_name(*a.redop), "sum");
  EXPECT_EQ(nccl_bytes(a, std::nullopt), 4096u);
  // all_gather moves sendcount x nranks; unknown nranks: unknown bytes.
  NcclCall g = decode(call("ncclAllGather", {1, 2, 128, 6, 0xc0, 0x5002}));
  EXPECT_EQ(g.comm, 0xc0u);
  EXPECT_EQ(g.stream, 0x5002u);
  EXPECT_EQ(nccl_bytes(g, 3), 128u * 2 * 3);
  EXPECT_EQ(nccl_bytes(g, std::nullopt), std::nullopt);
  NcclCall s = decode(call("ncclSend", {1, 32, 4, 1, 0xc0, 0x5003}));
  EXPECT_EQ(s.peer, 1);
  EXPECT_EQ(nccl_bytes(s, 2), 256u);
  EXPECT_FALSE(nccl_is_collective(s.op));
  EXPECT_EQ(nccl_dtype_bytes(12), 0u);  // a type this build does not know
  EXPECT_EQ(nccl_redop_name(0x7a3b0005), "user");
}

TEST(NcclRecord, InitHashesTheUniqueIdSoEveryRankAgrees) {
  // ncclCommInitRank(comm*, nranks, id (stack: args 7, 8 are its first 16 bytes), rank)
  auto e0 = call("ncclCommInitRank", {0x10, 4, 0, 0, 0, 0, 0x1122334455667788, 0x99}, 7, 0, 0xc0);
  auto e1 = call("ncclCommInitRank", {0x20, 4, 3, 0, 0, 0, 0x1122334455667788, 0x99}, 8, 0, 0xd0);
  NcclCall a = decode(e0), b = decode(e1);
  EXPECT_EQ(a.comm, 0xc0u);
  EXPECT_EQ(a.nranks, 4);
  EXPECT_EQ(a.rank, 0);
  EXPECT_EQ(b.rank, 3);
  ASSERT_TRUE(a.id_hash && b.id_hash);
  EXPECT_EQ(*a.id_hash, *b.id_hash);
  EXPECT_LT(*a.id_hash, uint64_t{1} << 63);  // fits SQLite's INTEGER
  EXPECT_NE(nccl_id_hash(0x1122334455667788, 0x98), *a.id_hash);
  // A failed init made nothing; ncclInProgress (a nonblocking init) did.
  EXPECT_EQ(decode(call("ncclCommInitRank", {0x10, 4, 0}, 7, 4, 0xc0)).comm, 0u);
  EXPECT_EQ(decode(call("ncclCommInitRank", {0x10, 4, 0}, 7, 7, 0xc0)).comm, 0xc0u);
  // The stack slots unreadable: no identity.
  auto missing = e0;
  missing.flags |= GPUOBS_CALL_F_STACK_ARGS_MISSING;
  EXPECT_FALSE(decode(missing).id_hash);
}

TEST(NcclRecord, CommsNumberCollectivesPerCommunicatorAndProcess) {
  NcclComms comms;
  auto init = [&](uint32_t tgid, uint64_t comm, int rank) {
    comms.observe(tgid, decode(call("ncclCommInitRank", {0x10, 2, uint64_t(rank), 0, 0, 0, 42, 43}, tgid, 0, comm)));
  };
  init(7, 0xc0, 0);
  init(8, 0xc0, 1);  // the same handle value in another process: another rank
  auto ar = [&](uint32_t tgid, uint64_t comm) {
    return comms.observe(tgid, decode(call("ncclAllReduce", {1, 2, 4, 7, 0, comm, 0}, tgid)));
  };
  EXPECT_EQ(ar(7, 0xc0), 1);
  EXPECT_EQ(ar(7, 0xc0), 2);
  EXPECT_EQ(ar(8, 0xc0), 1);
  EXPECT_EQ(comms.observe(7, decode(call("ncclSend", {1, 4, 7, 1, 0xc0, 0}, 7))), 0);  // not a collective
  EXPECT_EQ(ar(7, 0xc0), 3);
  // A communicator whose init was not seen still numbers its collectives, with no identity.
  EXPECT_EQ(ar(7, 0xe0), 1);
  EXPECT_EQ(comms.find(7, 0xe0)->id_hash, 0u);
  EXPECT_EQ(comms.find(7, 0xc0)->id_hash, comms.find(8, 0xc0)->id_hash);
  // A split's identity: the parent's and the color, the same in every rank that passes it.
  comms.observe(7, decode(call("ncclCommSplit", {0xc0, 5, 0, 0x30}, 7, 0, 0xf0)));
  comms.observe(8, decode(call("ncclCommSplit", {0xc0, 5, 1, 0x30}, 8, 0, 0xf8)));
  EXPECT_NE(comms.find(7, 0xf0)->id_hash, 0u);
  EXPECT_EQ(comms.find(7, 0xf0)->id_hash, comms.find(8, 0xf8)->id_hash);
  // The parent split again with the same color: another communicator.
  comms.observe(7, decode(call("ncclCommSplit", {0xc0, 5, 0, 0x30}, 7, 0, 0xf4)));
  EXPECT_NE(comms.find(7, 0xf4)->id_hash, comms.find(7, 0xf0)->id_hash);
  // A reused handle after a destroy is a new communicator: numbering starts again.
  comms.observe(7, decode(call("ncclCommDestroy", {0xc0}, 7)));
  init(7, 0xc0, 0);
  EXPECT_EQ(ar(7, 0xc0), 1);
  comms.forget_process(7);
  EXPECT_EQ(comms.find(7, 0xc0), nullptr);
  EXPECT_NE(comms.find(8, 0xc0), nullptr);
}

// NCCL 2.23's ncclCommInitRankScalable takes its ids by pointer: the first
// one's 16 bytes come in the blob and hash like a by-value id; a faulted
// blob gives no identity rather than a wrong one.
TEST(NcclRecord, ScalableInitHashesTheFirstIdThroughItsPointer) {
  ApiCallEvent e = call("ncclCommInitRankScalable", {0x7000, 4, 3, 1, 0x8000, 0}, 7, 0, 0xc1);
  e.blob_kind = GPUOBS_BLOB_STRUCT;
  uint64_t words[2] = {0x1122334455667788ull, 0x0200abcdull};
  e.blob.assign(reinterpret_cast<const char*>(words), sizeof words);
  NcclCall c = decode(e);
  EXPECT_EQ(c.op, NcclOp::comm_init);
  EXPECT_EQ(c.comm, 0xc1u);
  EXPECT_EQ(c.nranks, 4);
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.id_hash, nccl_id_hash(words[0], words[1]));
  e.flags |= GPUOBS_CALL_F_BLOB_FAULT;
  EXPECT_FALSE(decode(e).id_hash);
}

// Gather and scatter: the root's side is count x nranks; RCCL's
// ncclAllToAll is all_to_all like ncclAlltoAll.
TEST(NcclRecord, GatherScatterAndRcclAllToAll) {
  NcclCall g = decode(call("ncclGather", {0x100, 0x200, 64, 7, 1, 0xc0, 0x5000}));
  EXPECT_EQ(g.op, NcclOp::gather);
  EXPECT_EQ(g.peer, 1);
  EXPECT_EQ(g.comm, 0xc0u);
  EXPECT_EQ(g.stream, 0x5000u);
  EXPECT_EQ(nccl_bytes(g, 4), 64u * 4 * 4);     // rank unknown: the root's size
  EXPECT_EQ(nccl_bytes(g, 4, 1), 64u * 4 * 4);  // the root (peer 1) receives every rank's part
  EXPECT_EQ(nccl_bytes(g, 4, 2), 64u * 4);      // another rank sends its own
  EXPECT_FALSE(nccl_bytes(g, std::nullopt));
  EXPECT_TRUE(nccl_is_collective(NcclOp::gather));
  NcclCall s = decode(call("ncclScatter", {0x100, 0x200, 8, 2, 0, 0xc0, 0x5000}));
  EXPECT_EQ(s.op, NcclOp::scatter);
  EXPECT_EQ(nccl_bytes(s, 2), 8u * 4 * 2);
  NcclCall a = decode(call("ncclAllToAll", {0x100, 0x200, 8, 2, 0xc0, 0x5000}));
  EXPECT_EQ(a.op, NcclOp::all_to_all);
  EXPECT_EQ(a.comm, 0xc0u);
  EXPECT_EQ(a.stream, 0x5000u);
  EXPECT_EQ(to_string(NcclOp::gather), "gather");
  EXPECT_EQ(to_string(NcclOp::scatter), "scatter");
}

// A split communicator's rank and size are unknown until the application
// asks NCCL (ncclCommUserRank, ncclCommCount): the answers fill them in; a
// failed query changes nothing.
TEST(NcclRecord, UserRankAndCountFillInASplitCommunicator) {
  NcclComms comms;
  comms.observe(7, decode(call("ncclCommInitRank", {0x7000, 4, 2, 0}, 7, 0, 0xc0)));
  comms.observe(7, decode(call("ncclCommSplit", {0xc0, 1, 5, 0x7100, 0}, 7, 0, 0xd0)));
  ASSERT_NE(comms.find(7, 0xd0), nullptr);
  EXPECT_FALSE(comms.find(7, 0xd0)->rank);
  NcclCall failed = decode(call("ncclCommUserRank", {0xd0, 0x7200}, 7, 4, 9));
  EXPECT_EQ(failed.op, NcclOp::comm_rank);
  comms.observe(7, failed);
  EXPECT_FALSE(comms.find(7, 0xd0)->rank);
  comms.observe(7, decode(call("ncclCommUserRank", {0xd0, 0x7200}, 7, 0, 1)));
  comms.observe(7, decode(call("ncclCommCount", {0xd0, 0x7200}, 7, 0, 0xffffffff00000002ull)));
  EXPECT_EQ(comms.find(7, 0xd0)->rank, 1);
  EXPECT_EQ(comms.find(7, 0xd0)->nranks, 2);  // the int's upper half ignored
  EXPECT_EQ(comms.find(7, 0xc0)->rank, 2);    // the parent untouched
}
