// amdgpu's requests (amdgpu_drm.h). Most arguments are unions of an in and
// an out struct: a call that succeeds writes its outputs over its inputs
// (GEM_CREATE, BO_LIST and WAIT_CS clear the whole struct first), so the
// rule keeps the first GPUOBS_IOCTL_ENTRY_MAX bytes as they were at entry in
// aux (GPUOBS_IOCTL_AUX_ENTRY) and the inputs are read from that image. CS
// carries its chunk chain in aux (struct gpuobs_amdgpu_cs_aux): the engine
// of each IB, and the fence, dependency and syncobj chunks counted.
// Numbers and layouts: docs/reference/abi-reference.md §7.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "catalogue/drm_uapi.h"
#include "decode/drm_ioctl_internal.h"

namespace gpuobs::ioctl_detail {
namespace {

using namespace drm;

constexpr DrmName kRequests[] = {
    {kAmdgpuGemCreate, "DRM_IOCTL_AMDGPU_GEM_CREATE"},
    {kAmdgpuGemMmap, "DRM_IOCTL_AMDGPU_GEM_MMAP"},
    {kAmdgpuCtx, "DRM_IOCTL_AMDGPU_CTX"},
    {kAmdgpuBoList, "DRM_IOCTL_AMDGPU_BO_LIST"},
    {kAmdgpuCs, "DRM_IOCTL_AMDGPU_CS"},
    {kAmdgpuInfo, "DRM_IOCTL_AMDGPU_INFO"},
    {kAmdgpuGemMetadata, "DRM_IOCTL_AMDGPU_GEM_METADATA"},
    {kAmdgpuGemWaitIdle, "DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE"},
    {kAmdgpuGemVa, "DRM_IOCTL_AMDGPU_GEM_VA"},
    {kAmdgpuWaitCs, "DRM_IOCTL_AMDGPU_WAIT_CS"},
    {kAmdgpuGemOp, "DRM_IOCTL_AMDGPU_GEM_OP"},
    {kAmdgpuGemUserptr, "DRM_IOCTL_AMDGPU_GEM_USERPTR"},
    {kAmdgpuWaitFences, "DRM_IOCTL_AMDGPU_WAIT_FENCES"},
    {kAmdgpuVm, "DRM_IOCTL_AMDGPU_VM"},
    {kAmdgpuFenceToHandle, "DRM_IOCTL_AMDGPU_FENCE_TO_HANDLE"},
    {kAmdgpuSched, "DRM_IOCTL_AMDGPU_SCHED"},
    {kAmdgpuUserq, "DRM_IOCTL_AMDGPU_USERQ"},
    {kAmdgpuUserqSignal, "DRM_IOCTL_AMDGPU_USERQ_SIGNAL"},
    {kAmdgpuUserqWait, "DRM_IOCTL_AMDGPU_USERQ_WAIT"},
    {kAmdgpuGemListHandles, "DRM_IOCTL_AMDGPU_GEM_LIST_HANDLES"},
};

// AMDGPU_HW_IP_*: the engine an IB, a wait or a user queue names.
constexpr DrmName kIpTypes[] = {{0, "GFX"},     {1, "COMPUTE"}, {2, "DMA"},     {3, "UVD"},      {4, "VCE"},
                                {5, "UVD_ENC"}, {6, "VCN_DEC"}, {7, "VCN_ENC"}, {8, "VCN_JPEG"}, {9, "VPE"}};
constexpr DrmName kChunkIds[] = {{kChunkIb, "IB"},
                                 {kChunkFence, "FENCE"},
                                 {kChunkDependencies, "DEPENDENCIES"},
                                 {kChunkSyncobjIn, "SYNCOBJ_IN"},
                                 {kChunkSyncobjOut, "SYNCOBJ_OUT"},
                                 {kChunkBoHandles, "BO_HANDLES"},
                                 {kChunkScheduledDependencies, "SCHEDULED_DEPENDENCIES"},
                                 {kChunkSyncobjTimelineWait, "SYNCOBJ_TIMELINE_WAIT"},
                                 {kChunkSyncobjTimelineSignal, "SYNCOBJ_TIMELINE_SIGNAL"},
                                 {kChunkCpGfxShadow, "CP_GFX_SHADOW"}};
constexpr DrmName kDomains[] = {{0x1, "CPU"},  {0x2, "GTT"}, {0x4, "VRAM"},      {0x8, "GDS"},
                                {0x10, "GWS"}, {0x20, "OA"}, {0x40, "DOORBELL"}, {0x80, "MMIO_REMAP"}};
constexpr DrmName kCtxOps[] = {{1, "ALLOC_CTX"},    {2, "FREE_CTX"},          {3, "QUERY_STATE"},
                               {4, "QUERY_STATE2"}, {5, "GET_STABLE_PSTATE"}, {6, "SET_STABLE_PSTATE"}};
constexpr DrmName kBoListOps[] = {{0, "CREATE"}, {1, "DESTROY"}, {2, "UPDATE"}};
constexpr DrmName kVaOps[] = {{1, "MAP"}, {2, "UNMAP"}, {3, "CLEAR"}, {4, "REPLACE"}};
constexpr DrmName kUserqOps[] = {{1, "CREATE"}, {2, "FREE"}};
constexpr DrmName kInfoQueries[] = {{0x00, "ACCEL_WORKING"}, {0x02, "HW_IP_INFO"}, {0x03, "HW_IP_COUNT"},
                                    {0x05, "TIMESTAMP"},     {0x0e, "FW_VERSION"}, {0x10, "VRAM_USAGE"},
                                    {0x11, "GTT_USAGE"},     {0x14, "VRAM_GTT"},   {0x16, "DEV_INFO"},
                                    {0x19, "MEMORY"},        {0x1d, "SENSOR"},     {0x22, "MAX_IBS"}};
constexpr uint32_t kCtxOpAlloc = 1;
constexpr uint32_t kBoListOpCreate = 0;
constexpr uint32_t kUserqOpCreate = 1;

// The argument as the caller passed it: the entry image (aux, cut to the
// argument's size) and, past it, the exit copy. A call that succeeded wrote
// over its first `clobbered` bytes; when the entry image is shorter than
// that, only the entry image is known (nullopt: not even that).
std::optional<std::string> input_image(const IoctlCapture& c, size_t clobbered) {
  std::string_view entry = c.aux.substr(0, std::min<size_t>(c.aux.size(), ioc_size(c.cmd)));
  if (c.ret >= 0 && entry.size() < std::min<size_t>(clobbered, c.head.size())) {
    if (entry.empty()) return std::nullopt;
    return std::string(entry);
  }
  std::string in(entry);
  if (c.head.size() > entry.size()) in += c.head.substr(entry.size());
  return in;
}

std::string ip_name(uint32_t ip) { return drm_name_or_number(kIpTypes, ip); }

void cs(const IoctlCapture& c, DecodedIoctl& d) {
  std::string_view aux = c.aux;
  // The CS aux starts with the entry's first 8 bytes: the sequence number
  // a success writes covers ctx_id and bo_list_handle only.
  IoctlCapture entry = c;
  entry.aux = aux.substr(0, std::min<size_t>(aux.size(), 8));
  auto in = input_image(entry, 8);
  if (in && in->size() >= 8) {
    FieldReader ri(*in, d.fields);
    ri.u32("ctx_id", offsetof(AmdgpuCsIn, ctx_id));
    ri.u32("bo_list_handle", offsetof(AmdgpuCsIn, bo_list_handle));
  } else {
    d.args_complete = false;  // the context and BO list are gone from the copy
  }
  FieldReader r(c.head, d.fields);
  auto n = r.u32("num_chunks", offsetof(AmdgpuCsIn, num_chunks));
  r.u32("flags", offsetof(AmdgpuCsIn, flags));
  r.u64("chunks", offsetof(AmdgpuCsIn, chunks));
  if (c.ret >= 0) r.u64("handle", 0);  // the fence sequence number the CS got
  if (!n) return;

  uint32_t read = 0, data_read = 0;
  if (auto v = read_le(aux, offsetof(gpuobs_amdgpu_cs_aux, chunks_read), 4)) read = uint32_t(*v);
  if (auto v = read_le(aux, offsetof(gpuobs_amdgpu_cs_aux, data_read), 4)) data_read = uint32_t(*v);
  read = std::min<uint32_t>(read, GPUOBS_AMDGPU_CS_CHUNKS);
  nlohmann::json chunks = nlohmann::json::array();
  uint64_t ibs = 0, fences = 0, deps = 0, syncobj_in = 0, syncobj_out = 0;
  std::vector<std::string> engines;
  bool complete = true;
  for (uint32_t i = 0; i < read; ++i) {
    size_t off = offsetof(gpuobs_amdgpu_cs_aux, chunk) + size_t(i) * sizeof(gpuobs_amdgpu_cs_chunk);
    if (aux.size() < off + sizeof(gpuobs_amdgpu_cs_chunk)) {
      complete = false;
      break;
    }
    std::string_view ch = aux.substr(off, sizeof(gpuobs_amdgpu_cs_chunk));
    nlohmann::json j = nlohmann::json::object();
    FieldReader cr(ch, j);
    uint32_t id = *cr.u32("chunk_id", offsetof(gpuobs_amdgpu_cs_chunk, chunk_id));
    uint32_t len_dw = *cr.u32("length_dw", offsetof(gpuobs_amdgpu_cs_chunk, length_dw));
    j["chunk_name"] = drm_name_or_number(kChunkIds, id);
    uint64_t bytes = uint64_t(len_dw) * 4;
    std::string_view data =
        ch.substr(offsetof(gpuobs_amdgpu_cs_chunk, data), std::min<uint64_t>(bytes, GPUOBS_AMDGPU_CS_DATA));
    bool have_data = (data_read >> i) & 1u;
    switch (id) {
      case kChunkIb: {
        ++ibs;
        if (!have_data || data.size() < sizeof(AmdgpuCsChunkIb)) {
          complete = false;  // the IB's engine is unknown
          break;
        }
        FieldReader ir(data, j);
        ir.u32("ib_flags", offsetof(AmdgpuCsChunkIb, flags));
        ir.u64("va_start", offsetof(AmdgpuCsChunkIb, va_start));
        ir.u32("ib_bytes", offsetof(AmdgpuCsChunkIb, ib_bytes));
        uint32_t ip = *ir.u32("ip_type", offsetof(AmdgpuCsChunkIb, ip_type));
        ir.u32("ip_instance", offsetof(AmdgpuCsChunkIb, ip_instance));
        ir.u32("ring", offsetof(AmdgpuCsChunkIb, ring));
        j["ip_type_name"] = ip_name(ip);
        if (std::find(engines.begin(), engines.end(), ip_name(ip)) == engines.end()) engines.push_back(ip_name(ip));
        break;
      }
      case kChunkFence: ++fences; break;
      case kChunkDependencies:
      case kChunkScheduledDependencies: deps += bytes / sizeof(AmdgpuCsChunkDep); break;
      case kChunkSyncobjIn: syncobj_in += bytes / sizeof(uint32_t); break;
      case kChunkSyncobjOut: syncobj_out += bytes / sizeof(uint32_t); break;
      case kChunkSyncobjTimelineWait: syncobj_in += bytes / sizeof(AmdgpuCsChunkSyncobj); break;
      case kChunkSyncobjTimelineSignal: syncobj_out += bytes / sizeof(AmdgpuCsChunkSyncobj); break;
      default: break;
    }
    chunks.push_back(j);
  }
  uint32_t kept = std::min<uint32_t>(*n, GPUOBS_AMDGPU_CS_CHUNKS);
  if (read < kept) complete = false;  // a pointer or chunk header unreadable
  if (*n > kept) {
    d.fields["chunks_cut"] = *n - kept;
    complete = false;
  }
  if (!complete) d.args_complete = false;
  d.fields["chunk_list"] = chunks;
  d.fields["ibs"] = ibs;
  d.fields["fences"] = fences;
  d.fields["dependencies"] = deps;
  d.fields["syncobj_in"] = syncobj_in;
  d.fields["syncobj_out"] = syncobj_out;
  if (!engines.empty()) {
    // A gang submission sends IBs to several engines: all of them, in order.
    std::string e;
    for (const auto& s : engines) e += (e.empty() ? "" : "+") + s;
    d.fields["engine"] = e;
  }
}

}  // namespace

bool decode_amdgpu(uint32_t nr, const IoctlCapture& c, DecodedIoctl& d) {
  std::string_view name = drm_lookup(kRequests, nr);
  if (name.empty()) return false;
  d.request = std::string(name);
  bool ok = c.ret >= 0;
  if (nr == kAmdgpuCs) {
    cs(c, d);
    return true;
  }
  // The unions: inputs from the entry image, outputs from the exit copy.
  // What a success writes over: the whole struct for those that clear it.
  size_t clobbered = 0;
  switch (nr) {
    case kAmdgpuGemCreate: clobbered = sizeof(AmdgpuGemCreateIn); break;
    case kAmdgpuGemMmap: clobbered = sizeof(AmdgpuGemMmapIn); break;
    case kAmdgpuCtx: clobbered = sizeof(AmdgpuCtxIn); break;  // QUERY_STATE's out is 16 bytes
    case kAmdgpuBoList: clobbered = sizeof(AmdgpuBoListIn); break;
    case kAmdgpuWaitCs: clobbered = sizeof(AmdgpuWaitCsIn); break;
    case kAmdgpuUserq: clobbered = 8; break;  // out.queue_id (and its pad)
    default: break;
  }
  std::string in_buf;
  if (clobbered) {
    auto in = input_image(c, clobbered);
    if (!in || in->size() < c.head.size()) d.args_complete = false;
    if (in) in_buf = *in;
  } else {
    in_buf = std::string(c.head);
  }
  std::string_view in(in_buf);
  FieldReader r(in, d.fields);
  FieldReader out(c.head, d.fields);
  switch (nr) {
    case kAmdgpuGemCreate: {
      r.u64("bo_size", offsetof(AmdgpuGemCreateIn, bo_size));
      r.u64("alignment", offsetof(AmdgpuGemCreateIn, alignment));
      if (auto dom = r.u64("domains", offsetof(AmdgpuGemCreateIn, domains)))
        d.fields["domain_names"] = drm_flag_names(kDomains, *dom);
      r.u64("domain_flags", offsetof(AmdgpuGemCreateIn, domain_flags));
      if (ok) out.u32("handle", 0);
      break;
    }
    case kAmdgpuGemMmap:
      r.u32("handle", offsetof(AmdgpuGemMmapIn, handle));
      if (ok) out.u64("addr_ptr", 0);
      break;
    case kAmdgpuCtx: {
      auto op = r.u32("op", offsetof(AmdgpuCtxIn, op));
      if (op) d.fields["op_name"] = drm_name_or_number(kCtxOps, *op);
      r.u32("flags", offsetof(AmdgpuCtxIn, flags));
      if (!op || *op != kCtxOpAlloc) r.u32("ctx_id", offsetof(AmdgpuCtxIn, ctx_id));
      if (auto p = read_le(in, offsetof(AmdgpuCtxIn, priority), 4)) d.fields["priority"] = int32_t(uint32_t(*p));
      if (ok && op && *op == kCtxOpAlloc) out.u32("ctx_id", 0);  // the new context
      break;
    }
    case kAmdgpuBoList: {
      auto op = r.u32("operation", offsetof(AmdgpuBoListIn, operation));
      if (op) d.fields["operation_name"] = drm_name_or_number(kBoListOps, *op);
      r.u32("list_handle", offsetof(AmdgpuBoListIn, list_handle));
      r.u32("bo_number", offsetof(AmdgpuBoListIn, bo_number));
      r.u32("bo_info_size", offsetof(AmdgpuBoListIn, bo_info_size));
      if (ok && op && *op == kBoListOpCreate) out.u32("list_handle", 0);
      break;
    }
    case kAmdgpuWaitCs: {
      r.u64("handle", offsetof(AmdgpuWaitCsIn, handle));
      r.u64("timeout", offsetof(AmdgpuWaitCsIn, timeout));
      if (auto ip = r.u32("ip_type", offsetof(AmdgpuWaitCsIn, ip_type))) d.fields["ip_type_name"] = ip_name(*ip);
      r.u32("ip_instance", offsetof(AmdgpuWaitCsIn, ip_instance));
      r.u32("ring", offsetof(AmdgpuWaitCsIn, ring));
      r.u32("ctx_id", offsetof(AmdgpuWaitCsIn, ctx_id));
      if (ok)
        if (auto st = read_le(c.head, 0, 8)) {
          // 0: the CS completed; 1: still busy when the timeout passed (an answer, not a failure).
          d.status = int64_t(*st);
          d.status_name = *st == 0 ? "completed" : *st == 1 ? "busy" : hex(*st);
        }
      break;
    }
    case kAmdgpuGemVa:
      r.u32("handle", offsetof(AmdgpuGemVa, handle));
      if (auto op = r.u32("operation", offsetof(AmdgpuGemVa, operation)))
        d.fields["operation_name"] = drm_name_or_number(kVaOps, *op);
      r.u32("flags", offsetof(AmdgpuGemVa, flags));
      r.u64("va_address", offsetof(AmdgpuGemVa, va_address));
      r.u64("offset_in_bo", offsetof(AmdgpuGemVa, offset_in_bo));
      r.u64("map_size", offsetof(AmdgpuGemVa, map_size));
      break;
    case kAmdgpuInfo:
      if (auto q = r.u32("query", offsetof(AmdgpuInfo, query))) {
        d.fields["query_name"] = drm_name_or_number(kInfoQueries, *q);
        if (*q == 0x02 || *q == 0x03)
          if (auto ip = r.u32("ip_type", offsetof(AmdgpuInfo, arg))) d.fields["ip_type_name"] = ip_name(*ip);
      }
      r.u32("return_size", offsetof(AmdgpuInfo, return_size));
      r.u64("return_pointer", offsetof(AmdgpuInfo, return_pointer));
      break;
    case kAmdgpuUserq: {
      auto op = r.u32("op", offsetof(AmdgpuUserqIn, op));
      if (op) d.fields["op_name"] = drm_name_or_number(kUserqOps, *op);
      if (op && *op != kUserqOpCreate) r.u32("queue_id", offsetof(AmdgpuUserqIn, queue_id));
      if (auto ip = r.u32("ip_type", offsetof(AmdgpuUserqIn, ip_type))) d.fields["ip_type_name"] = ip_name(*ip);
      r.u32("doorbell_handle", offsetof(AmdgpuUserqIn, doorbell_handle));
      r.u32("flags", offsetof(AmdgpuUserqIn, flags));
      r.u64("queue_va", offsetof(AmdgpuUserqIn, queue_va));
      r.u64("queue_size", offsetof(AmdgpuUserqIn, queue_size));
      if (ok && op && *op == kUserqOpCreate) out.u32("queue_id", 0);
      break;
    }
    case kAmdgpuUserqSignal:
      r.u32("queue_id", offsetof(AmdgpuUserqSignal, queue_id));
      r.u64("num_syncobj_handles", offsetof(AmdgpuUserqSignal, num_syncobj_handles));
      r.u32("num_bo_read_handles", offsetof(AmdgpuUserqSignal, num_bo_read_handles));
      r.u32("num_bo_write_handles", offsetof(AmdgpuUserqSignal, num_bo_write_handles));
      break;
    case kAmdgpuUserqWait:
      r.u32("waitq_id", offsetof(AmdgpuUserqWait, waitq_id));
      r.u32("num_syncobj_handles", offsetof(AmdgpuUserqWait, num_syncobj_handles));
      r.u16("num_syncobj_timeline_handles", offsetof(AmdgpuUserqWait, num_syncobj_timeline_handles));
      r.u16("num_fences", offsetof(AmdgpuUserqWait, num_fences));
      r.u32("num_bo_read_handles", offsetof(AmdgpuUserqWait, num_bo_read_handles));
      r.u32("num_bo_write_handles", offsetof(AmdgpuUserqWait, num_bo_write_handles));
      break;
    default: break;  // named only
  }
  return true;
}

}  // namespace gpuobs::ioctl_detail
