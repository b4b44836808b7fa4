// decode/api_record.h on raw bytes: ApiCallEvents built the way the ring
// decoder produces them (registers, the out-value, the blob copied at entry,
// the flags the return probe sets), every field of every record asserted.
#include "decode/api_record.h"

#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <set>
#include <string>

#include "catalogue/api_spec.h"
#include "events.h"

using namespace gpuobs;

namespace {

const ApiSpec& spec(std::string_view symbol) {
  for (auto table : {cuda_api_table(), hip_api_table(), level_zero_api_table()})
    for (const ApiSpec& s : table)
      if (s.symbol == symbol) return s;
  ADD_FAILURE() << "no spec " << symbol;
  return cuda_api_table()[0];
}

constexpr uint32_t kReturned = GPUOBS_CALL_F_RETURNED | GPUOBS_CALL_F_OUT_READ;

// A call as the decoder hands it over: returned with result ret unless flags say otherwise.
ApiCallEvent call(std::string_view symbol, std::initializer_list<uint64_t> args, int64_t ret = 0,
                  uint64_t out_value = 0, uint32_t flags = kReturned, std::string blob = {}) {
  const ApiSpec& s = spec(symbol);
  ApiCallEvent e{};
  e.hdr.type = GPUOBS_EV_API_CALL;
  e.hdr.ts_ns = 1'000'000;
  e.hdr.tgid = 4242;
  e.hdr.tid = 4243;
  size_t i = 0;
  for (uint64_t a : args) e.args[i++] = a;
  e.ret = ret;
  e.duration_ns = 777;
  e.out_value = out_value;
  e.api = s.id;
  e.flags = flags;
  e.blob_kind = s.blob_kind;
  e.blob = std::move(blob);
  return e;
}

// A struct image: zero bytes of length n, fields written at their offsets.
struct Image {
  std::string b;
  explicit Image(size_t n) : b(n, '\0') {}
  template <class T>
  Image& at(size_t off, T v) {
    std::memcpy(b.data() + off, &v, sizeof v);
    return *this;
  }
};

std::string cstr(std::string s) { return s + '\0'; }

void expect_common(const CallCommon& c, std::string_view api, bool per_thread = false) {
  EXPECT_EQ(c.ts_ns, 1'000'000u);
  EXPECT_EQ(c.tgid, 4242u);
  EXPECT_EQ(c.tid, 4243u);
  EXPECT_EQ(c.api, api);
  EXPECT_EQ(c.per_thread, per_thread);
}

}  // namespace

TEST(ApiRecord, CommonColumnsOfReturnedEntryOnlyAndVoidCalls) {
  auto e = call("cuMemAlloc_v2", {0x7000, 4096}, 0, 0x10000);
  CallCommon c = decode_memory(e, spec("cuMemAlloc_v2")).call;
  expect_common(c, "cuMemAlloc_v2");
  EXPECT_EQ(c.duration_ns, 777u);
  EXPECT_EQ(c.result, 0);
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.vendor, Vendor::cuda);

  // Entry only (cuLaunchHostFunc has no return probe): no duration, no result, not failed.
  auto h = call("cuLaunchHostFunc_ptsz", {0x5, 0xf00}, 0, 0, 0);
  CallCommon hc = decode_stream(h, spec("cuLaunchHostFunc_ptsz")).call;
  expect_common(hc, "cuLaunchHostFunc_ptsz", true);
  EXPECT_EQ(hc.duration_ns, std::nullopt);
  EXPECT_EQ(hc.result, std::nullopt);
  EXPECT_TRUE(hc.ok);

  // A failed call keeps its CUresult; a void function has none even when it returned.
  auto f = call("cuMemFree_v2", {0x10000}, 1);
  EXPECT_EQ(decode_memory(f, spec("cuMemFree_v2")).call.result, 1);
  EXPECT_FALSE(decode_memory(f, spec("cuMemFree_v2")).call.ok);
  auto r = call("__hipRegisterFunction", {0x1, 0x401000, 0x2, 0x3}, 0x7fff1234, 0, GPUOBS_CALL_F_RETURNED,
                cstr("_Z6kernelPf"));
  CallCommon rc = decode_module(r, spec("__hipRegisterFunction")).call;
  EXPECT_EQ(rc.result, std::nullopt) << "eax of a void function means nothing";
  EXPECT_EQ(rc.duration_ns, 777u);
  EXPECT_EQ(rc.vendor, Vendor::hip);
}

TEST(ApiRecord, MemoryAllocationsAndTheirKeys) {
  auto m = decode_memory(call("cuMemAlloc_v2", {0x7000, 4096}, 0, 0x10000), spec("cuMemAlloc_v2"));
  EXPECT_EQ(m.op, ApiOp::alloc);
  EXPECT_EQ(m.kind, ApiKind::device);
  EXPECT_EQ(m.life, MemoryCall::Life::begins);
  EXPECT_EQ(m.address, 0x10000u);
  EXPECT_EQ(m.bytes, 4096u);
  EXPECT_EQ(m.stream, std::nullopt);
  EXPECT_EQ(m.handle, std::nullopt);
  EXPECT_EQ(m.flags, std::nullopt);
  EXPECT_EQ(m.key, 0x10000u);

  // The out-pointer was not read (the call failed first): address 0, nothing to track.
  auto failed = decode_memory(call("cuMemAlloc_v2", {0x7000, 1ull << 40}, 2, 0xdead, GPUOBS_CALL_F_RETURNED),
                              spec("cuMemAlloc_v2"));
  EXPECT_EQ(failed.address, 0u);
  EXPECT_EQ(failed.key, 0u);
  EXPECT_FALSE(failed.call.ok);

  // Pitch: width * height requested.
  auto p =
      decode_memory(call("cuMemAllocPitch_v2", {0x7000, 0x7008, 1000, 30, 16}, 0, 0x20000), spec("cuMemAllocPitch_v2"));
  EXPECT_EQ(p.kind, ApiKind::pitch);
  EXPECT_EQ(p.bytes, 30000u);

  // unsigned int flags in a 64-bit register: the upper half is garbage.
  auto managed = decode_memory(call("cuMemAllocManaged", {0x7000, 64, 0xdeadbeef00000001ull}, 0, 0x30000),
                               spec("cuMemAllocManaged"));
  EXPECT_EQ(managed.flags, 1u);
  EXPECT_EQ(managed.kind, ApiKind::managed);

  auto pool = decode_memory(call("cuMemAllocFromPoolAsync_ptsz", {0x7000, 256, 0xb00, 0x5}, 0, 0x40000),
                            spec("cuMemAllocFromPoolAsync_ptsz"));
  EXPECT_EQ(pool.stream, 0x5u);
  EXPECT_EQ(pool.handle, 0xb00u);
  EXPECT_TRUE(pool.call.per_thread);
}

TEST(ApiRecord, PhysicalMemoryIsKeyedByHandleAndKeeps64BitFlags) {
  // cuMemCreate(CUmemGenericAllocationHandle*, size, prop, unsigned long long flags)
  auto c = decode_memory(call("cuMemCreate", {0x7000, 2 << 20, 0x7100, 0x100000002ull}, 0, 0xabc), spec("cuMemCreate"));
  EXPECT_EQ(c.op, ApiOp::create);
  EXPECT_EQ(c.kind, ApiKind::physical);
  EXPECT_EQ(c.address, std::nullopt) << "a physical allocation has no address until mapped";
  EXPECT_EQ(c.handle, 0xabcu);
  EXPECT_EQ(c.flags, 0x100000002u);
  EXPECT_EQ(c.key, 0xabcu);
  EXPECT_EQ(c.life, MemoryCall::Life::begins);

  auto r = decode_memory(call("cuMemRelease", {0xabc}), spec("cuMemRelease"));
  EXPECT_EQ(r.life, MemoryCall::Life::ends);
  EXPECT_EQ(r.key, 0xabcu);
  EXPECT_EQ(r.bytes, std::nullopt) << "the store takes it from the allocation";
  EXPECT_EQ(r.address, 0u);

  // cuMemMap(ptr, size, offset, handle, unsigned long long flags)
  auto m = decode_memory(call("cuMemMap", {0x900000, 2 << 20, 0, 0xabc, 0x100000000ull}), spec("cuMemMap"));
  EXPECT_EQ(m.address, 0x900000u);
  EXPECT_EQ(m.handle, 0xabcu);
  EXPECT_EQ(m.flags, 0x100000000u);
  EXPECT_EQ(m.key, 0x900000u) << "a mapping is keyed by its address";

  auto f = decode_memory(call("cuMemFreeAsync", {0x900000, 0x6}), spec("cuMemFreeAsync"));
  EXPECT_EQ(f.op, ApiOp::free);
  EXPECT_EQ(f.life, MemoryCall::Life::ends);
  EXPECT_EQ(f.key, 0x900000u);
  EXPECT_EQ(f.stream, 0x6u);
}

TEST(ApiRecord, CopiesNamedByTheirSymbol) {
  auto c = decode_copy(call("cuMemcpyHtoD_v2", {0xd000, 0x1000, 512}), spec("cuMemcpyHtoD_v2"));
  EXPECT_FALSE(c.memset);
  EXPECT_FALSE(c.async);
  EXPECT_EQ(c.direction, (CopyDirection{CopyDirection::How::sides, MemType::host, MemType::device}));
  EXPECT_EQ(to_string(c.direction), "HtoD");
  EXPECT_EQ(c.dst, 0xd000u);
  EXPECT_EQ(c.src, 0x1000u);
  EXPECT_EQ(c.bytes, 512u);
  EXPECT_EQ(c.value, std::nullopt);
  EXPECT_EQ(c.stream, std::nullopt);

  auto a = decode_copy(call("cuMemcpyAsync_ptsz", {0xd000, 0xe000, 64, 0x9}), spec("cuMemcpyAsync_ptsz"));
  EXPECT_TRUE(a.async);
  EXPECT_EQ(to_string(a.direction), "default");
  EXPECT_EQ(a.stream, 0x9u);

  // cuMemcpyPeer(dst, dstCtx, src, srcCtx, bytes)
  auto p = decode_copy(call("cuMemcpyPeer", {0xd000, 0xc1, 0xe000, 0xc2, 96}), spec("cuMemcpyPeer"));
  EXPECT_EQ(to_string(p.direction), "peer");
  EXPECT_EQ(p.src, 0xe000u);
  EXPECT_EQ(p.bytes, 96u);

  // cuMemcpyAtoH_v2(dstHost, srcArray, srcOffset, bytes)
  auto ah = decode_copy(call("cuMemcpyAtoH_v2", {0x1000, 0xa0, 8, 128}), spec("cuMemcpyAtoH_v2"));
  EXPECT_EQ(to_string(ah.direction), "AtoH");
  EXPECT_EQ(ah.bytes, 128u);
}

TEST(ApiRecord, Copy2DReadsTheDescriptor) {
  // CUDA_MEMCPY2D: srcMemoryType @16, srcHost @24 (srcDevice @32, srcArray @40);
  // dstMemoryType @72, dstHost @80 (dstDevice @88, dstArray @96); WidthInBytes @112, Height @120.
  Image d(128);
  d.at<uint32_t>(16, 1).at<uint64_t>(24, 0x1000).at<uint64_t>(32, 0xbad);
  d.at<uint32_t>(72, 3).at<uint64_t>(88, 0xbad).at<uint64_t>(96, 0xa000);
  d.at<uint64_t>(112, 64).at<uint64_t>(120, 8);
  auto c = decode_copy(call("cuMemcpy2D_v2", {0x7000}, 0, 0, kReturned, d.b), spec("cuMemcpy2D_v2"));
  EXPECT_EQ(to_string(c.direction), "HtoA");
  EXPECT_EQ(c.src, 0x1000u) << "a host side is read from srcHost";
  EXPECT_EQ(c.dst, 0xa000u) << "an array side from dstArray";
  EXPECT_EQ(c.bytes, 512u);
  EXPECT_FALSE(c.async);

  // A memory type this build does not know is '?', read as a device pointer.
  Image u(128);
  u.at<uint32_t>(16, 9).at<uint64_t>(32, 0xd1).at<uint32_t>(72, 2).at<uint64_t>(88, 0xd2);
  u.at<uint64_t>(112, 4).at<uint64_t>(120, 2);
  auto q = decode_copy(call("cuMemcpy2DAsync_v2_ptsz", {0x7000, 0x33}, 0, 0, kReturned, u.b),
                       spec("cuMemcpy2DAsync_v2_ptsz"));
  EXPECT_EQ(to_string(q.direction), "?toD");
  EXPECT_EQ(q.src, 0xd1u);
  EXPECT_EQ(q.dst, 0xd2u);
  EXPECT_EQ(q.bytes, 8u);
  EXPECT_EQ(q.stream, 0x33u);
  EXPECT_TRUE(q.async);

  // The descriptor could not be read (empty blob): zeros, not garbage.
  auto none = decode_copy(call("cuMemcpy2D_v2", {0x7000}), spec("cuMemcpy2D_v2"));
  EXPECT_EQ(to_string(none.direction), "?to?");
  EXPECT_EQ(none.bytes, 0u);
  EXPECT_EQ(none.src, 0u);
}

TEST(ApiRecord, Copy3DReadsTheDescriptor) {
  // CUDA_MEMCPY3D: srcMemoryType @32, srcHost @40, srcDevice @48; dstMemoryType @120,
  // dstHost @128, dstDevice @136; WidthInBytes @176, Height @184, Depth @192.
  Image d(200);
  d.at<uint32_t>(32, 2).at<uint64_t>(48, 0xd000);
  d.at<uint32_t>(120, 4).at<uint64_t>(136, 0xe000);
  d.at<uint64_t>(176, 16).at<uint64_t>(184, 4).at<uint64_t>(192, 3);
  auto c = decode_copy(call("cuMemcpy3DAsync_v2", {0x7000, 0x44}, 0, 0, kReturned, d.b), spec("cuMemcpy3DAsync_v2"));
  EXPECT_EQ(to_string(c.direction), "DtoU");
  EXPECT_EQ(c.src, 0xd000u);
  EXPECT_EQ(c.dst, 0xe000u);
  EXPECT_EQ(c.bytes, 192u);
  EXPECT_EQ(c.stream, 0x44u);
  EXPECT_TRUE(c.async);

  // CUDA_MEMCPY3D_PEER keeps these fields at the same offsets.
  auto p = decode_copy(call("cuMemcpy3DPeer", {0x7000}, 0, 0, kReturned, d.b), spec("cuMemcpy3DPeer"));
  EXPECT_EQ(to_string(p.direction), "DtoU");
  EXPECT_EQ(p.bytes, 192u);

  // Depth cut off by a short copy: the product of what was read (0), not garbage.
  auto cut = decode_copy(call("cuMemcpy3D_v2", {0x7000}, 0, 0, kReturned, d.b.substr(0, 190)), spec("cuMemcpy3D_v2"));
  EXPECT_EQ(cut.bytes, 0u);
  EXPECT_EQ(cut.src, 0xd000u);
}

TEST(ApiRecord, HipCopiesTakeTheDirectionTheCallerDeclared) {
  auto dir = [](uint64_t kind) {
    return std::string(to_string(decode_copy(call("hipMemcpy", {0xd, 0xe, 32, kind}), spec("hipMemcpy")).direction));
  };
  EXPECT_EQ(dir(0), "HtoH");
  EXPECT_EQ(dir(1), "HtoD");
  EXPECT_EQ(dir(2), "DtoH");
  EXPECT_EQ(dir(3), "DtoD");
  EXPECT_EQ(dir(4), "default");
  EXPECT_EQ(dir(1024), "DtoD") << "hipMemcpyDeviceToDeviceNoCU";
  EXPECT_EQ(dir(9), "unknown");
  EXPECT_EQ(dir(0xffffffff00000002ull), "DtoH") << "an enum argument: 32 bits";

  // hipMemcpyAsync(dst, src, bytes, kind, stream)
  auto a = decode_copy(call("hipMemcpyAsync", {0xd, 0xe, 32, 1, 0x77}), spec("hipMemcpyAsync"));
  EXPECT_EQ(a.stream, 0x77u);
  EXPECT_TRUE(a.async);
  EXPECT_EQ(a.call.vendor, Vendor::hip);
}

TEST(ApiRecord, MemsetValuesAreAsWideAsTheirElements) {
  // hipMemsetD16(dst, unsigned short value, count): count elements of 2 bytes.
  auto d16 = decode_copy(call("hipMemsetD16", {0xd000, 0x12345678, 10}), spec("hipMemsetD16"));
  EXPECT_TRUE(d16.memset);
  EXPECT_FALSE(d16.async);
  EXPECT_EQ(d16.dst, 0xd000u);
  EXPECT_EQ(d16.src, std::nullopt);
  EXPECT_EQ(d16.value, 0x5678u);
  EXPECT_EQ(d16.value_width, 2);
  EXPECT_EQ(d16.bytes, 20u);

  // hipMemset(dst, int value, bytes): one byte of the int.
  auto d8 = decode_copy(call("hipMemset", {0xd000, 0x1ff, 10}), spec("hipMemset"));
  EXPECT_EQ(d8.value, 0xffu);
  EXPECT_EQ(d8.value_width, 1);
  EXPECT_EQ(d8.bytes, 10u);

  // cuMemsetD2D32Async(dst, pitch, value, width, height, stream): width * height elements of 4 bytes.
  auto d2 = decode_copy(call("cuMemsetD2D32Async", {0xd000, 4096, 0xaaaabbbbccccddddull, 16, 3, 0x8}),
                        spec("cuMemsetD2D32Async"));
  EXPECT_EQ(d2.value, 0xccccddddu);
  EXPECT_EQ(d2.value_width, 4);
  EXPECT_EQ(d2.bytes, 192u);
  EXPECT_EQ(d2.stream, 0x8u);
  EXPECT_TRUE(d2.async);
}

TEST(ApiRecord, StreamsAndEventsNameTheHandlesTheyCreate) {
  auto s = decode_stream(call("cuStreamCreateWithPriority", {0x7000, 0xffffffff00000001ull, 0xfffffffe}, 0, 0x5a),
                         spec("cuStreamCreateWithPriority"));
  EXPECT_EQ(s.op, StreamOp::stream_create);
  EXPECT_EQ(to_string(s.op), "stream_create");
  EXPECT_EQ(s.stream, 0x5au);
  EXPECT_EQ(s.event, std::nullopt);
  EXPECT_EQ(s.handle, std::nullopt);
  EXPECT_EQ(s.flags, 1u);
  EXPECT_EQ(s.priority, -2) << "an int priority";

  auto failed =
      decode_stream(call("cuStreamCreate", {0x7000, 0}, 2, 0x5b, GPUOBS_CALL_F_RETURNED), spec("cuStreamCreate"));
  EXPECT_EQ(failed.stream, 0u) << "not written: 0, not the stale out-value";
  EXPECT_EQ(failed.flags, 0u);
  EXPECT_EQ(failed.priority, std::nullopt);

  auto ev = decode_stream(call("cuEventCreate", {0x7000, 2}, 0, 0xe1), spec("cuEventCreate"));
  EXPECT_EQ(to_string(ev.op), "event_create");
  EXPECT_EQ(ev.event, 0xe1u);
  EXPECT_EQ(ev.stream, std::nullopt);

  auto rec = decode_stream(call("cuEventRecord_ptsz", {0xe1, 0x5a}), spec("cuEventRecord_ptsz"));
  EXPECT_EQ(to_string(rec.op), "event_record");
  EXPECT_EQ(rec.event, 0xe1u);
  EXPECT_EQ(rec.stream, 0x5au);
  EXPECT_TRUE(rec.call.per_thread);

  auto q = decode_stream(call("cuEventQuery", {0xe1}, 600), spec("cuEventQuery"));
  EXPECT_EQ(to_string(q.op), "event_query");
  EXPECT_EQ(q.call.result, 600);

  auto end = decode_stream(call("cuStreamEndCapture", {0x5a, 0x7000}, 0, 0x9a), spec("cuStreamEndCapture"));
  EXPECT_EQ(to_string(end.op), "capture_end");
  EXPECT_EQ(end.handle, 0x9au) << "the graph captured";
  EXPECT_EQ(end.stream, 0x5au);

  auto w = decode_stream(call("hipStreamWaitEvent", {0x5a, 0xe1, 0x100000000ull}), spec("hipStreamWaitEvent"));
  EXPECT_EQ(to_string(w.op), "wait_event");
  EXPECT_EQ(w.flags, 0u);
  EXPECT_EQ(w.event, 0xe1u);

  auto g = decode_stream(call("cuGraphLaunch", {0x9a, 0x5a}, 0, 0, 0), spec("cuGraphLaunch"));
  EXPECT_EQ(to_string(g.op), "graph_launch");
  EXPECT_EQ(g.handle, 0x9au);
  EXPECT_EQ(g.stream, 0x5au);

  std::set<std::string_view> texts;
  for (int i = 0; i <= static_cast<int>(StreamOp::event_destroy); ++i)
    texts.insert(to_string(static_cast<StreamOp>(i)));
  EXPECT_EQ(texts.size(), 12u);
  EXPECT_FALSE(texts.contains("unknown"));
}

TEST(ApiRecord, SyncsStoreTheirTargetAndTheTimeBlocked) {
  auto s = decode_sync(call("cuStreamSynchronize_ptsz", {0x5a}), spec("cuStreamSynchronize_ptsz"));
  EXPECT_EQ(s.target, ApiKind::stream);
  EXPECT_EQ(s.stream, 0x5au);
  EXPECT_EQ(s.event, std::nullopt);
  EXPECT_EQ(s.context, std::nullopt);
  EXPECT_EQ(s.blocked_ns, 777u);
  EXPECT_TRUE(s.call.per_thread);

  auto c = decode_sync(call("cuCtxSynchronize_v2", {0xc7}), spec("cuCtxSynchronize_v2"));
  EXPECT_EQ(c.target, ApiKind::context);
  EXPECT_EQ(c.context, 0xc7u);
  auto plain = decode_sync(call("cuCtxSynchronize", {}), spec("cuCtxSynchronize"));
  EXPECT_EQ(plain.context, std::nullopt);

  auto inside = decode_sync(call("cuEventSynchronize", {0xe1}, 0, 0, 0), spec("cuEventSynchronize"));
  EXPECT_EQ(inside.target, ApiKind::event);
  EXPECT_EQ(inside.event, 0xe1u);
  EXPECT_EQ(inside.blocked_ns, std::nullopt) << "did not return: no blocked time";
}

TEST(ApiRecord, ModulesAndTheNamesTheyTeach) {
  // cuModuleGetFunction(CUfunction*, CUmodule, const char* name)
  auto f = decode_module(call("cuModuleGetFunction", {0x7000, 0x3d, 0x7100}, 0, 0xf1, kReturned, cstr("_Z3addPfS_")),
                         spec("cuModuleGetFunction"));
  EXPECT_EQ(f.op, ApiOp::get_function);
  EXPECT_EQ(f.kind, ApiKind::function);
  EXPECT_EQ(f.handle, 0xf1u);
  EXPECT_EQ(f.parent, 0x3du);
  EXPECT_EQ(f.name, "_Z3addPfS_");
  EXPECT_EQ(f.path, std::nullopt);
  EXPECT_EQ(f.names, ModuleCall::Names::from_text);

  // A failed lookup keeps its row but names nothing.
  auto bad = decode_module(call("cuModuleGetFunction", {0x7000, 0x3d, 0x7100}, 500, 0xf1, kReturned, cstr("nope")),
                           spec("cuModuleGetFunction"));
  EXPECT_EQ(bad.handle, std::nullopt);
  EXPECT_EQ(bad.name, "nope");
  EXPECT_EQ(bad.names, ModuleCall::Names::nothing);

  // The name string was not readable: a lookup whose name is unknown.
  auto unread = decode_module(call("cuLibraryGetKernel", {0x7000, 0x1b, 0x7100}, 0, 0xa1), spec("cuLibraryGetKernel"));
  EXPECT_EQ(unread.kind, ApiKind::kernel);
  EXPECT_EQ(unread.name, std::nullopt);
  EXPECT_EQ(unread.names, ModuleCall::Names::from_text);

  // cuKernelGetFunction(CUfunction*, CUkernel): the function takes the kernel's name.
  auto k = decode_module(call("cuKernelGetFunction", {0x7000, 0xa1}, 0, 0xf2), spec("cuKernelGetFunction"));
  EXPECT_EQ(k.names, ModuleCall::Names::from_kernel);
  EXPECT_EQ(k.kernel, 0xa1u);
  EXPECT_EQ(k.handle, 0xf2u);
  EXPECT_EQ(k.parent, 0xa1u);

  // cuModuleLoad(CUmodule*, const char* path): a path, no name.
  auto l = decode_module(call("cuModuleLoad", {0x7000, 0x7100}, 0, 0x3d, kReturned, cstr("/opt/k.cubin")),
                         spec("cuModuleLoad"));
  EXPECT_EQ(l.op, ApiOp::load);
  EXPECT_EQ(l.kind, ApiKind::module);
  EXPECT_EQ(l.path, "/opt/k.cubin");
  EXPECT_EQ(l.name, std::nullopt);
  EXPECT_EQ(l.handle, 0x3du);
  EXPECT_EQ(l.parent, std::nullopt);
  EXPECT_EQ(l.names, ModuleCall::Names::nothing);

  // __hipRegisterFunction(modules, hostFunction, deviceFunction, deviceName): the host stub is named.
  auto r = decode_module(call("__hipRegisterFunction", {0x1, 0x401000, 0x2, 0x3}, 0x7fff1234, 0xdead,
                              GPUOBS_CALL_F_RETURNED, cstr("_Z6kernelPf")),
                         spec("__hipRegisterFunction"));
  EXPECT_EQ(r.handle, 0x401000u);
  EXPECT_EQ(r.parent, std::nullopt);
  EXPECT_EQ(r.name, "_Z6kernelPf");
  EXPECT_EQ(r.names, ModuleCall::Names::from_text);
}

// Level Zero (catalogue/level_zero_api.cpp): fills with a pattern behind a
// pointer, handle arrays read as their first element, kernel names from the
// descriptor, fences as sync targets.
TEST(ApiRecord, LevelZeroFillsArraysNamesAndFences) {
  // zeCommandListAppendMemoryFill(list, ptr, pattern*, pattern_size, size, ...): the pattern is the blob.
  auto fill4 = decode_copy(call("zeCommandListAppendMemoryFill", {0x1100, 0xd000, 0x7100, 4, 2048}, 0, 0, kReturned,
                                Image(8).at<uint64_t>(0, 0x1122334455667788ull).b),
                           spec("zeCommandListAppendMemoryFill"));
  EXPECT_TRUE(fill4.memset);
  EXPECT_TRUE(fill4.async);
  EXPECT_EQ(fill4.dst, 0xd000u);
  EXPECT_EQ(fill4.stream, 0x1100u);
  EXPECT_EQ(fill4.bytes, 2048u);
  EXPECT_EQ(fill4.value, 0x55667788u);
  EXPECT_EQ(fill4.value_width, 4);
  EXPECT_EQ(fill4.call.vendor, Vendor::level_zero);
  auto fill2 = decode_copy(call("zeCommandListAppendMemoryFill", {0x1100, 0xd000, 0x7100, 2, 64}, 0, 0, kReturned,
                                Image(8).at<uint64_t>(0, 0x1122334455667788ull).b),
                           spec("zeCommandListAppendMemoryFill"));
  EXPECT_EQ(fill2.value, 0x7788u);
  EXPECT_EQ(fill2.value_width, 2);
  // A 16-byte pattern, or one that could not be read: the value is unknown, never a guess.
  auto wide =
      decode_copy(call("zeCommandListAppendMemoryFill", {0x1100, 0xd000, 0x7100, 16, 64}, 0, 0, kReturned, Image(8).b),
                  spec("zeCommandListAppendMemoryFill"));
  EXPECT_EQ(wide.value, std::nullopt);
  auto unread = decode_copy(call("zeCommandListAppendMemoryFill", {0x1100, 0xd000, 0x7100, 4, 64}),
                            spec("zeCommandListAppendMemoryFill"));
  EXPECT_EQ(unread.value, std::nullopt);
  EXPECT_EQ(unread.bytes, 64u);

  // zeCommandQueueExecuteCommandLists(queue, n, lists*, fence): the first list, read at return, is the handle.
  auto exec = decode_stream(call("zeCommandQueueExecuteCommandLists", {0x2200, 1, 0x7200, 0x3300}, 0, 0x1100),
                            spec("zeCommandQueueExecuteCommandLists"));
  EXPECT_EQ(exec.op, StreamOp::graph_launch);
  EXPECT_EQ(exec.stream, 0x2200u);
  EXPECT_EQ(exec.handle, 0x1100u);
  EXPECT_EQ(exec.event, 0x3300u);
  // Not read (the pointer was bad): no handle rather than the pointer's value.
  auto bad = decode_stream(
      call("zeCommandQueueExecuteCommandLists", {0x2200, 1, 0x7200, 0}, 0x78000004, 0, GPUOBS_CALL_F_RETURNED),
      spec("zeCommandQueueExecuteCommandLists"));
  EXPECT_EQ(bad.handle, std::nullopt);
  EXPECT_EQ(bad.call.result, 0x78000004);
  EXPECT_FALSE(bad.call.ok);
  // zeCommandListAppendWaitOnEvents(list, n, events*): the first event waited on.
  auto wait = decode_stream(call("zeCommandListAppendWaitOnEvents", {0x1100, 2, 0x7300}, 0, 0x4400),
                            spec("zeCommandListAppendWaitOnEvents"));
  EXPECT_EQ(wait.op, StreamOp::wait_event);
  EXPECT_EQ(wait.stream, 0x1100u);
  EXPECT_EQ(wait.event, 0x4400u);
  // Creations name what they made: a list is a stream, an event an event.
  auto list = decode_stream(call("zeCommandListCreateImmediate", {0xc0, 0xd0, 0x7400, 0x7500}, 0, 0x1100),
                            spec("zeCommandListCreateImmediate"));
  EXPECT_EQ(list.op, StreamOp::stream_create);
  EXPECT_EQ(list.stream, 0x1100u);
  auto ev = decode_stream(call("zeEventCreate", {0x5500, 0x7600, 0x7700}, 0, 0x4400), spec("zeEventCreate"));
  EXPECT_EQ(ev.op, StreamOp::event_create);
  EXPECT_EQ(ev.event, 0x4400u);
  EXPECT_EQ(ev.handle, 0x5500u);

  // zeKernelCreate(module, desc*, kernel*): the name the descriptor pointed to, read by BPF into the blob.
  auto k = decode_module(call("zeKernelCreate", {0x6600, 0x7800, 0x7900}, 0, 0x8800, kReturned, cstr("vector_add")),
                         spec("zeKernelCreate"));
  EXPECT_EQ(k.op, ApiOp::get_function);
  EXPECT_EQ(k.handle, 0x8800u);
  EXPECT_EQ(k.parent, 0x6600u);
  EXPECT_EQ(k.name, "vector_add");
  EXPECT_EQ(k.names, ModuleCall::Names::from_text);

  auto fence = decode_sync(call("zeFenceHostSynchronize", {0x3300, ~0ull}), spec("zeFenceHostSynchronize"));
  EXPECT_EQ(fence.target, ApiKind::fence);
  EXPECT_EQ(fence.event, 0x3300u);
  EXPECT_EQ(fence.blocked_ns, 777u);
  EXPECT_EQ(to_string(ApiKind::fence), "fence");
  EXPECT_EQ(to_string(Vendor::level_zero), "level_zero");
}

TEST(ApiCatalogue, EveryEnumValueHasItsOwnSqlText) {
  std::set<std::string_view> ops, kinds;
  for (int i = 0; i <= static_cast<int>(ApiOp::register_function); ++i) ops.insert(to_string(static_cast<ApiOp>(i)));
  for (int i = 0; i <= static_cast<int>(ApiKind::library); ++i) kinds.insert(to_string(static_cast<ApiKind>(i)));
  EXPECT_EQ(ops.size(), static_cast<size_t>(ApiOp::register_function) + 1);
  EXPECT_EQ(kinds.size(), static_cast<size_t>(ApiKind::library) + 1);
  EXPECT_FALSE(ops.contains("unknown"));
  EXPECT_FALSE(kinds.contains("unknown"));
  EXPECT_EQ(to_string(ApiKind::two_d), "2d");
  EXPECT_EQ(to_string(ApiKind::virtual_), "virtual");
  EXPECT_EQ(to_string(ApiKind::default_), "default");
  EXPECT_EQ(to_string(ApiKind::none), "");
  EXPECT_EQ(to_string(Vendor::hip), "hip");
  // Descriptor copies need their descriptor.
  for (auto table : {cuda_api_table(), hip_api_table()}) {
    for (const ApiSpec& s : table) {
      if (s.family == Family::copy && (s.kind == ApiKind::two_d || s.kind == ApiKind::three_d)) {
        EXPECT_GE(s.blob_len, s.kind == ApiKind::two_d ? 128 : 200) << s.symbol;
      }
    }
  }
}
