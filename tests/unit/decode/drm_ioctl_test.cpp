// DRM ioctl decoding (core, i915, xe, amdgpu) on argument images built byte
// by byte, with the offsets of docs/reference/abi-reference.md §7 written out here
// (not taken from the decoder's mirror structs, so a wrong mirror fails).
#include <gtest/gtest.h>

#include <string>

#include "catalogue/driver_catalogue.h"
#include "decode/driver_ioctl.h"
#include "events.h"

using namespace gpuobs;
using json = nlohmann::json;

namespace {

struct Image {
  std::string b;
  explicit Image(size_t size) : b(size, '\0') {}
  Image& put(size_t off, uint64_t v, size_t width) {
    for (size_t i = 0; i < width; ++i) b.at(off + i) = char((v >> (8 * i)) & 0xff);
    return *this;
  }
  Image& u16(size_t off, uint16_t v) { return put(off, v, 2); }
  Image& u32(size_t off, uint32_t v) { return put(off, v, 4); }
  Image& u64(size_t off, uint64_t v) { return put(off, v, 8); }
};

// _IOC with type 'd': dir 1 = _IOW, 3 = _IOWR.
constexpr uint32_t drm_cmd(uint32_t dir, uint32_t nr, uint32_t size) {
  return dir << 30 | size << 16 | 0x64u << 8 | nr;
}

DecodedIoctl decode(uint32_t driver, uint32_t cmd, const std::string& head, const std::string& aux = "",
                    int64_t ret = 0) {
  IoctlCapture c;
  c.driver = driver;
  c.cmd = cmd;
  c.ret = ret;
  c.head = head;
  c.aux = aux;
  return decode_ioctl(c);
}

// ---- core DRM ----

TEST(DrmCoreIoctl, SyncobjCreateAndWait) {
  Image create(8);
  create.u32(0, 7).u32(4, 1);  // handle (out), flags = CREATE_SIGNALED
  auto d = decode(GPUOBS_DRV_I915, drm_cmd(3, 0xbf, 8), create.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_SYNCOBJ_CREATE");
  EXPECT_EQ(d.fields, json({{"handle", 7}, {"flags", 1}}));
  EXPECT_FALSE(d.failed);
  EXPECT_TRUE(d.args_complete);

  Image wait(40);  // handles, timeout_nsec, count_handles @16, flags @20, first_signaled @24, pad, deadline
  wait.u64(0, 0x7f0000001000).u64(8, uint64_t(-1)).u32(16, 2).u32(20, 1 | 2).u32(24, 1);
  d = decode(GPUOBS_DRV_AMDGPU, drm_cmd(3, 0xc3, 40), wait.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_SYNCOBJ_WAIT");
  EXPECT_EQ(d.fields["count_handles"], 2);
  EXPECT_EQ(d.fields["timeout_nsec"], -1);
  EXPECT_EQ(d.fields["flag_names"], json({"WAIT_ALL", "WAIT_FOR_SUBMIT"}));
  EXPECT_EQ(d.fields["first_signaled"], 1);
}

TEST(DrmCoreIoctl, FailedCallHasNoOutputs) {
  Image create(8);
  create.u32(0, 7);
  auto d = decode(GPUOBS_DRV_XE, drm_cmd(3, 0xbf, 8), create.b, "", -22);
  EXPECT_EQ(d.request, "DRM_IOCTL_SYNCOBJ_CREATE");
  EXPECT_TRUE(d.failed);
  EXPECT_FALSE(d.fields.contains("handle")) << "a refused call created nothing";
}

TEST(DrmCoreIoctl, GetCapAndNamedOnly) {
  Image cap(16);
  cap.u64(0, 0x13).u64(8, 1);
  auto d = decode(GPUOBS_DRV_DRM, drm_cmd(3, 0x0c, 16), cap.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_GET_CAP");
  EXPECT_EQ(d.fields["capability_name"], "DRM_CAP_SYNCOBJ");
  EXPECT_EQ(d.fields["value"], 1);
  // Modesetting: a name and no fields.
  d = decode(GPUOBS_DRV_DRM, drm_cmd(3, 0xa0, 64), std::string(64, '\0'));
  EXPECT_EQ(d.request, "DRM_IOCTL_MODE_GETRESOURCES");
  EXPECT_TRUE(d.fields.empty());
  // Another driver's own request on a plain DRM node: not known.
  d = decode(GPUOBS_DRV_DRM, drm_cmd(3, 0x44, 24), std::string(24, '\0'));
  EXPECT_EQ(d.request, "");
  // Not a DRM number at all.
  d = decode(GPUOBS_DRV_I915, 0xC0084B01, std::string(8, '\0'));
  EXPECT_EQ(d.request, "");
}

// ---- i915 ----

// drm_i915_gem_execbuffer2 (64 B): buffers_ptr @0, buffer_count @8,
// batch_start_offset @12, batch_len @16, flags @40, rsvd1 @48, rsvd2 @56.
Image execbuf(uint32_t buffers, uint64_t flags, uint64_t ctx, uint64_t rsvd2 = 0) {
  Image e(64);
  e.u64(0, 0x7f0000002000).u32(8, buffers).u32(12, 64).u32(16, 4096).u64(40, flags).u64(48, ctx).u64(56, rsvd2);
  return e;
}

TEST(I915Ioctl, Execbuffer2RenderWithContext) {
  uint64_t flags = 1 | (1u << 11) | (1u << 12) | (1u << 17);  // RENDER, NO_RELOC, HANDLE_LUT, FENCE_OUT
  auto d = decode(GPUOBS_DRV_I915, drm_cmd(1, 0x69, 64), execbuf(3, flags, 5).b);
  EXPECT_EQ(d.request, "DRM_IOCTL_I915_GEM_EXECBUFFER2");
  EXPECT_EQ(d.fields["buffer_count"], 3);
  EXPECT_EQ(d.fields["batch_start_offset"], 64);
  EXPECT_EQ(d.fields["batch_len"], 4096);
  EXPECT_EQ(d.fields["ring"], 1);
  EXPECT_EQ(d.fields["engine"], "render");
  EXPECT_EQ(d.fields["ctx_id"], 5);
  EXPECT_EQ(d.fields["flag_names"], json({"NO_RELOC", "HANDLE_LUT", "FENCE_OUT"}));
  EXPECT_FALSE(d.fields.contains("fence_out_fd")) << "_IOW: the kernel writes no fence back";
  EXPECT_TRUE(d.args_complete);
}

TEST(I915Ioctl, Execbuffer2WrBlitterWithFences) {
  uint64_t flags = 3 | (1u << 16) | (1u << 17);  // BLT, FENCE_IN, FENCE_OUT
  auto d = decode(GPUOBS_DRV_I915, drm_cmd(3, 0x69, 64), execbuf(1, flags, 2, (9ull << 32) | 4).b);
  EXPECT_EQ(d.request, "DRM_IOCTL_I915_GEM_EXECBUFFER2_WR");
  EXPECT_EQ(d.fields["engine"], "blt");
  EXPECT_EQ(d.fields["fence_in_fd"], 4);
  EXPECT_EQ(d.fields["fence_out_fd"], 9);
  // An engine-map index beyond the legacy rings.
  d = decode(GPUOBS_DRV_I915, drm_cmd(1, 0x69, 64), execbuf(1, 7, 2).b);
  EXPECT_EQ(d.fields["engine"], "engine[7]");
}

TEST(I915Ioctl, CutExecbufferIsIncomplete) {
  std::string cut = execbuf(3, 1, 5).b.substr(0, 40);  // ends before flags
  auto d = decode(GPUOBS_DRV_I915, drm_cmd(1, 0x69, 64), cut);
  EXPECT_EQ(d.fields["buffer_count"], 3);
  EXPECT_FALSE(d.fields.contains("engine"));
  EXPECT_FALSE(d.fields.contains("ctx_id"));
  EXPECT_FALSE(d.args_complete);
}

TEST(I915Ioctl, CreateContextsAndMmap) {
  Image create(16);
  create.u64(0, 65536).u32(8, 3);
  auto d = decode(GPUOBS_DRV_I915, drm_cmd(3, 0x5b, 16), create.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_I915_GEM_CREATE");
  EXPECT_EQ(d.fields, json({{"size", 65536}, {"handle", 3}}));
  d = decode(GPUOBS_DRV_I915, drm_cmd(3, 0x5b, 16), create.b, "", -12);
  EXPECT_TRUE(d.failed);
  EXPECT_EQ(d.fields, json({{"size", 65536}}));

  Image ctx(16);  // create_ext: ctx_id (out), flags, extensions
  ctx.u32(0, 4).u32(4, 1).u64(8, 0x7f0000003000);
  d = decode(GPUOBS_DRV_I915, drm_cmd(3, 0x6d, 16), ctx.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_I915_GEM_CONTEXT_CREATE_EXT");
  EXPECT_EQ(d.fields["ctx_id"], 4);
  EXPECT_EQ(d.fields["flags"], 1);
  Image destroy(8);
  destroy.u32(0, 4);
  d = decode(GPUOBS_DRV_I915, drm_cmd(1, 0x6e, 8), destroy.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_I915_GEM_CONTEXT_DESTROY");
  EXPECT_EQ(d.fields["ctx_id"], 4);

  Image mmap(32);  // handle, pad, offset (out), flags, extensions
  mmap.u32(0, 3).u64(8, 0x100000).u64(16, 1);
  d = decode(GPUOBS_DRV_I915, drm_cmd(3, 0x64, 32), mmap.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_I915_GEM_MMAP_OFFSET");
  EXPECT_EQ(d.fields["mmap_type"], "WC");
  EXPECT_EQ(d.fields["offset"], 0x100000);
}

TEST(I915Ioctl, ContextEngineMapAndVm) {
  Image p(24);  // drm_i915_gem_context_param: ctx_id, size @4, param @8, value @16
  p.u32(0, 5).u32(4, 40).u64(8, 0xa).u64(16, 0x7f000000a000);
  auto d = decode(GPUOBS_DRV_I915, drm_cmd(3, 0x75, 24), p.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_I915_GEM_CONTEXT_SETPARAM");
  EXPECT_EQ(d.fields,
            json({{"ctx_id", 5}, {"size", 40}, {"param", 0xa}, {"param_name", "ENGINES"}, {"value", 0x7f000000a000}}));
  d = decode(GPUOBS_DRV_I915, drm_cmd(3, 0x74, 24), p.b, "", -22);
  EXPECT_EQ(d.request, "DRM_IOCTL_I915_GEM_CONTEXT_GETPARAM");
  EXPECT_FALSE(d.fields.contains("value")) << "GET failed: no answer";
  Image vm(16);  // drm_i915_gem_vm_control: extensions, flags @8, vm_id @12
  vm.u32(12, 2);
  d = decode(GPUOBS_DRV_I915, drm_cmd(3, 0x7a, 16), vm.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_I915_GEM_VM_CREATE");
  EXPECT_EQ(d.fields, json({{"flags", 0}, {"vm_id", 2}}));
}

// ---- xe ----

// drm_xe_vm_bind_op (80 B): obj @8, pat_index @12, obj_offset @16, range @24, addr @32, op @40, flags @44.
Image bind_op(uint32_t op, uint32_t obj, uint64_t range, uint64_t addr) {
  Image b(80);
  b.u32(8, obj).u16(12, 2).u64(24, range).u64(32, addr).u32(40, op);
  return b;
}

TEST(XeIoctl, ExecNamesItsQueue) {
  Image e(56);  // exec_queue_id @8, num_syncs @12, syncs @16, address @24, num_batch_buffer @32
  e.u32(8, 7).u32(12, 1).u64(16, 0x7f0000004000).u64(24, 0x1a0000).u16(32, 1);
  auto d = decode(GPUOBS_DRV_XE, drm_cmd(1, 0x49, 56), e.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_XE_EXEC");
  EXPECT_EQ(d.fields, json({{"exec_queue_id", 7},
                            {"num_syncs", 1},
                            {"syncs", 0x7f0000004000},
                            {"address", 0x1a0000},
                            {"num_batch_buffer", 1}}));
}

TEST(XeIoctl, VmBindInlineAndThroughTheArray) {
  // drm_xe_vm_bind (136 B): vm_id @8, exec_queue_id @12, num_binds @20, bind/vector_of_binds @24, num_syncs @108.
  Image one(136);
  one.u32(8, 1).u32(20, 1).u32(108, 1);
  one.b.replace(24, 80, bind_op(0, 4, 0x10000, 0x200000).b);
  auto d = decode(GPUOBS_DRV_XE, drm_cmd(1, 0x45, 136), one.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_XE_VM_BIND");
  ASSERT_EQ(d.fields["binds"].size(), 1u);
  EXPECT_EQ(d.fields["binds"][0]["op_name"], "MAP");
  EXPECT_EQ(d.fields["binds"][0]["obj"], 4);
  EXPECT_EQ(d.fields["binds"][0]["range"], 0x10000);
  EXPECT_EQ(d.fields["binds"][0]["addr"], 0x200000);
  EXPECT_EQ(d.fields["binds"][0]["pat_index"], 2);
  EXPECT_TRUE(d.args_complete);

  Image two(136);
  two.u32(8, 1).u32(20, 2).u64(24, 0x7f0000005000);
  std::string aux = bind_op(0, 5, 0x20000, 0x400000).b + bind_op(1, 0, 0x10000, 0x200000).b;
  d = decode(GPUOBS_DRV_XE, drm_cmd(1, 0x45, 136), two.b, aux);
  ASSERT_EQ(d.fields["binds"].size(), 2u);
  EXPECT_EQ(d.fields["vector_of_binds"], 0x7f0000005000);
  EXPECT_EQ(d.fields["binds"][0]["op_name"], "MAP");
  EXPECT_EQ(d.fields["binds"][0]["addr"], 0x400000);
  EXPECT_EQ(d.fields["binds"][1]["op_name"], "UNMAP");
  EXPECT_EQ(d.fields["binds"][1]["addr"], 0x200000);
  EXPECT_TRUE(d.args_complete);

  // The array unreadable after its first bind: that one is kept, the call is incomplete.
  d = decode(GPUOBS_DRV_XE, drm_cmd(1, 0x45, 136), two.b, aux.substr(0, 80));
  EXPECT_EQ(d.fields["binds"].size(), 1u);
  EXPECT_FALSE(d.args_complete);
  // More binds than the rule copies: counted as cut.
  two.u32(20, 5);
  d = decode(GPUOBS_DRV_XE, drm_cmd(1, 0x45, 136), two.b, aux + bind_op(2, 0, 4096, 0x800000).b);
  EXPECT_EQ(d.fields["binds"].size(), 3u);
  EXPECT_EQ(d.fields["binds"][2]["op_name"], "MAP_USERPTR");
  EXPECT_EQ(d.fields["binds_cut"], 2);
  EXPECT_FALSE(d.args_complete);
}

TEST(XeIoctl, ExecQueueCreateWithItsEngines) {
  // drm_xe_exec_queue_create (48 B): width @8, num_placements @10, vm_id @12, flags @16, exec_queue_id @20,
  // instances @24; each drm_xe_engine_class_instance: class, instance, gt_id, pad (u16 each).
  Image q(48);
  q.u16(8, 1).u16(10, 2).u32(12, 1).u32(20, 9).u64(24, 0x7f0000006000);
  Image inst(16);
  inst.u16(0, 4).u16(2, 0).u16(8, 4).u16(10, 1).u16(12, 1);
  auto d = decode(GPUOBS_DRV_XE, drm_cmd(3, 0x46, 48), q.b, inst.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_XE_EXEC_QUEUE_CREATE");
  EXPECT_EQ(d.fields["engine"], "COMPUTE");
  ASSERT_EQ(d.fields["engines"].size(), 2u);
  EXPECT_EQ(d.fields["engines"][1],
            json({{"engine_class", 4}, {"engine_class_name", "COMPUTE"}, {"engine_instance", 1}, {"gt_id", 1}}));
  EXPECT_EQ(d.fields["exec_queue_id"], 9);
  EXPECT_EQ(d.fields["vm_id"], 1);
  EXPECT_TRUE(d.args_complete);
  // Failed: no queue id; the instances unreadable: incomplete.
  d = decode(GPUOBS_DRV_XE, drm_cmd(3, 0x46, 48), q.b, "", -22);
  EXPECT_FALSE(d.fields.contains("exec_queue_id"));
  EXPECT_FALSE(d.args_complete);
  EXPECT_TRUE(d.failed);
}

TEST(XeIoctl, GemCreateAndWaitUserFence) {
  Image g(56);  // size @8, placement @16, flags @20, vm_id @24, handle @28, cpu_caching @32
  g.u64(8, 1 << 20).u32(16, 0x2).u32(24, 1).u32(28, 6).u16(32, 2);
  auto d = decode(GPUOBS_DRV_XE, drm_cmd(3, 0x41, 56), g.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_XE_GEM_CREATE");
  EXPECT_EQ(d.fields["size"], 1 << 20);
  EXPECT_EQ(d.fields["placement"], 2);
  EXPECT_EQ(d.fields["handle"], 6);
  EXPECT_EQ(d.fields["cpu_caching"], 2);
  Image w(72);  // addr @8, op @16, flags @18, value @24, mask @32, timeout @40, exec_queue_id @48
  w.u64(8, 0x7f0000007000).u16(16, 3).u64(24, 5).u64(32, ~0ull).u64(40, 1000000).u32(48, 7);
  d = decode(GPUOBS_DRV_XE, drm_cmd(3, 0x4a, 72), w.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_XE_WAIT_USER_FENCE");
  EXPECT_EQ(d.fields["op_name"], "GTE");
  EXPECT_EQ(d.fields["timeout"], 1000000);
  EXPECT_EQ(d.fields["exec_queue_id"], 7);
}

// ---- amdgpu ----

// The CS aux block (events.h struct gpuobs_amdgpu_cs_aux): in0, chunks_read, data_read, then 40-byte chunks.
struct CsAux {
  Image a{256};
  uint32_t n = 0, mask = 0;
  explicit CsAux(uint64_t in0) { a.u64(0, in0); }
  CsAux& chunk(uint32_t id, uint32_t length_dw, const Image& data, bool data_ok = true) {
    size_t off = 16 + 40 * n;
    a.u32(off, id).u32(off + 4, length_dw);
    a.b.replace(off + 8, std::min<size_t>(32, data.b.size()), data.b.substr(0, 32));
    if (data_ok) mask |= 1u << n;
    ++n;
    a.u32(8, n).u32(12, mask);
    return *this;
  }
  std::string bytes() const { return a.b.substr(0, 16 + 40 * n); }
};

// drm_amdgpu_cs_chunk_ib (32 B): flags @4, va_start @8, ib_bytes @16, ip_type @20, ip_instance @24, ring @28.
Image ib(uint32_t ip_type, uint32_t ring, uint32_t bytes) {
  Image i(32);
  i.u64(8, 0x800000000).u32(16, bytes).u32(20, ip_type).u32(28, ring);
  return i;
}

// drm_amdgpu_cs_in (24 B): ctx_id, bo_list_handle, num_chunks @8, flags @12, chunks @16.
Image cs_in(uint32_t ctx, uint32_t bo_list, uint32_t num_chunks) {
  Image c(24);
  c.u32(0, ctx).u32(4, bo_list).u32(8, num_chunks).u64(16, 0x7f0000008000);
  return c;
}

constexpr uint32_t kCs = drm_cmd(3, 0x44, 24);

TEST(AmdgpuIoctl, CsComputeWithFenceAndDependencies) {
  // Success: the kernel wrote the sequence number over ctx_id/bo_list_handle.
  Image out = cs_in(0, 0, 3);
  out.u64(0, 0x55);
  CsAux aux((9ull << 32) | 3);
  aux.chunk(1, 8, ib(1, 0, 256)).chunk(2, 2, Image(8)).chunk(3, 12, Image(32));
  auto d = decode(GPUOBS_DRV_AMDGPU, kCs, out.b, aux.bytes());
  EXPECT_EQ(d.request, "DRM_IOCTL_AMDGPU_CS");
  EXPECT_EQ(d.fields["ctx_id"], 3) << "from the entry image";
  EXPECT_EQ(d.fields["bo_list_handle"], 9);
  EXPECT_EQ(d.fields["handle"], 0x55);
  EXPECT_EQ(d.fields["num_chunks"], 3);
  EXPECT_EQ(d.fields["engine"], "COMPUTE");
  EXPECT_EQ(d.fields["ibs"], 1);
  EXPECT_EQ(d.fields["fences"], 1);
  EXPECT_EQ(d.fields["dependencies"], 2);
  ASSERT_EQ(d.fields["chunk_list"].size(), 3u);
  EXPECT_EQ(d.fields["chunk_list"][0]["chunk_name"], "IB");
  EXPECT_EQ(d.fields["chunk_list"][0]["ip_type_name"], "COMPUTE");
  EXPECT_EQ(d.fields["chunk_list"][0]["ib_bytes"], 256);
  EXPECT_EQ(d.fields["chunk_list"][1]["chunk_name"], "FENCE");
  EXPECT_EQ(d.fields["chunk_list"][2]["chunk_name"], "DEPENDENCIES");
  EXPECT_FALSE(d.failed);
  EXPECT_TRUE(d.args_complete);
}

TEST(AmdgpuIoctl, CsGangAndSyncobjs) {
  CsAux aux(2);  // the entry image: ctx_id 2, as in the head (the call failed)
  aux.chunk(1, 8, ib(0, 0, 512)).chunk(1, 8, ib(1, 2, 128)).chunk(4, 2, Image(8)).chunk(5, 1, Image(4));
  auto d = decode(GPUOBS_DRV_AMDGPU, kCs, cs_in(2, 0, 4).b, aux.bytes(), -25);
  EXPECT_EQ(d.fields["engine"], "GFX+COMPUTE");
  EXPECT_EQ(d.fields["ibs"], 2);
  EXPECT_EQ(d.fields["syncobj_in"], 2);
  EXPECT_EQ(d.fields["syncobj_out"], 1);
  EXPECT_EQ(d.fields["chunk_list"][1]["ring"], 2);
  EXPECT_EQ(d.fields["ctx_id"], 2);
  EXPECT_FALSE(d.fields.contains("handle")) << "failed: no sequence number";
  EXPECT_TRUE(d.failed);
  EXPECT_TRUE(d.args_complete);
}

TEST(AmdgpuIoctl, CsCutAndUnreadableChunks) {
  CsAux six(0);
  for (int i = 0; i < 6; ++i) six.chunk(1, 8, ib(0, 0, 64));
  auto d = decode(GPUOBS_DRV_AMDGPU, kCs, cs_in(1, 0, 8).b, six.bytes(), -25);
  EXPECT_EQ(d.fields["ibs"], 6);
  EXPECT_EQ(d.fields["chunks_cut"], 2);
  EXPECT_FALSE(d.args_complete);
  // One chunk of two read (the second pointer unreadable).
  CsAux one(0);
  one.chunk(1, 8, ib(1, 0, 64));
  d = decode(GPUOBS_DRV_AMDGPU, kCs, cs_in(1, 0, 2).b, one.bytes(), -25);
  EXPECT_EQ(d.fields["chunk_list"].size(), 1u);
  EXPECT_FALSE(d.args_complete);
  // The IB's payload unreadable: no engine, never a guessed one.
  CsAux nodata(0);
  nodata.chunk(1, 8, Image(32), false);
  d = decode(GPUOBS_DRV_AMDGPU, kCs, cs_in(1, 0, 1).b, nodata.bytes(), -25);
  EXPECT_FALSE(d.fields.contains("engine"));
  EXPECT_FALSE(d.args_complete);
  // A success without the entry image: the context is gone from the copy.
  Image out = cs_in(0, 0, 0);
  out.u64(0, 0x56);
  d = decode(GPUOBS_DRV_AMDGPU, kCs, out.b, "");
  EXPECT_FALSE(d.fields.contains("ctx_id"));
  EXPECT_EQ(d.fields["handle"], 0x56);
  EXPECT_FALSE(d.args_complete);
}

TEST(AmdgpuIoctl, GemCreateInputsFromTheEntryImage) {
  // drm_amdgpu_gem_create_in (32 B): bo_size, alignment @8, domains @16, domain_flags @24. A success
  // clears the union and writes out.handle @0 (amdgpu_gem_create_ioctl): the exit copy is the handle
  // and zeros, the inputs are in the entry image (aux, 32 bytes).
  Image in(32);
  in.u64(0, 1 << 20).u64(8, 4096).u64(16, 0x4).u64(24, 1);
  Image out(32);
  out.u32(0, 12);
  auto d = decode(GPUOBS_DRV_AMDGPU, drm_cmd(3, 0x40, 32), out.b, in.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_AMDGPU_GEM_CREATE");
  EXPECT_EQ(d.fields["bo_size"], 1 << 20);
  EXPECT_EQ(d.fields["alignment"], 4096);
  EXPECT_EQ(d.fields["domain_names"], json({"VRAM"}));
  EXPECT_EQ(d.fields["domain_flags"], 1);
  EXPECT_EQ(d.fields["handle"], 12);
  EXPECT_TRUE(d.args_complete);
  // Failed and no entry image: the exit copy still holds the inputs; no handle.
  Image failed(32);
  failed.u64(0, 1 << 20).u64(16, 0x2 | 0x4);
  d = decode(GPUOBS_DRV_AMDGPU, drm_cmd(3, 0x40, 32), failed.b, "", -12);
  EXPECT_EQ(d.fields["bo_size"], 1 << 20);
  EXPECT_EQ(d.fields["domain_names"], json({"GTT", "VRAM"}));
  EXPECT_FALSE(d.fields.contains("handle"));
  EXPECT_TRUE(d.args_complete);
  // Succeeded with only 8 entry bytes (a struct at a page end): bo_size; never the zeros read as inputs.
  d = decode(GPUOBS_DRV_AMDGPU, drm_cmd(3, 0x40, 32), out.b, in.b.substr(0, 8));
  EXPECT_EQ(d.fields["bo_size"], 1 << 20);
  EXPECT_FALSE(d.fields.contains("domains"));
  EXPECT_EQ(d.fields["handle"], 12);
  EXPECT_FALSE(d.args_complete);
  // Succeeded without an entry image: only the output.
  d = decode(GPUOBS_DRV_AMDGPU, drm_cmd(3, 0x40, 32), out.b, "");
  EXPECT_EQ(d.fields, json({{"handle", 12}}));
  EXPECT_FALSE(d.args_complete);
}

TEST(AmdgpuIoctl, CtxAllocAndWaitCs) {
  Image in(16);  // op = AMDGPU_CTX_OP_ALLOC_CTX, flags, ctx_id, priority = HIGH (512)
  in.u32(0, 1).u32(12, 512);
  Image out = in;
  out.u32(0, 2);  // out.alloc.ctx_id over op
  // The entry image is 32 bytes of the caller's memory: past the 16-byte struct is not the argument.
  auto d = decode(GPUOBS_DRV_AMDGPU, drm_cmd(3, 0x42, 16), out.b, in.b + std::string(16, '\x7f'));
  EXPECT_EQ(d.request, "DRM_IOCTL_AMDGPU_CTX");
  EXPECT_EQ(d.fields, json({{"op", 1}, {"op_name", "ALLOC_CTX"}, {"flags", 0}, {"priority", 512}, {"ctx_id", 2}}));
  EXPECT_TRUE(d.args_complete);

  // drm_amdgpu_wait_cs_in (32 B): handle, timeout @8, ip_type @16, ip_instance @20, ring @24, ctx_id @28.
  // A success clears it and writes out.status (1: busy) @0.
  Image wait(32);
  wait.u64(0, 0x55).u64(8, 1000000000).u32(16, 1).u32(24, 2).u32(28, 3);
  Image status(32);
  status.u64(0, 1);
  d = decode(GPUOBS_DRV_AMDGPU, drm_cmd(3, 0x49, 32), status.b, wait.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_AMDGPU_WAIT_CS");
  EXPECT_EQ(d.fields["handle"], 0x55);
  EXPECT_EQ(d.fields["timeout"], 1000000000);
  EXPECT_EQ(d.fields["ip_type_name"], "COMPUTE");
  EXPECT_EQ(d.fields["ring"], 2);
  EXPECT_EQ(d.fields["ctx_id"], 3);
  EXPECT_EQ(d.status, 1);
  EXPECT_EQ(d.status_name, "busy");
  EXPECT_FALSE(d.failed) << "a wait that timed out is an answer";
  // No entry image: the cleared struct is not read as GFX ring 0 of context 0.
  d = decode(GPUOBS_DRV_AMDGPU, drm_cmd(3, 0x49, 32), status.b, "");
  EXPECT_FALSE(d.fields.contains("ip_type_name"));
  EXPECT_FALSE(d.fields.contains("ctx_id"));
  EXPECT_EQ(d.status, 1);
  EXPECT_FALSE(d.args_complete);
}

TEST(AmdgpuIoctl, UserQueueAndInfo) {
  Image q(72);  // op, queue_id, ip_type @8, doorbell_handle @12, doorbell_offset @16, flags @20, queue_va @24
  q.u32(0, 4).u32(8, 1).u32(12, 11).u64(24, 0x900000000).u64(32, 1 << 16);  // out queue_id = 4
  Image in0(8);
  in0.u32(0, 1);  // AMDGPU_USERQ_OP_CREATE
  auto d = decode(GPUOBS_DRV_AMDGPU, drm_cmd(3, 0x56, 72), q.b, in0.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_AMDGPU_USERQ");
  EXPECT_EQ(d.fields["op_name"], "CREATE");
  EXPECT_EQ(d.fields["ip_type_name"], "COMPUTE");
  EXPECT_EQ(d.fields["queue_id"], 4);
  EXPECT_EQ(d.fields["queue_size"], 1 << 16);

  Image info(32);  // return_pointer, return_size @8, query @12, query_hw_ip.type @16
  info.u64(0, 0x7f0000009000).u32(8, 64).u32(12, 0x02).u32(16, 2);
  d = decode(GPUOBS_DRV_AMDGPU, drm_cmd(1, 0x45, 32), info.b);
  EXPECT_EQ(d.request, "DRM_IOCTL_AMDGPU_INFO");
  EXPECT_EQ(d.fields["query_name"], "HW_IP_INFO");
  EXPECT_EQ(d.fields["ip_type_name"], "DMA");
}

}  // namespace

// What the loader installs for BPF (catalogue/ioctl_rules.cpp): the blocks
// the decoders above read from aux.
TEST(DrmRules, WhatBpfCopies) {
  auto rules = ioctl_rules(NvidiaVersion{});
  auto find = [&](uint32_t driver, uint32_t cmd) -> const gpuobs_ioctl_rule* {
    for (const auto& r : rules)
      if (r.key.driver == driver && r.key.cmd_key == ioctl_cmd_key(driver, cmd)) return &r.rule;
    return nullptr;
  };
  // Keys drop direction and size: _IOW and _IOWR, any size, one rule.
  EXPECT_EQ(ioctl_cmd_key(GPUOBS_DRV_XE, drm_cmd(1, 0x45, 136)), 0x6445u);
  EXPECT_EQ(ioctl_cmd_key(GPUOBS_DRV_AMDGPU, drm_cmd(3, 0x44, 24)), 0x6444u);
  const auto* bind = find(GPUOBS_DRV_XE, drm_cmd(1, 0x45, 136));
  ASSERT_NE(bind, nullptr);
  EXPECT_EQ(bind->aux_mode, GPUOBS_IOCTL_AUX_PTR);
  EXPECT_EQ(bind->aux_off, 24);   // vector_of_binds
  EXPECT_EQ(bind->aux_len, 240);  // 3 bind ops of 80 bytes
  EXPECT_EQ(bind->head_len, 0);   // _IOC_SIZE
  const auto* queue = find(GPUOBS_DRV_XE, drm_cmd(3, 0x46, 48));
  ASSERT_NE(queue, nullptr);
  EXPECT_EQ(queue->aux_off, 24);  // instances
  EXPECT_EQ(queue->aux_len, 64);  // 8 engine class instances
  const auto* cs = find(GPUOBS_DRV_AMDGPU, drm_cmd(3, 0x44, 24));
  ASSERT_NE(cs, nullptr);
  EXPECT_EQ(cs->aux_mode, GPUOBS_IOCTL_AUX_AMDGPU_CS);
  EXPECT_EQ(cs->aux_len, sizeof(gpuobs_amdgpu_cs_aux));
  for (uint32_t nr : {0x40u, 0x41u, 0x42u, 0x43u, 0x49u, 0x56u}) {  // the unions
    const auto* r = find(GPUOBS_DRV_AMDGPU, drm_cmd(3, nr, 16));
    ASSERT_NE(r, nullptr) << nr;
    EXPECT_EQ(r->aux_mode, GPUOBS_IOCTL_AUX_ENTRY) << nr;
    EXPECT_EQ(r->aux_len, 32) << nr;  // GPUOBS_IOCTL_ENTRY_MAX
  }
  EXPECT_EQ(find(GPUOBS_DRV_AMDGPU, drm_cmd(1, 0x48, 64)), nullptr) << "GEM_VA is no union";
  EXPECT_EQ(find(GPUOBS_DRV_I915, drm_cmd(1, 0x69, 64)), nullptr) << "EXECBUFFER2 fits its head";
}
