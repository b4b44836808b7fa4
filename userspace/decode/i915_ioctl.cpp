// i915's own requests (i915_drm.h): GEM_EXECBUFFER2(_WR), the one
// submission ioctl, with the engine its flags select and the context in
// rsvd1; buffer and context creation; waits, mmap offsets, queries.
// Numbers and layouts: docs/reference/abi-reference.md §7.
#include <string>

#include "catalogue/drm_uapi.h"
#include "decode/drm_ioctl_internal.h"

namespace gpuobs::ioctl_detail {
namespace {

using namespace drm;

constexpr DrmName kRequests[] = {
    {0x06, "DRM_IOCTL_I915_GETPARAM"},
    {0x07, "DRM_IOCTL_I915_SETPARAM"},
    {0x17, "DRM_IOCTL_I915_GEM_BUSY"},
    {0x1b, "DRM_IOCTL_I915_GEM_CREATE"},
    {0x1c, "DRM_IOCTL_I915_GEM_PREAD"},
    {0x1d, "DRM_IOCTL_I915_GEM_PWRITE"},
    {0x1e, "DRM_IOCTL_I915_GEM_MMAP"},
    {0x1f, "DRM_IOCTL_I915_GEM_SET_DOMAIN"},
    {0x21, "DRM_IOCTL_I915_GEM_SET_TILING"},
    {0x22, "DRM_IOCTL_I915_GEM_GET_TILING"},
    {0x23, "DRM_IOCTL_I915_GEM_GET_APERTURE"},
    {0x24, "DRM_IOCTL_I915_GEM_MMAP_OFFSET"},
    {0x26, "DRM_IOCTL_I915_GEM_MADVISE"},
    {0x29, "DRM_IOCTL_I915_GEM_EXECBUFFER2"},
    {0x2c, "DRM_IOCTL_I915_GEM_WAIT"},
    {0x2d, "DRM_IOCTL_I915_GEM_CONTEXT_CREATE"},
    {0x2e, "DRM_IOCTL_I915_GEM_CONTEXT_DESTROY"},
    {0x2f, "DRM_IOCTL_I915_GEM_SET_CACHING"},
    {0x30, "DRM_IOCTL_I915_GEM_GET_CACHING"},
    {0x31, "DRM_IOCTL_I915_REG_READ"},
    {0x32, "DRM_IOCTL_I915_GET_RESET_STATS"},
    {0x33, "DRM_IOCTL_I915_GEM_USERPTR"},
    {0x34, "DRM_IOCTL_I915_GEM_CONTEXT_GETPARAM"},
    {0x35, "DRM_IOCTL_I915_GEM_CONTEXT_SETPARAM"},
    {0x36, "DRM_IOCTL_I915_PERF_OPEN"},
    {0x39, "DRM_IOCTL_I915_QUERY"},
    {0x3a, "DRM_IOCTL_I915_GEM_VM_CREATE"},
    {0x3b, "DRM_IOCTL_I915_GEM_VM_DESTROY"},
    {0x3c, "DRM_IOCTL_I915_GEM_CREATE_EXT"},
};

// I915_EXEC_DEFAULT .. I915_EXEC_VEBOX: the legacy ring selectors. With an
// engine map set on the context (I915_CONTEXT_PARAM_ENGINES) the same bits
// index that map instead, which only the context knows.
constexpr std::string_view kLegacyEngines[] = {"default", "render", "bsd", "blt", "vebox"};

constexpr DrmName kExecFlags[] = {
    {1u << 8, "GEN7_SOL_RESET"}, {1u << 9, "SECURE"},
    {1u << 10, "IS_PINNED"},     {1u << 11, "NO_RELOC"},
    {1u << 12, "HANDLE_LUT"},    {1u << 13, "BSD_RING1"},
    {1u << 14, "BSD_RING2"},     {1u << 15, "RESOURCE_STREAMER"},
    {1u << 16, "FENCE_IN"},      {1u << 17, "FENCE_OUT"},
    {1u << 18, "BATCH_FIRST"},   {1u << 19, "FENCE_ARRAY"},
    {1u << 20, "FENCE_SUBMIT"},  {1u << 21, "USE_EXTENSIONS"},
};

// I915_CONTEXT_PARAM_*: ENGINES sets the engine map the execbuffer ring bits
// then index, VM the address space the context runs in.
constexpr DrmName kContextParams[] = {
    {0x1, "BAN_PERIOD"}, {0x2, "NO_ZEROMAP"}, {0x3, "GTT_SIZE"}, {0x4, "NO_ERROR_CAPTURE"},
    {0x5, "BANNABLE"},   {0x6, "PRIORITY"},   {0x7, "SSEU"},     {0x8, "RECOVERABLE"},
    {0x9, "VM"},         {0xa, "ENGINES"}};

constexpr DrmName kMmapOffsetFlags[] = {{0, "GTT"}, {1, "WC"}, {2, "WB"}, {3, "UC"}, {4, "FIXED"}};

void execbuffer2(const IoctlCapture& c, DecodedIoctl& d) {
  FieldReader r(c.head, d.fields);
  r.u64("buffers_ptr", offsetof(I915Execbuffer2, buffers_ptr));
  r.u32("buffer_count", offsetof(I915Execbuffer2, buffer_count));
  r.u32("batch_start_offset", offsetof(I915Execbuffer2, batch_start_offset));
  r.u32("batch_len", offsetof(I915Execbuffer2, batch_len));
  auto flags = r.u64("flags", offsetof(I915Execbuffer2, flags));
  if (flags) {
    uint32_t ring = uint32_t(*flags & kI915ExecRingMask);
    d.fields["ring"] = ring;
    d.fields["engine"] =
        ring < std::size(kLegacyEngines) ? std::string(kLegacyEngines[ring]) : "engine[" + std::to_string(ring) + "]";
    d.fields["flag_names"] = drm_flag_names(kExecFlags, *flags & ~kI915ExecRingMask & ~(3ull << 6));
  }
  if (auto rsvd1 = read_le(c.head, offsetof(I915Execbuffer2, rsvd1), 8))
    d.fields["ctx_id"] = *rsvd1 & kI915ContextIdMask;
  auto rsvd2 = read_le(c.head, offsetof(I915Execbuffer2, rsvd2), 8);
  if (flags && rsvd2) {
    // rsvd2: the in-fence fd in its low half, the out-fence fd the kernel
    // writes in its high half (_WR only).
    if ((*flags & kI915ExecFenceIn) && !(*flags & kI915ExecFenceArray)) d.fields["fence_in_fd"] = int32_t(*rsvd2);
    if ((*flags & kI915ExecFenceOut) && c.ret >= 0 && (c.cmd >> 30) == 3)
      d.fields["fence_out_fd"] = int32_t(*rsvd2 >> 32);
  }
  if (!flags) d.args_complete = false;
}

}  // namespace

bool decode_i915(uint32_t nr, const IoctlCapture& c, DecodedIoctl& d) {
  std::string_view name = drm_lookup(kRequests, nr);
  if (name.empty()) return false;
  d.request = std::string(name);
  FieldReader r(c.head, d.fields);
  bool ok = c.ret >= 0;
  switch (nr) {
    case kI915GemExecbuffer2:
      if ((c.cmd >> 30) == 3) d.request += "_WR";  // _IOWR: the kernel writes the out-fence back
      execbuffer2(c, d);
      break;
    case kI915GemCreate:
      r.u64("size", offsetof(I915GemCreate, size));
      if (ok) r.u32("handle", offsetof(I915GemCreate, handle));
      break;
    case kI915GemCreateExt:
      r.u64("size", offsetof(I915GemCreateExt, size));
      r.u32("flags", offsetof(I915GemCreateExt, flags));
      r.u64("extensions", offsetof(I915GemCreateExt, extensions));
      if (ok) r.u32("handle", offsetof(I915GemCreateExt, handle));
      break;
    case kI915GemContextCreate:
      if (ioc_size(c.cmd) >= sizeof(I915ContextCreateExt)) {
        d.request += "_EXT";
        r.u32("flags", offsetof(I915ContextCreateExt, flags));
        r.u64("extensions", offsetof(I915ContextCreateExt, extensions));
      }
      if (ok) r.u32("ctx_id", offsetof(I915ContextCreateExt, ctx_id));
      break;
    case kI915GemContextDestroy: r.u32("ctx_id", offsetof(I915ContextCreateExt, ctx_id)); break;
    case kI915GemContextGetparam:
    case kI915GemContextSetparam: {
      r.u32("ctx_id", offsetof(I915ContextParam, ctx_id));
      r.u32("size", offsetof(I915ContextParam, size));
      if (auto p = r.u64("param", offsetof(I915ContextParam, param)); p && *p <= UINT32_MAX)
        d.fields["param_name"] = drm_name_or_number(kContextParams, uint32_t(*p));
      // SET: the value or a pointer to it (ENGINES: the engine map); GET: the answer.
      if (nr == kI915GemContextSetparam || ok) r.u64("value", offsetof(I915ContextParam, value));
      break;
    }
    case kI915GemVmCreate:
      r.u32("flags", offsetof(I915VmControl, flags));
      if (ok) r.u32("vm_id", offsetof(I915VmControl, vm_id));
      break;
    case kI915GemVmDestroy: r.u32("vm_id", offsetof(I915VmControl, vm_id)); break;
    case kI915GemWait:
      r.u32("bo_handle", offsetof(I915GemWait, bo_handle));
      r.u32("flags", offsetof(I915GemWait, flags));
      if (auto t = read_le(c.head, offsetof(I915GemWait, timeout_ns), 8)) d.fields["timeout_ns"] = int64_t(*t);
      break;
    case kI915GemMmapOffset:
      r.u32("handle", offsetof(I915GemMmapOffset, handle));
      if (auto f = r.u64("flags", offsetof(I915GemMmapOffset, flags)); f && *f <= 4)
        d.fields["mmap_type"] = drm_lookup(kMmapOffsetFlags, uint32_t(*f));
      if (ok) r.u64("offset", offsetof(I915GemMmapOffset, offset));
      break;
    case kI915Query:
      r.u32("num_items", offsetof(I915Query, num_items));
      r.u32("flags", offsetof(I915Query, flags));
      r.u64("items_ptr", offsetof(I915Query, items_ptr));
      break;
    case kI915Getparam:
      r.s32("param", offsetof(I915Getparam, param));
      r.u64("value", offsetof(I915Getparam, value));  // where the kernel writes the answer
      break;
    default: break;  // named only
  }
  return true;
}

}  // namespace gpuobs::ioctl_detail
