// The DRM uapi gpuobs decodes: request numbers and the argument structs of
// the core DRM, i915, xe and amdgpu ioctls, written from the kernel's
// include/uapi/drm/{drm,i915_drm,xe_drm,amdgpu_drm}.h (the VM building
// gpuobs has none of them, so these are mirrors, not includes). Every size
// and offset the decoders (decode/drm_*.cpp) and the BPF rules
// (catalogue/ioctl_rules.cpp, bpf/drm.bpf.h) rely on is asserted below
// against the numbers recorded in docs/reference/abi-reference.md §7.
#pragma once

#include <cstddef>
#include <cstdint>

#include "events.h"

namespace gpuobs::drm {

// _IOC: dir 31:30 (1 write, 2 read), size 29:16, type 15:8, nr 7:0.
constexpr uint32_t kIoctlType = 'd';     // DRM_IOCTL_BASE
constexpr uint32_t kCommandBase = 0x40;  // DRM_COMMAND_BASE: driver requests [0x40, 0xa0)
constexpr uint32_t kCommandEnd = 0xa0;
constexpr uint32_t ioc(uint32_t dir, uint32_t nr, uint32_t size) {
  return (dir << 30) | (size << 16) | (kIoctlType << 8) | nr;
}
constexpr uint32_t iow(uint32_t nr, uint32_t size) { return ioc(1, nr, size); }
constexpr uint32_t iowr(uint32_t nr, uint32_t size) { return ioc(3, nr, size); }

// ---- core DRM (drm.h) -------------------------------------------------------
enum CoreNr : uint32_t {
  kVersion = 0x00,
  kGemClose = 0x09,
  kGetCap = 0x0c,
  kSetClientCap = 0x0d,
  kPrimeHandleToFd = 0x2d,
  kPrimeFdToHandle = 0x2e,
  kSyncobjCreate = 0xbf,
  kSyncobjDestroy = 0xc0,
  kSyncobjHandleToFd = 0xc1,
  kSyncobjFdToHandle = 0xc2,
  kSyncobjWait = 0xc3,
  kSyncobjReset = 0xc4,
  kSyncobjSignal = 0xc5,
  kSyncobjTimelineWait = 0xca,
  kSyncobjQuery = 0xcb,
  kSyncobjTransfer = 0xcc,
  kSyncobjTimelineSignal = 0xcd,
};

struct Version {  // struct drm_version (int, int, int, then size_t/pointer pairs)
  int32_t version_major, version_minor, version_patchlevel;
  uint32_t pad;
  uint64_t name_len, name, date_len, date, desc_len, desc;
};
struct GetCap {  // struct drm_get_cap
  uint64_t capability, value;
};
struct GemClose {  // struct drm_gem_close
  uint32_t handle, pad;
};
struct PrimeHandle {  // struct drm_prime_handle
  uint32_t handle, flags;
  int32_t fd;
};
struct SyncobjCreate {  // struct drm_syncobj_create (and _destroy: handle, pad)
  uint32_t handle, flags;
};
struct SyncobjWait {  // struct drm_syncobj_wait
  uint64_t handles;
  int64_t timeout_nsec;
  uint32_t count_handles, flags, first_signaled, pad;
  uint64_t deadline_nsec;
};
struct SyncobjTimelineWait {  // struct drm_syncobj_timeline_wait
  uint64_t handles, points;
  int64_t timeout_nsec;
  uint32_t count_handles, flags, first_signaled, pad;
  uint64_t deadline_nsec;
};
struct SyncobjArray {  // struct drm_syncobj_array (RESET, SIGNAL)
  uint64_t handles;
  uint32_t count_handles, pad;
};
struct SyncobjTimelineArray {  // struct drm_syncobj_timeline_array (QUERY, TIMELINE_SIGNAL)
  uint64_t handles, points;
  uint32_t count_handles, flags;
};
static_assert(sizeof(Version) == 64 && offsetof(Version, name_len) == 16 && offsetof(Version, desc) == 56);
static_assert(sizeof(GetCap) == 16 && sizeof(GemClose) == 8 && sizeof(PrimeHandle) == 12);
static_assert(sizeof(SyncobjWait) == 40 && offsetof(SyncobjWait, count_handles) == 16 &&
              offsetof(SyncobjWait, first_signaled) == 24 && offsetof(SyncobjWait, deadline_nsec) == 32);
static_assert(sizeof(SyncobjTimelineWait) == 48 && offsetof(SyncobjTimelineWait, count_handles) == 24 &&
              offsetof(SyncobjTimelineWait, first_signaled) == 32);
static_assert(sizeof(SyncobjArray) == 16 && sizeof(SyncobjTimelineArray) == 24 &&
              offsetof(SyncobjTimelineArray, count_handles) == 16);

// ---- i915 (i915_drm.h); nr relative to kCommandBase --------------------------
enum I915Nr : uint32_t {
  kI915Getparam = 0x06,
  kI915GemCreate = 0x1b,
  kI915GemMmapOffset = 0x24,   // DRM_I915_GEM_MMAP_GTT's number, struct drm_i915_gem_mmap_offset
  kI915GemExecbuffer2 = 0x29,  // _IOW; EXECBUFFER2_WR is the same number, _IOWR
  kI915GemWait = 0x2c,
  kI915GemContextCreate = 0x2d,  // and CONTEXT_CREATE_EXT (16 bytes)
  kI915GemContextDestroy = 0x2e,
  kI915GemContextGetparam = 0x34,
  kI915GemContextSetparam = 0x35,
  kI915Query = 0x39,
  kI915GemVmCreate = 0x3a,
  kI915GemVmDestroy = 0x3b,
  kI915GemCreateExt = 0x3c,
};
struct I915Execbuffer2 {  // struct drm_i915_gem_execbuffer2
  uint64_t buffers_ptr;
  uint32_t buffer_count, batch_start_offset, batch_len, DR1, DR4, num_cliprects;
  uint64_t cliprects_ptr, flags, rsvd1, rsvd2;
};
// drm_i915_gem_execbuffer2.flags
constexpr uint64_t kI915ExecRingMask = 0x3f;  // I915_EXEC_RING_MASK: legacy ring, or engine-map index
constexpr uint64_t kI915ExecFenceIn = 1u << 16;
constexpr uint64_t kI915ExecFenceOut = 1u << 17;
constexpr uint64_t kI915ExecFenceArray = 1u << 19;
constexpr uint64_t kI915ExecFenceSubmit = 1u << 20;
constexpr uint64_t kI915ContextIdMask = 0xffffffffu;  // I915_EXEC_CONTEXT_ID_MASK, in rsvd1
struct I915GemCreate {                                // struct drm_i915_gem_create
  uint64_t size;
  uint32_t handle, pad;
};
struct I915GemCreateExt {  // struct drm_i915_gem_create_ext
  uint64_t size;
  uint32_t handle, flags;
  uint64_t extensions;
};
struct I915ContextCreateExt {  // struct drm_i915_gem_context_create_ext (the 8-byte _create is its head)
  uint32_t ctx_id, flags;
  uint64_t extensions;
};
struct I915GemWait {  // struct drm_i915_gem_wait
  uint32_t bo_handle, flags;
  int64_t timeout_ns;
};
struct I915GemMmapOffset {  // struct drm_i915_gem_mmap_offset
  uint32_t handle, pad;
  uint64_t offset, flags, extensions;
};
struct I915Query {  // struct drm_i915_query
  uint32_t num_items, flags;
  uint64_t items_ptr;
};
struct I915ContextParam {  // struct drm_i915_gem_context_param (GET/SETPARAM)
  uint32_t ctx_id, size;
  uint64_t param, value;
};
struct I915VmControl {  // struct drm_i915_gem_vm_control (VM_CREATE/DESTROY)
  uint64_t extensions;
  uint32_t flags, vm_id;
};
struct I915Getparam {  // drm_i915_getparam_t: __s32 param, int __user *value
  int32_t param;
  uint32_t pad;
  uint64_t value;
};
static_assert(sizeof(I915Execbuffer2) == 64 && offsetof(I915Execbuffer2, buffer_count) == 8 &&
              offsetof(I915Execbuffer2, batch_start_offset) == 12 && offsetof(I915Execbuffer2, batch_len) == 16 &&
              offsetof(I915Execbuffer2, flags) == 40 && offsetof(I915Execbuffer2, rsvd1) == 48 &&
              offsetof(I915Execbuffer2, rsvd2) == 56);
static_assert(sizeof(I915GemCreate) == 16 && sizeof(I915GemCreateExt) == 24 && offsetof(I915GemCreateExt, flags) == 12);
static_assert(sizeof(I915ContextCreateExt) == 16 && sizeof(I915GemWait) == 16 &&
              offsetof(I915GemWait, timeout_ns) == 8);
static_assert(sizeof(I915GemMmapOffset) == 32 && offsetof(I915GemMmapOffset, offset) == 8 &&
              offsetof(I915GemMmapOffset, flags) == 16);
static_assert(sizeof(I915Query) == 16 && sizeof(I915Getparam) == 16);
static_assert(sizeof(I915ContextParam) == 24 && offsetof(I915ContextParam, param) == 8 &&
              offsetof(I915ContextParam, value) == 16);
static_assert(sizeof(I915VmControl) == 16 && offsetof(I915VmControl, vm_id) == 12);

// ---- xe (xe_drm.h) ----------------------------------------------------------
enum XeNr : uint32_t {
  kXeDeviceQuery = 0x00,
  kXeGemCreate = 0x01,
  kXeGemMmapOffset = 0x02,
  kXeVmCreate = 0x03,
  kXeVmDestroy = 0x04,
  kXeVmBind = 0x05,
  kXeExecQueueCreate = 0x06,
  kXeExecQueueDestroy = 0x07,
  kXeExecQueueGetProperty = 0x08,
  kXeExec = 0x09,
  kXeWaitUserFence = 0x0a,
};
struct XeDeviceQuery {  // struct drm_xe_device_query
  uint64_t extensions;
  uint32_t query, size;
  uint64_t data, reserved[2];
};
struct XeGemCreate {  // struct drm_xe_gem_create
  uint64_t extensions, size;
  uint32_t placement, flags, vm_id, handle;
  uint16_t cpu_caching, pad[3];
  uint64_t reserved[2];
};
struct XeGemMmapOffset {  // struct drm_xe_gem_mmap_offset
  uint64_t extensions;
  uint32_t handle, flags;
  uint64_t offset, reserved[2];
};
struct XeVmCreate {  // struct drm_xe_vm_create
  uint64_t extensions;
  uint32_t flags, vm_id;
  uint64_t reserved[2];
};
struct XeVmDestroy {  // struct drm_xe_vm_destroy (and _exec_queue_destroy: id, pad, reserved[2])
  uint32_t vm_id, pad;
  uint64_t reserved[2];
};
struct XeVmBindOp {  // struct drm_xe_vm_bind_op
  uint64_t extensions;
  uint32_t obj;
  uint16_t pat_index, pad;
  uint64_t obj_offset;  // or userptr
  uint64_t range, addr;
  uint32_t op, flags, prefetch_mem_region_instance, pad2;
  uint64_t reserved[3];
};
struct XeVmBind {  // struct drm_xe_vm_bind
  uint64_t extensions;
  uint32_t vm_id, exec_queue_id, pad, num_binds;
  XeVmBindOp bind;  // num_binds == 1; else its first 8 bytes are vector_of_binds
  uint32_t pad2, num_syncs;
  uint64_t syncs, reserved[2];
};
struct XeEngineClassInstance {  // struct drm_xe_engine_class_instance
  uint16_t engine_class, engine_instance, gt_id, pad;
};
struct XeExecQueueCreate {  // struct drm_xe_exec_queue_create
  uint64_t extensions;
  uint16_t width, num_placements;
  uint32_t vm_id, flags, exec_queue_id;
  uint64_t instances;  // XeEngineClassInstance[width * num_placements]
  uint64_t reserved[2];
};
struct XeExec {  // struct drm_xe_exec
  uint64_t extensions;
  uint32_t exec_queue_id, num_syncs;
  uint64_t syncs, address;
  uint16_t num_batch_buffer, pad[3];
  uint64_t reserved[2];
};
struct XeWaitUserFence {  // struct drm_xe_wait_user_fence
  uint64_t extensions, addr;
  uint16_t op, flags;
  uint32_t pad;
  uint64_t value, mask;
  int64_t timeout;
  uint32_t exec_queue_id, pad2;
  uint64_t reserved[2];
};
static_assert(sizeof(XeDeviceQuery) == 40 && offsetof(XeDeviceQuery, query) == 8 &&
              offsetof(XeDeviceQuery, data) == 16);
static_assert(sizeof(XeGemCreate) == 56 && offsetof(XeGemCreate, placement) == 16 &&
              offsetof(XeGemCreate, vm_id) == 24 && offsetof(XeGemCreate, handle) == 28 &&
              offsetof(XeGemCreate, cpu_caching) == 32);
static_assert(sizeof(XeGemMmapOffset) == 40 && offsetof(XeGemMmapOffset, offset) == 16);
static_assert(sizeof(XeVmCreate) == 32 && offsetof(XeVmCreate, vm_id) == 12 && sizeof(XeVmDestroy) == 24);
static_assert(sizeof(XeVmBindOp) == 80 && offsetof(XeVmBindOp, obj) == 8 && offsetof(XeVmBindOp, obj_offset) == 16 &&
              offsetof(XeVmBindOp, range) == 24 && offsetof(XeVmBindOp, addr) == 32 && offsetof(XeVmBindOp, op) == 40 &&
              offsetof(XeVmBindOp, flags) == 44 && offsetof(XeVmBindOp, prefetch_mem_region_instance) == 48);
static_assert(sizeof(XeVmBind) == 136 && offsetof(XeVmBind, num_binds) == 20 && offsetof(XeVmBind, bind) == 24 &&
              offsetof(XeVmBind, num_syncs) == 108 && offsetof(XeVmBind, syncs) == 112);
static_assert(sizeof(XeEngineClassInstance) == 8);
static_assert(sizeof(XeExecQueueCreate) == 48 && offsetof(XeExecQueueCreate, width) == 8 &&
              offsetof(XeExecQueueCreate, num_placements) == 10 && offsetof(XeExecQueueCreate, vm_id) == 12 &&
              offsetof(XeExecQueueCreate, exec_queue_id) == 20 && offsetof(XeExecQueueCreate, instances) == 24);
static_assert(sizeof(XeExec) == 56 && offsetof(XeExec, exec_queue_id) == 8 && offsetof(XeExec, num_syncs) == 12 &&
              offsetof(XeExec, address) == 24 && offsetof(XeExec, num_batch_buffer) == 32);
static_assert(sizeof(XeWaitUserFence) == 72 && offsetof(XeWaitUserFence, op) == 16 &&
              offsetof(XeWaitUserFence, value) == 24 && offsetof(XeWaitUserFence, timeout) == 40 &&
              offsetof(XeWaitUserFence, exec_queue_id) == 48);
// The binds the VM_BIND rule copies from vector_of_binds (3 of 80 bytes fit the aux block).
constexpr uint32_t kXeVmBindOpsCopied = 3;
// The engines the EXEC_QUEUE_CREATE rule copies from instances.
constexpr uint32_t kXeInstancesCopied = 8;

// ---- amdgpu (amdgpu_drm.h) --------------------------------------------------
enum AmdgpuNr : uint32_t {
  kAmdgpuGemCreate = 0x00,
  kAmdgpuGemMmap = 0x01,
  kAmdgpuCtx = 0x02,
  kAmdgpuBoList = 0x03,
  kAmdgpuCs = 0x04,
  kAmdgpuInfo = 0x05,
  kAmdgpuGemMetadata = 0x06,
  kAmdgpuGemWaitIdle = 0x07,
  kAmdgpuGemVa = 0x08,
  kAmdgpuWaitCs = 0x09,
  kAmdgpuGemOp = 0x10,
  kAmdgpuGemUserptr = 0x11,
  kAmdgpuWaitFences = 0x12,
  kAmdgpuVm = 0x13,
  kAmdgpuFenceToHandle = 0x14,
  kAmdgpuSched = 0x15,
  kAmdgpuUserq = 0x16,
  kAmdgpuUserqSignal = 0x17,
  kAmdgpuUserqWait = 0x18,
  kAmdgpuGemListHandles = 0x19,
};
struct AmdgpuGemCreateIn {  // struct drm_amdgpu_gem_create_in; out: __u32 handle at 0
  uint64_t bo_size, alignment, domains, domain_flags;
};
struct AmdgpuCtxIn {  // struct drm_amdgpu_ctx_in; out.alloc.ctx_id at 0
  uint32_t op, flags, ctx_id;
  int32_t priority;
};
struct AmdgpuBoListIn {  // struct drm_amdgpu_bo_list_in; out.list_handle at 0
  uint32_t operation, list_handle, bo_number, bo_info_size;
  uint64_t bo_info_ptr;
};
struct AmdgpuCsIn {  // struct drm_amdgpu_cs_in; out.handle (the fence sequence) at 0
  uint32_t ctx_id, bo_list_handle, num_chunks, flags;
  uint64_t chunks;  // -> __u64[num_chunks] -> struct drm_amdgpu_cs_chunk
};
struct AmdgpuCsChunk {  // struct drm_amdgpu_cs_chunk
  uint32_t chunk_id, length_dw;
  uint64_t chunk_data;
};
struct AmdgpuCsChunkIb {  // struct drm_amdgpu_cs_chunk_ib
  uint32_t pad, flags;
  uint64_t va_start;
  uint32_t ib_bytes, ip_type, ip_instance, ring;
};
struct AmdgpuCsChunkDep {  // struct drm_amdgpu_cs_chunk_dep
  uint32_t ip_type, ip_instance, ring, ctx_id;
  uint64_t handle;
};
struct AmdgpuCsChunkFence {  // struct drm_amdgpu_cs_chunk_fence
  uint32_t handle, offset;
};
struct AmdgpuCsChunkSyncobj {  // struct drm_amdgpu_cs_chunk_syncobj (timeline chunks)
  uint32_t handle, flags;
  uint64_t point;
};
enum AmdgpuChunkId : uint32_t {
  kChunkIb = 0x01,
  kChunkFence = 0x02,
  kChunkDependencies = 0x03,
  kChunkSyncobjIn = 0x04,
  kChunkSyncobjOut = 0x05,
  kChunkBoHandles = 0x06,
  kChunkScheduledDependencies = 0x07,
  kChunkSyncobjTimelineWait = 0x08,
  kChunkSyncobjTimelineSignal = 0x09,
  kChunkCpGfxShadow = 0x0a,
};
struct AmdgpuWaitCsIn {  // struct drm_amdgpu_wait_cs_in; out.status (u64) at 0
  uint64_t handle, timeout;
  uint32_t ip_type, ip_instance, ring, ctx_id;
};
struct AmdgpuGemMmapIn {  // struct drm_amdgpu_gem_mmap_in; out.addr_ptr (u64) at 0
  uint32_t handle, pad;
};
struct AmdgpuGemVa {  // struct drm_amdgpu_gem_va (40 bytes before the timeline fields)
  uint32_t handle, pad, operation, flags;
  uint64_t va_address, offset_in_bo, map_size, vm_timeline_point;
  uint32_t vm_timeline_syncobj_out, num_syncobj_handles;
  uint64_t input_fence_syncobj_handles;
};
struct AmdgpuInfo {  // struct drm_amdgpu_info
  uint64_t return_pointer;
  uint32_t return_size, query;
  uint32_t arg[4];  // the query's union (query_hw_ip: type, ip_instance)
};
struct AmdgpuUserqIn {  // struct drm_amdgpu_userq_in; out.queue_id at 0
  uint32_t op, queue_id, ip_type, doorbell_handle, doorbell_offset, flags;
  uint64_t queue_va, queue_size, rptr_va, wptr_va, mqd, mqd_size;
};
struct AmdgpuUserqSignal {  // struct drm_amdgpu_userq_signal
  uint32_t queue_id, pad;
  uint64_t syncobj_handles, num_syncobj_handles, bo_read_handles, bo_write_handles;
  uint32_t num_bo_read_handles, num_bo_write_handles;
};
struct AmdgpuUserqWait {  // struct drm_amdgpu_userq_wait
  uint32_t waitq_id, pad;
  uint64_t syncobj_handles, syncobj_timeline_handles, syncobj_timeline_points, bo_read_handles, bo_write_handles;
  uint16_t num_syncobj_timeline_handles, num_fences;
  uint32_t num_syncobj_handles, num_bo_read_handles, num_bo_write_handles;
  uint64_t out_fences;
};
static_assert(sizeof(AmdgpuGemCreateIn) == 32 && offsetof(AmdgpuGemCreateIn, domains) == 16 &&
              offsetof(AmdgpuGemCreateIn, domain_flags) == 24);
static_assert(sizeof(AmdgpuCtxIn) == 16 && offsetof(AmdgpuCtxIn, ctx_id) == 8 && sizeof(AmdgpuBoListIn) == 24);
static_assert(sizeof(AmdgpuCsIn) == 24 && offsetof(AmdgpuCsIn, num_chunks) == 8 && offsetof(AmdgpuCsIn, chunks) == 16);
// The BPF chunk walk (bpf/drm.bpf.h) reads the same offsets.
static_assert(sizeof(AmdgpuCsIn) == GPUOBS_AMDGPU_CS_IN_SIZE &&
              offsetof(AmdgpuCsIn, num_chunks) == GPUOBS_AMDGPU_CS_IN_NUM_CHUNKS &&
              offsetof(AmdgpuCsIn, chunks) == GPUOBS_AMDGPU_CS_IN_CHUNKS);
static_assert(sizeof(AmdgpuCsChunkIb) == GPUOBS_AMDGPU_CS_DATA, "a chunk's data holds a whole chunk_ib");
static_assert(sizeof(AmdgpuCsChunk) == 16 && offsetof(AmdgpuCsChunk, chunk_data) == 8);
static_assert(sizeof(AmdgpuCsChunkIb) == 32 && offsetof(AmdgpuCsChunkIb, flags) == 4 &&
              offsetof(AmdgpuCsChunkIb, va_start) == 8 && offsetof(AmdgpuCsChunkIb, ib_bytes) == 16 &&
              offsetof(AmdgpuCsChunkIb, ip_type) == 20 && offsetof(AmdgpuCsChunkIb, ip_instance) == 24 &&
              offsetof(AmdgpuCsChunkIb, ring) == 28);
static_assert(sizeof(AmdgpuCsChunkDep) == 24 && sizeof(AmdgpuCsChunkFence) == 8 && sizeof(AmdgpuCsChunkSyncobj) == 16);
static_assert(sizeof(AmdgpuWaitCsIn) == 32 && offsetof(AmdgpuWaitCsIn, ip_type) == 16 &&
              offsetof(AmdgpuWaitCsIn, ctx_id) == 28);
static_assert(sizeof(AmdgpuGemMmapIn) == 8 && sizeof(AmdgpuGemVa) == 64 && offsetof(AmdgpuGemVa, va_address) == 16 &&
              offsetof(AmdgpuGemVa, map_size) == 32);
static_assert(sizeof(AmdgpuInfo) == 32 && offsetof(AmdgpuInfo, query) == 12 && offsetof(AmdgpuInfo, arg) == 16);
static_assert(sizeof(AmdgpuUserqIn) == 72 && offsetof(AmdgpuUserqIn, queue_va) == 24 &&
              offsetof(AmdgpuUserqIn, mqd_size) == 64);
static_assert(sizeof(AmdgpuUserqSignal) == 48 && offsetof(AmdgpuUserqSignal, num_bo_read_handles) == 40);
static_assert(sizeof(AmdgpuUserqWait) == 72 && offsetof(AmdgpuUserqWait, num_fences) == 50 &&
              offsetof(AmdgpuUserqWait, out_fences) == 64);

}  // namespace gpuobs::drm
