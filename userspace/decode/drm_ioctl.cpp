// DRM render and primary nodes (char major 226): the core requests every
// driver has (drm.h) and the dispatch to the i915, xe and amdgpu decoders.
// The DRM core accepts any argument size (it zero-extends or truncates to
// its own), so requests are told apart by number and read for what the
// argument holds. Numbers and layouts: docs/reference/abi-reference.md §7.
#include <string_view>

#include "catalogue/drm_uapi.h"
#include "decode/drm_ioctl_internal.h"

namespace gpuobs {
namespace ioctl_detail {

std::string_view drm_lookup(std::span<const DrmName> table, uint32_t number) {
  for (const DrmName& e : table)
    if (e.number == number) return e.name;
  return {};
}

nlohmann::json drm_flag_names(std::span<const DrmName> table, uint64_t flags) {
  nlohmann::json names = nlohmann::json::array();
  uint64_t rest = flags;
  for (const DrmName& f : table) {
    if (flags & f.number) names.push_back(f.name);
    rest &= ~uint64_t(f.number);
  }
  if (rest) names.push_back(hex(rest));  // bits this table does not know
  return names;
}

std::string drm_name_or_number(std::span<const DrmName> table, uint32_t number) {
  std::string_view n = drm_lookup(table, number);
  return n.empty() ? std::to_string(number) : std::string(n);
}

namespace {

using namespace drm;

// drm.h's generic requests, below DRM_COMMAND_BASE and from 0xa0. The
// modesetting and legacy ones are named only.
constexpr DrmName kCoreRequests[] = {
    {0x00, "DRM_IOCTL_VERSION"},
    {0x01, "DRM_IOCTL_GET_UNIQUE"},
    {0x02, "DRM_IOCTL_GET_MAGIC"},
    {0x07, "DRM_IOCTL_SET_VERSION"},
    {0x09, "DRM_IOCTL_GEM_CLOSE"},
    {0x0a, "DRM_IOCTL_GEM_FLINK"},
    {0x0b, "DRM_IOCTL_GEM_OPEN"},
    {0x0c, "DRM_IOCTL_GET_CAP"},
    {0x0d, "DRM_IOCTL_SET_CLIENT_CAP"},
    {0x11, "DRM_IOCTL_AUTH_MAGIC"},
    {0x1e, "DRM_IOCTL_SET_MASTER"},
    {0x1f, "DRM_IOCTL_DROP_MASTER"},
    {0x2d, "DRM_IOCTL_PRIME_HANDLE_TO_FD"},
    {0x2e, "DRM_IOCTL_PRIME_FD_TO_HANDLE"},
    {0x3a, "DRM_IOCTL_WAIT_VBLANK"},
    {0xa0, "DRM_IOCTL_MODE_GETRESOURCES"},
    {0xa1, "DRM_IOCTL_MODE_GETCRTC"},
    {0xa2, "DRM_IOCTL_MODE_SETCRTC"},
    {0xa3, "DRM_IOCTL_MODE_CURSOR"},
    {0xa4, "DRM_IOCTL_MODE_GETGAMMA"},
    {0xa5, "DRM_IOCTL_MODE_SETGAMMA"},
    {0xa6, "DRM_IOCTL_MODE_GETENCODER"},
    {0xa7, "DRM_IOCTL_MODE_GETCONNECTOR"},
    {0xaa, "DRM_IOCTL_MODE_GETPROPERTY"},
    {0xab, "DRM_IOCTL_MODE_SETPROPERTY"},
    {0xac, "DRM_IOCTL_MODE_GETPROPBLOB"},
    {0xad, "DRM_IOCTL_MODE_GETFB"},
    {0xae, "DRM_IOCTL_MODE_ADDFB"},
    {0xaf, "DRM_IOCTL_MODE_RMFB"},
    {0xb0, "DRM_IOCTL_MODE_PAGE_FLIP"},
    {0xb1, "DRM_IOCTL_MODE_DIRTYFB"},
    {0xb2, "DRM_IOCTL_MODE_CREATE_DUMB"},
    {0xb3, "DRM_IOCTL_MODE_MAP_DUMB"},
    {0xb4, "DRM_IOCTL_MODE_DESTROY_DUMB"},
    {0xb5, "DRM_IOCTL_MODE_GETPLANERESOURCES"},
    {0xb6, "DRM_IOCTL_MODE_GETPLANE"},
    {0xb7, "DRM_IOCTL_MODE_SETPLANE"},
    {0xb8, "DRM_IOCTL_MODE_ADDFB2"},
    {0xb9, "DRM_IOCTL_MODE_OBJ_GETPROPERTIES"},
    {0xba, "DRM_IOCTL_MODE_OBJ_SETPROPERTY"},
    {0xbb, "DRM_IOCTL_MODE_CURSOR2"},
    {0xbc, "DRM_IOCTL_MODE_ATOMIC"},
    {0xbd, "DRM_IOCTL_MODE_CREATEPROPBLOB"},
    {0xbe, "DRM_IOCTL_MODE_DESTROYPROPBLOB"},
    {0xbf, "DRM_IOCTL_SYNCOBJ_CREATE"},
    {0xc0, "DRM_IOCTL_SYNCOBJ_DESTROY"},
    {0xc1, "DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD"},
    {0xc2, "DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE"},
    {0xc3, "DRM_IOCTL_SYNCOBJ_WAIT"},
    {0xc4, "DRM_IOCTL_SYNCOBJ_RESET"},
    {0xc5, "DRM_IOCTL_SYNCOBJ_SIGNAL"},
    {0xc6, "DRM_IOCTL_MODE_CREATE_LEASE"},
    {0xc7, "DRM_IOCTL_MODE_LIST_LESSEES"},
    {0xc8, "DRM_IOCTL_MODE_GET_LEASE"},
    {0xc9, "DRM_IOCTL_MODE_REVOKE_LEASE"},
    {0xca, "DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT"},
    {0xcb, "DRM_IOCTL_SYNCOBJ_QUERY"},
    {0xcc, "DRM_IOCTL_SYNCOBJ_TRANSFER"},
    {0xcd, "DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL"},
    {0xce, "DRM_IOCTL_MODE_GETFB2"},
};

constexpr DrmName kCaps[] = {
    {0x1, "DRM_CAP_DUMB_BUFFER"},         {0x5, "DRM_CAP_PRIME"},
    {0x6, "DRM_CAP_TIMESTAMP_MONOTONIC"}, {0x13, "DRM_CAP_SYNCOBJ"},
    {0x14, "DRM_CAP_SYNCOBJ_TIMELINE"},
};

constexpr DrmName kSyncobjWaitFlags[] = {
    {1u << 0, "WAIT_ALL"},
    {1u << 1, "WAIT_FOR_SUBMIT"},
    {1u << 2, "WAIT_AVAILABLE"},
    {1u << 3, "WAIT_DEADLINE"},
};

void decode_core(uint32_t nr, const IoctlCapture& c, DecodedIoctl& d) {
  d.request = std::string(drm_lookup(kCoreRequests, nr));
  FieldReader r(c.head, d.fields);
  bool ok = c.ret >= 0;  // outputs only from a call that succeeded
  switch (nr) {
    case kVersion:
      if (ok) {
        r.s32("version_major", offsetof(Version, version_major));
        r.s32("version_minor", offsetof(Version, version_minor));
        r.s32("version_patchlevel", offsetof(Version, version_patchlevel));
      }
      r.u64("name_len", offsetof(Version, name_len));
      break;
    case kGetCap:
      if (auto cap = r.u64("capability", offsetof(GetCap, capability)); cap && *cap <= UINT32_MAX)
        if (auto n = drm_lookup(kCaps, uint32_t(*cap)); !n.empty()) d.fields["capability_name"] = n;
      if (ok) r.u64("value", offsetof(GetCap, value));
      break;
    case kSetClientCap:
      r.u64("capability", offsetof(GetCap, capability));
      r.u64("value", offsetof(GetCap, value));
      break;
    case kGemClose: r.u32("handle", offsetof(GemClose, handle)); break;
    case kPrimeHandleToFd:
      r.u32("handle", offsetof(PrimeHandle, handle));
      r.u32("flags", offsetof(PrimeHandle, flags));
      if (ok) r.s32("fd", offsetof(PrimeHandle, fd));
      break;
    case kPrimeFdToHandle:
      r.s32("fd", offsetof(PrimeHandle, fd));
      if (ok) r.u32("handle", offsetof(PrimeHandle, handle));
      break;
    case kSyncobjCreate:
      r.u32("flags", offsetof(SyncobjCreate, flags));
      if (ok) r.u32("handle", offsetof(SyncobjCreate, handle));
      break;
    case kSyncobjDestroy: r.u32("handle", offsetof(SyncobjCreate, handle)); break;
    case kSyncobjWait: {
      r.u32("count_handles", offsetof(SyncobjWait, count_handles));
      r.u64("handles", offsetof(SyncobjWait, handles));
      if (auto t = read_le(c.head, offsetof(SyncobjWait, timeout_nsec), 8)) d.fields["timeout_nsec"] = int64_t(*t);
      if (auto f = r.u32("flags", offsetof(SyncobjWait, flags)))
        d.fields["flag_names"] = drm_flag_names(kSyncobjWaitFlags, *f);
      if (ok) r.u32("first_signaled", offsetof(SyncobjWait, first_signaled));
      break;
    }
    case kSyncobjTimelineWait: {
      r.u32("count_handles", offsetof(SyncobjTimelineWait, count_handles));
      r.u64("handles", offsetof(SyncobjTimelineWait, handles));
      r.u64("points", offsetof(SyncobjTimelineWait, points));
      if (auto t = read_le(c.head, offsetof(SyncobjTimelineWait, timeout_nsec), 8))
        d.fields["timeout_nsec"] = int64_t(*t);
      if (auto f = r.u32("flags", offsetof(SyncobjTimelineWait, flags)))
        d.fields["flag_names"] = drm_flag_names(kSyncobjWaitFlags, *f);
      if (ok) r.u32("first_signaled", offsetof(SyncobjTimelineWait, first_signaled));
      break;
    }
    case kSyncobjReset:
    case kSyncobjSignal:
      r.u64("handles", offsetof(SyncobjArray, handles));
      r.u32("count_handles", offsetof(SyncobjArray, count_handles));
      break;
    case kSyncobjQuery:
    case kSyncobjTimelineSignal:
      r.u64("handles", offsetof(SyncobjTimelineArray, handles));
      r.u64("points", offsetof(SyncobjTimelineArray, points));
      r.u32("count_handles", offsetof(SyncobjTimelineArray, count_handles));
      r.u32("flags", offsetof(SyncobjTimelineArray, flags));
      break;
    default: break;  // named only
  }
}

}  // namespace

void decode_drm(const IoctlCapture& c, DecodedIoctl& d) {
  if (ioc_type(c.cmd) == kIoctlType) {
    uint32_t nr = ioc_nr(c.cmd);
    // What the caller passed: the fields are read from that much of the
    // copy, and a copy shorter than it is incomplete.
    IoctlCapture arg = c;
    arg.head = c.head.substr(0, ioc_size(c.cmd));
    if (c.head.size() < ioc_size(c.cmd)) d.args_complete = false;
    if (nr < kCommandBase || nr >= kCommandEnd) {
      decode_core(nr, arg, d);
    } else {
      uint32_t dnr = nr - kCommandBase;
      switch (c.driver) {
        case GPUOBS_DRV_I915: decode_i915(dnr, arg, d); break;
        case GPUOBS_DRV_XE: decode_xe(dnr, arg, d); break;
        case GPUOBS_DRV_AMDGPU: decode_amdgpu(dnr, arg, d); break;
        default: break;  // another driver's own request: its number is all we know
      }
    }
  }
  // DRM reports errors through the return value alone.
  d.failed = c.ret < 0;
}

}  // namespace ioctl_detail
}  // namespace gpuobs
