#include "gpu_metrics/nvml_source.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "common/monotonic_clock.h"

namespace gpuobs::gpumetrics {
namespace {

std::string text_of(const char* buf, size_t n) { return std::string(buf, strnlen(buf, n)); }

struct GpmAsk {
  unsigned int id;
  GpuMetric metric;
};
constexpr GpmAsk kGpmAsked[] = {
    {nvml::kGpmGraphicsUtil, GpuMetric::graphics_active_pct},
    {nvml::kGpmSmUtil, GpuMetric::sm_active_pct},
    {nvml::kGpmSmOccupancy, GpuMetric::sm_occupancy_pct},
    {nvml::kGpmAnyTensorUtil, GpuMetric::tensor_active_pct},
    {nvml::kGpmHmmaTensorUtil, GpuMetric::hmma_active_pct},
    {nvml::kGpmImmaTensorUtil, GpuMetric::imma_active_pct},
    {nvml::kGpmDfmaTensorUtil, GpuMetric::dfma_active_pct},
    {nvml::kGpmDramBwUtil, GpuMetric::dram_bw_util_pct},
    {nvml::kGpmFp64Util, GpuMetric::fp64_active_pct},
    {nvml::kGpmFp32Util, GpuMetric::fp32_active_pct},
    {nvml::kGpmFp16Util, GpuMetric::fp16_active_pct},
    {nvml::kGpmIntegerUtil, GpuMetric::integer_active_pct},
    {nvml::kGpmPcieTxPerSec, GpuMetric::pcie_tx_mibps},
    {nvml::kGpmPcieRxPerSec, GpuMetric::pcie_rx_mibps},
    {nvml::kGpmNvlinkTotalTxPerSec, GpuMetric::nvlink_tx_mibps},
    {nvml::kGpmNvlinkTotalRxPerSec, GpuMetric::nvlink_rx_mibps},
};
static_assert(std::size(kGpmAsked) <= nvml::kGpmMaxAsked);

}  // namespace

const char* NvmlSource::query_name(Query q) {
  static const char* const names[q_count] = {"utilization",
                                             "memory",
                                             "power",
                                             "sm_clock",
                                             "mem_clock",
                                             "temperature",
                                             "clocks_event_reasons",
                                             "ecc",
                                             "process_utilization",
                                             "process_memory",
                                             "gpm_sample",
                                             "gpm_metrics",
                                             "events"};
  return names[q];
}

int64_t NvmlSource::default_period_ns(Query q) {
  switch (q) {
    case q_mem_clock:
    case q_temperature:
    case q_proc_mem:
    case q_events: return 1'000'000'000;
    case q_ecc:
    case q_gpm:
    // About 1.4 ms of CPU per call on the H200; NVML keeps the samples
    // between calls and each is stored at its own time, so none is lost.
    case q_proc_util: return 10'000'000'000;
    default: return 0;
  }
}

NvmlSource::NvmlSource(std::unique_ptr<NvmlLibrary> lib, uint32_t first_index) : lib_(std::move(lib)) {
  for (int q = 0; q < q_count; ++q) period_ns_[q] = default_period_ns(static_cast<Query>(q));
  const auto& f = lib_->fn();
  unsigned count = 0;
  if (nvml::Return r = f.device_count(&count); r != nvml::kSuccess) {
    status_ = "nvmlDeviceGetCount_v2 failed: " + lib_->error_text(r);
    ++errors_;
    return;
  }
  std::string driver;
  if (f.driver_version) {
    char buf[96] = {};
    if (f.driver_version(buf, sizeof buf) == nvml::kSuccess) driver = text_of(buf, sizeof buf);
  }
  if (f.event_set_create && f.event_set_create(&events_) != nvml::kSuccess) events_ = nullptr;
  for (unsigned i = 0; i < count; ++i) {
    Device d;
    if (nvml::Return r = f.handle_by_index(i, &d.handle); r != nvml::kSuccess) {
      // A GPU NVML lists but cannot open (lost, or not ours under cgroups):
      // said in the status, the others are sampled.
      status_ = fmt::format("GPU {}: {}", i, lib_->error_text(r));
      ++errors_;
      continue;
    }
    GpuInfo g;
    g.index = first_index + static_cast<uint32_t>(gpus_.size());
    g.vendor = "nvidia";
    g.driver = driver;
    char buf[128] = {};
    if (f.uuid && f.uuid(d.handle, buf, sizeof buf) == nvml::kSuccess) g.uuid = text_of(buf, sizeof buf);
    std::memset(buf, 0, sizeof buf);
    if (f.name && f.name(d.handle, buf, sizeof buf) == nvml::kSuccess) g.name = text_of(buf, sizeof buf);
    nvml::PciInfo pci{};
    if (f.pci_info && f.pci_info(d.handle, &pci) == nvml::kSuccess)
      g.pci_bus_id = text_of(pci.bus_id, sizeof pci.bus_id);
    nvml::Memory mem{};
    if (f.memory && f.memory(d.handle, &mem) == nvml::kSuccess) g.memory_total = mem.total;
    if (f.gpm_support && f.gpm_sample_alloc && f.gpm_sample_get && f.gpm_metrics_get) {
      nvml::GpmSupport s{nvml::kGpmSupportVersion, 0};
      if (f.gpm_support(d.handle, &s) == nvml::kSuccess && s.is_supported &&
          f.gpm_sample_alloc(&d.gpm[0]) == nvml::kSuccess && f.gpm_sample_alloc(&d.gpm[1]) == nvml::kSuccess)
        g.gpm = true;
    }
    d.unsupported[q_gpm] = !g.gpm;
    if (events_ && f.register_events) {
      // One registration per type: a GPU that lacks ECC still reports Xids.
      for (auto type : {nvml::kEventXid, nvml::kEventDoubleBitEcc, nvml::kEventSingleBitEcc})
        f.register_events(d.handle, type, events_);
    }
    // Process samples from before the sampler started are not this capture's.
    timespec rt{};
    clock_gettime(CLOCK_REALTIME, &rt);
    d.proc_seen_us =
        static_cast<unsigned long long>(rt.tv_sec) * 1'000'000 + static_cast<unsigned long long>(rt.tv_nsec) / 1000;
    gpus_.push_back(std::move(g));
    devices_.push_back(std::move(d));
  }
  if (gpus_.empty() && status_ == "ok") status_ = "no NVIDIA GPU";
}

NvmlSource::~NvmlSource() {
  const auto& f = lib_->fn();
  for (auto& d : devices_)
    for (auto* s : d.gpm)
      if (s && f.gpm_sample_free) f.gpm_sample_free(s);
  if (events_ && f.event_set_free) f.event_set_free(events_);
}

SourceStatus NvmlSource::status() const {
  return SourceStatus{"nvml", lib_->path(), status_, static_cast<uint32_t>(gpus_.size())};
}

bool NvmlSource::due(Device& d, Query q, const void* fn, int64_t now_ns) {
  if (d.unsupported[q]) return false;
  if (!fn) {
    d.unsupported[q] = true;
    return false;
  }
  if (d.asked_ns[q] && now_ns - d.asked_ns[q] < period_ns_[q]) return false;
  d.asked_ns[q] = now_ns;
  return true;
}

template <class F>
nvml::Return NvmlSource::call(Query q, F&& fn) {
  uint64_t t0 = profile_ ? thread_cpu_ns() : 0;
  nvml::Return r = fn();
  if (profile_) {
    costs_[q].calls++;
    costs_[q].cpu_ns += thread_cpu_ns() - t0;
  }
  return r;
}

template <class F>
bool NvmlSource::ask(Device& d, Query q, F&& fn) {
  return judge(d, q, call(q, fn));
}

bool NvmlSource::judge(Device& d, Query q, nvml::Return r) {
  if (r == nvml::kSuccess) return true;
  if (r == nvml::kErrorNotSupported || r == nvml::kErrorFunctionNotFound) d.unsupported[q] = true;
  else ++errors_;
  return false;
}

void NvmlSource::sample(int64_t now_ns, SampleBatch& out) {
  for (size_t i = 0; i < devices_.size(); ++i) sample_device(gpus_[i].index, devices_[i], now_ns, out);
  drain_events(now_ns, out);
}

void NvmlSource::sample_device(uint32_t gpu, Device& d, int64_t now_ns, SampleBatch& out) {
  const auto& f = lib_->fn();
  auto put = [&](GpuMetric m, double v) { out.metrics.push_back(MetricSample{now_ns, gpu, m, v}); };
  auto fn = [](auto* p) { return reinterpret_cast<const void*>(p); };
  if (due(d, q_util, fn(f.utilization), now_ns)) {
    nvml::Utilization u{};
    if (ask(d, q_util, [&] { return f.utilization(d.handle, &u); })) {
      put(GpuMetric::gpu_util_pct, u.gpu);
      put(GpuMetric::mem_util_pct, u.memory);
    }
  }
  // _v2 where the driver has it: its `used` leaves out what the driver
  // reserves, as nvidia-smi does (v1's `used` counts it: 615 MiB more on the H200).
  if (due(d, q_memory, f.memory_v2 ? fn(f.memory_v2) : fn(f.memory), now_ns)) {
    if (f.memory_v2) {
      nvml::MemoryV2 m{};
      m.version = nvml::kMemoryV2Version;
      if (ask(d, q_memory, [&] { return f.memory_v2(d.handle, &m); })) {
        put(GpuMetric::mem_used_bytes, static_cast<double>(m.used));
        put(GpuMetric::mem_total_bytes, static_cast<double>(m.total));
        put(GpuMetric::mem_reserved_bytes, static_cast<double>(m.reserved));
      }
    } else {
      nvml::Memory m{};
      if (ask(d, q_memory, [&] { return f.memory(d.handle, &m); })) {
        put(GpuMetric::mem_used_bytes, static_cast<double>(m.used));
        put(GpuMetric::mem_total_bytes, static_cast<double>(m.total));
      }
    }
  }
  unsigned v = 0;
  if (due(d, q_power, fn(f.power), now_ns) && ask(d, q_power, [&] { return f.power(d.handle, &v); }))
    put(GpuMetric::power_mw, v);
  if (due(d, q_sm_clock, fn(f.clock), now_ns) &&
      ask(d, q_sm_clock, [&] { return f.clock(d.handle, nvml::kClockSm, &v); }))
    put(GpuMetric::sm_clock_mhz, v);
  if (due(d, q_mem_clock, fn(f.clock), now_ns) &&
      ask(d, q_mem_clock, [&] { return f.clock(d.handle, nvml::kClockMem, &v); }))
    put(GpuMetric::mem_clock_mhz, v);
  if (due(d, q_temperature, fn(f.temperature), now_ns) &&
      ask(d, q_temperature, [&] { return f.temperature(d.handle, nvml::kTemperatureGpu, &v); }))
    put(GpuMetric::temperature_c, v);
  unsigned long long reasons = 0;
  if (due(d, q_reasons, fn(f.clocks_event_reasons), now_ns) &&
      ask(d, q_reasons, [&] { return f.clocks_event_reasons(d.handle, &reasons); }))
    put(GpuMetric::clocks_event_reasons, static_cast<double>(reasons));
  if (due(d, q_ecc, fn(f.ecc_total), now_ns)) {
    unsigned long long corrected = 0, uncorrected = 0;
    if (ask(d, q_ecc, [&] { return f.ecc_total(d.handle, nvml::kEccCorrected, nvml::kEccVolatile, &corrected); }) &&
        ask(d, q_ecc, [&] { return f.ecc_total(d.handle, nvml::kEccUncorrected, nvml::kEccVolatile, &uncorrected); })) {
      put(GpuMetric::ecc_corrected_errors, static_cast<double>(corrected));
      put(GpuMetric::ecc_uncorrected_errors, static_cast<double>(uncorrected));
    }
  }
  if (!d.unsupported[q_gpm]) sample_gpm(gpu, d, now_ns, out);
  sample_processes(gpu, d, now_ns, out);
}

void NvmlSource::sample_gpm(uint32_t gpu, Device& d, int64_t now_ns, SampleBatch& out) {
  const auto& f = lib_->fn();
  if (d.gpm_last >= 0 && now_ns - d.gpm_last_ns < std::max(kGpmMinIntervalNs, period_ns_[q_gpm])) return;
  int next = d.gpm_last == 0 ? 1 : 0;
  if (!ask(d, q_gpm, [&] { return f.gpm_sample_get(d.handle, d.gpm[next]); })) return;
  int prev = d.gpm_last;
  const int64_t interval_start = d.gpm_last_ns;
  d.gpm_last = next;
  d.gpm_last_ns = now_ns;
  if (prev < 0) return;  // the first sample: nothing to compare with yet
  nvml::GpmMetricsGet get{};
  get.version = nvml::kGpmMetricsGetVersion;
  get.num_metrics = static_cast<unsigned>(std::size(kGpmAsked));
  get.sample1 = d.gpm[prev];
  get.sample2 = d.gpm[next];
  for (size_t i = 0; i < std::size(kGpmAsked); ++i) get.metrics[i].metric_id = kGpmAsked[i].id;
  if (!judge(d, q_gpm, call(q_gpm_metrics, [&] { return f.gpm_metrics_get(&get); }))) return;
  for (size_t i = 0; i < std::size(kGpmAsked); ++i) {
    if (get.metrics[i].result != nvml::kSuccess) continue;
    // GPM divides counters; an interval without activity can give NaN,
    // which is no value (and SQLite would store it as NULL).
    if (!std::isfinite(get.metrics[i].value)) {
      ++errors_;
      continue;
    }
    // The average over [interval_start, now): stamped at its start, so the
    // row holds exactly the interval it describes (review: stamped at its
    // end, it showed each interval one interval late).
    out.metrics.push_back(MetricSample{interval_start, gpu, kGpmAsked[i].metric, get.metrics[i].value});
  }
}

void NvmlSource::sample_processes(uint32_t gpu, Device& d, int64_t now_ns, SampleBatch& out) {
  const auto& f = lib_->fn();
  std::unordered_map<uint32_t, Device::Proc> now;
  bool listed = false;  // some query answered: a process missing from it is gone
  auto fn = [](auto* p) { return reinterpret_cast<const void*>(p); };
  bool mem_due = due(d, q_proc_mem, fn(f.compute_processes), now_ns);
  if (mem_due) {
    if (proc_buf_.empty()) proc_buf_.resize(64);
    unsigned n = static_cast<unsigned>(proc_buf_.size());
    auto list = [&] { return f.compute_processes(d.handle, &n, proc_buf_.data()); };
    nvml::Return r = call(q_proc_mem, list);
    if (r == nvml::kErrorInsufficientSize) {  // the list grew: asked again with room
      proc_buf_.resize(n + 16);
      n = static_cast<unsigned>(proc_buf_.size());
      r = call(q_proc_mem, list);
    }
    if (judge(d, q_proc_mem, r)) {
      listed = true;
      for (unsigned i = 0; i < n && i < proc_buf_.size(); ++i) {
        auto& p = now[proc_buf_[i].pid];
        if (proc_buf_[i].used_gpu_memory != nvml::kValueNotAvailable)
          p.bytes = static_cast<int64_t>(proc_buf_[i].used_gpu_memory);
      }
    }
  }
  // Only while NVML lists compute processes on this GPU (when it can list
  // them): the call costs milliseconds (docs/gpu_metrics.md, "Cost").
  // (Asked in the same tick as the listing that found a process, so a
  // process's first row has its utilization.)
  bool any = d.unsupported[q_proc_mem] || !now.empty() || (!listed && !d.procs.empty());
  bool util_due = any && due(d, q_proc_util, fn(f.process_utilization), now_ns);
  if (!mem_due && !util_due) return;
  if (util_due) {
    if (util_buf_.empty()) util_buf_.resize(256);
    unsigned n = static_cast<unsigned>(util_buf_.size());
    auto query = [&] { return f.process_utilization(d.handle, util_buf_.data(), &n, d.proc_seen_us); };
    nvml::Return r = call(q_proc_util, query);
    if (r == nvml::kErrorInsufficientSize) {
      util_buf_.resize(n + 64);
      n = static_cast<unsigned>(util_buf_.size());
      r = call(q_proc_util, query);
    }
    if (r == nvml::kErrorNotFound) {
      // No sample since the last one: the processes keep their last values.
    } else if (judge(d, q_proc_util, r)) {
      // NVML keeps its samples (several a second per process) and returns
      // those since proc_seen_us: each is stored at its own time (NVML's
      // CLOCK_REALTIME microseconds, moved to CLOCK_MONOTONIC), so asking
      // every few seconds loses none of them.
      timespec rt{}, mt{};
      clock_gettime(CLOCK_REALTIME, &rt);
      clock_gettime(CLOCK_MONOTONIC, &mt);
      const int64_t realtime_minus_mono = (int64_t{rt.tv_sec} - mt.tv_sec) * 1'000'000'000 + (rt.tv_nsec - mt.tv_nsec);
      std::vector<const nvml::ProcessUtilizationSample*> got;
      for (unsigned i = 0; i < n && i < util_buf_.size(); ++i)
        if (util_buf_[i].timestamp_us > d.proc_seen_us) got.push_back(&util_buf_[i]);
      std::sort(got.begin(), got.end(), [](auto* a, auto* b) { return a->timestamp_us < b->timestamp_us; });
      for (const auto* s : got) {
        d.proc_seen_us = std::max(d.proc_seen_us, s->timestamp_us);
        int64_t at = std::min(now_ns, static_cast<int64_t>(s->timestamp_us) * 1000 - realtime_minus_mono);
        // A process no longer listed has ended: its late samples would bring
        // it back after its end. A sample older than the process's last row
        // would land out of order.
        bool known = listed ? now.count(s->pid) > 0 : d.procs.count(s->pid) > 0;
        if (!known && !d.unsupported[q_proc_mem]) continue;
        if (auto old = d.procs.find(s->pid); old != d.procs.end() && at <= old->second.last_ns) continue;
        auto& p = now[s->pid];
        p.last_ns = at;
        p.sm = static_cast<int32_t>(s->sm_util);
        p.mem = static_cast<int32_t>(s->mem_util);
        int64_t bytes = p.bytes;
        if (bytes < 0)
          if (auto old = d.procs.find(s->pid); old != d.procs.end()) bytes = old->second.bytes;
        out.processes.push_back(ProcessSample{at, gpu, s->pid, p.sm, p.mem, bytes, false});
      }
    }
  }
  // A process keeps the utilization of its last sample until a new one
  // comes. Rows at now only for the processes listed now.
  for (auto& [pid, p] : now) {
    auto old = d.procs.find(pid);
    if (old != d.procs.end()) {
      if (p.sm < 0) p.sm = old->second.sm, p.mem = old->second.mem;
      if (p.bytes < 0 && !listed) p.bytes = old->second.bytes;
      p.last_ns = std::max(p.last_ns, old->second.last_ns);
    }
    if (!listed) continue;
    out.processes.push_back(ProcessSample{now_ns, gpu, pid, p.sm, p.mem, p.bytes, false});
    p.last_ns = now_ns;
  }
  if (listed) {
    for (auto& [pid, p] : d.procs)
      if (!now.count(pid)) out.processes.push_back(ProcessSample{now_ns, gpu, pid, -1, -1, -1, true});
    d.procs = std::move(now);
  } else {
    for (auto& [pid, p] : now) d.procs[pid] = p;
  }
}

void NvmlSource::drain_events(int64_t now_ns, SampleBatch& out) {
  const auto& f = lib_->fn();
  if (!events_ || !f.event_set_wait) return;
  if (events_asked_ns_ && now_ns - events_asked_ns_ < period_ns_[q_events]) return;
  events_asked_ns_ = now_ns;
  // At most a few per tick: an event storm must not hold the sampler.
  for (int i = 0; i < 64; ++i) {
    nvml::EventData e{};
    nvml::Return r = call(q_events, [&] { return f.event_set_wait(events_, &e, 0); });
    if (r == nvml::kErrorTimeout) return;
    if (r != nvml::kSuccess) {
      ++errors_;
      return;
    }
    uint32_t gpu = gpus_.empty() ? 0 : gpus_.front().index;
    for (size_t k = 0; k < devices_.size(); ++k)
      if (devices_[k].handle == e.device) gpu = gpus_[k].index;
    const char* kind = e.event_type == nvml::kEventXid            ? "xid"
                       : e.event_type == nvml::kEventDoubleBitEcc ? "ecc_double_bit"
                       : e.event_type == nvml::kEventSingleBitEcc ? "ecc_single_bit"
                                                                  : "other";
    out.events.push_back(GpuEvent{now_ns, gpu, kind, e.event_type == nvml::kEventXid ? e.event_data : 0});
  }
}

}  // namespace gpuobs::gpumetrics
