#include "daemon/process_tally.h"

#include <fstream>

#include "capture/procfs.h"
#include "catalogue/api_spec.h"

namespace gpuobs::daemon {
namespace {

uint64_t arg(const ApiCallEvent& e, uint8_t pos) { return pos ? e.args[(pos - 1) & 7] : 0; }

bool device_kind(ApiKind k) {
  return k == ApiKind::device || k == ApiKind::pitch || k == ApiKind::async || k == ApiKind::pool;
}

std::string comm_of(uint32_t tgid) {
  std::ifstream in("/proc/" + std::to_string(tgid) + "/comm");
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

void ProcessTally::on_event(const Event& ev) {
  if (auto* l = std::get_if<gpuobs_launch>(&ev)) {
    ++procs_[l->hdr.tgid].launches;
    return;
  }
  if (auto* p = std::get_if<ProcEvent>(&ev)) {
    if (p->type == GPUOBS_EV_PROC_EXEC) {
      if (auto it = procs_.find(p->hdr.tgid); it != procs_.end()) it->second.comm = p->comm;
    } else if (p->type == GPUOBS_EV_PROC_EXIT) {
      // A process that exits frees everything: its tally leaves with it.
      uint32_t t = p->hdr.tgid;
      live_.erase(live_.lower_bound({t, 0}), live_.upper_bound({t, UINT64_MAX}));
      procs_.erase(t);
    }
    return;
  }
  auto* c = std::get_if<ApiCallEvent>(&ev);
  if (!c) return;
  const ApiSpec* s = api_by_id(c->api);
  if (!s) return;
  uint32_t tgid = c->hdr.tgid;
  bool ok = (c->flags & GPUOBS_CALL_F_RETURNED) && c->ret == 0;
  switch (s->family) {
    case Family::launch: ++procs_[tgid].launches; break;
    case Family::copy:
    case Family::memset:
      // 1-D copies and memsets; 2-D/3-D copies carry their size in a descriptor (not counted here).
      if (s->bytes && s->kind != ApiKind::two_d && s->kind != ApiKind::three_d)
        procs_[tgid].bytes_copied +=
            arg(*c, s->bytes) * (s->count ? arg(*c, s->count) : 1) * (s->family == Family::memset ? s->elem : 1);
      break;
    case Family::memory:
      if (!ok || !device_kind(s->kind)) {
        if (ok && s->op == ApiOp::free) {
          auto it = live_.find({tgid, arg(*c, s->dst)});
          if (it != live_.end()) {
            procs_[tgid].device_bytes_live -= static_cast<int64_t>(it->second);
            live_.erase(it);
          }
        }
        break;
      }
      if (s->op == ApiOp::alloc && (c->flags & GPUOBS_CALL_F_OUT_READ)) {
        uint64_t bytes = arg(*c, s->bytes) * (s->count ? arg(*c, s->count) : 1);
        live_[{tgid, c->out_value}] = bytes;
        procs_[tgid].device_bytes_live += static_cast<int64_t>(bytes);
      }
      break;
    default: break;
  }
}

std::vector<ProcessHealth> ProcessTally::snapshot() {
  std::vector<ProcessHealth> out;
  for (auto& [tgid, t] : procs_) {
    if (t.comm.empty()) t.comm = comm_of(tgid);
    // Once per process: its cgroup does not change container while it runs
    // (a pid reused later is a new entry: PROC_EXIT erased this one).
    if (!t.origin_read) {
      t.origin_read = true;
      if (auto o = read_process_origin(tgid)) t.container_id = o->container_id;
    }
    out.push_back(ProcessHealth{tgid, t.comm, t.container_id, t.launches, t.bytes_copied, t.device_bytes_live});
  }
  return out;
}

void ProcessTally::reset_counts() {
  for (auto& [tgid, t] : procs_) t.launches = t.bytes_copied = 0;
}

}  // namespace gpuobs::daemon
