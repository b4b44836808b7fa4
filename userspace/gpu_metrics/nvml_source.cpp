#include "gpu_metrics/nvml_source.h"

#include <cstring>

#include <fmt/format.h>

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

NvmlSource::NvmlSource(std::unique_ptr<NvmlLibrary> lib, uint32_t first_index) : lib_(std::move(lib)) {
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
    if (f.pci_info && f.pci_info(d.handle, &pci) == nvml::kSuccess) g.pci_bus_id = text_of(pci.bus_id, sizeof pci.bus_id);
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

bool NvmlSource::ask(Device& d, Query q, nvml::Return r) {
  if (r == nvml::kSuccess) return true;
  if (r == nvml::kErrorNotSupported || r == nvml::kErrorFunctionNotFound)
    d.unsupported[q] = true;
  else
    ++errors_;
  return false;
}

void NvmlSource::sample(int64_t now_ns, SampleBatch& out) {
  for (size_t i = 0; i < devices_.size(); ++i) sample_device(gpus_[i].index, devices_[i], now_ns, out);
  drain_events(now_ns, out);
}

void NvmlSource::sample_device(uint32_t gpu, Device& d, int64_t now_ns, SampleBatch& out) {
  const auto& f = lib_->fn();
  auto put = [&](GpuMetric m, double v) { out.metrics.push_back(MetricSample{now_ns, gpu, m, v}); };
  auto usable = [&](Query q, const void* fn) {
    if (d.unsupported[q]) return false;
    if (!fn) d.unsupported[q] = true;
    return fn != nullptr;
  };
  if (usable(q_util, reinterpret_cast<const void*>(f.utilization))) {
    nvml::Utilization u{};
    if (ask(d, q_util, f.utilization(d.handle, &u))) {
      put(GpuMetric::gpu_util_pct, u.gpu);
      put(GpuMetric::mem_util_pct, u.memory);
    }
  }
  if (usable(q_memory, reinterpret_cast<const void*>(f.memory))) {
    nvml::Memory m{};
    if (ask(d, q_memory, f.memory(d.handle, &m))) {
      put(GpuMetric::mem_used_bytes, static_cast<double>(m.used));
      put(GpuMetric::mem_total_bytes, static_cast<double>(m.total));
    }
  }
  unsigned v = 0;
  if (usable(q_power, reinterpret_cast<const void*>(f.power)) && ask(d, q_power, f.power(d.handle, &v)))
    put(GpuMetric::power_mw, v);
  if (usable(q_sm_clock, reinterpret_cast<const void*>(f.clock)) &&
      ask(d, q_sm_clock, f.clock(d.handle, nvml::kClockSm, &v)))
    put(GpuMetric::sm_clock_mhz, v);
  if (usable(q_mem_clock, reinterpret_cast<const void*>(f.clock)) &&
      ask(d, q_mem_clock, f.clock(d.handle, nvml::kClockMem, &v)))
    put(GpuMetric::mem_clock_mhz, v);
  if (usable(q_temperature, reinterpret_cast<const void*>(f.temperature)) &&
      ask(d, q_temperature, f.temperature(d.handle, nvml::kTemperatureGpu, &v)))
    put(GpuMetric::temperature_c, v);
  unsigned long long reasons = 0;
  if (usable(q_reasons, reinterpret_cast<const void*>(f.clocks_event_reasons)) &&
      ask(d, q_reasons, f.clocks_event_reasons(d.handle, &reasons)))
    put(GpuMetric::clocks_event_reasons, static_cast<double>(reasons));
  if (usable(q_ecc, reinterpret_cast<const void*>(f.ecc_total))) {
    unsigned long long corrected = 0, uncorrected = 0;
    if (ask(d, q_ecc, f.ecc_total(d.handle, nvml::kEccCorrected, nvml::kEccVolatile, &corrected)) &&
        ask(d, q_ecc, f.ecc_total(d.handle, nvml::kEccUncorrected, nvml::kEccVolatile, &uncorrected))) {
      put(GpuMetric::ecc_corrected_errors, static_cast<double>(corrected));
      put(GpuMetric::ecc_uncorrected_errors, static_cast<double>(uncorrected));
    }
  }
  if (!d.unsupported[q_gpm]) sample_gpm(gpu, d, now_ns, out);
  sample_processes(gpu, d, now_ns, out);
}

void NvmlSource::sample_gpm(uint32_t gpu, Device& d, int64_t now_ns, SampleBatch& out) {
  const auto& f = lib_->fn();
  if (d.gpm_last >= 0 && now_ns - d.gpm_last_ns < kGpmMinIntervalNs) return;
  int next = d.gpm_last == 0 ? 1 : 0;
  if (!ask(d, q_gpm, f.gpm_sample_get(d.handle, d.gpm[next]))) return;
  int prev = d.gpm_last;
  d.gpm_last = next;
  d.gpm_last_ns = now_ns;
  if (prev < 0) return;  // the first sample: nothing to compare with yet
  nvml::GpmMetricsGet get{};
  get.version = nvml::kGpmMetricsGetVersion;
  get.num_metrics = static_cast<unsigned>(std::size(kGpmAsked));
  get.sample1 = d.gpm[prev];
  get.sample2 = d.gpm[next];
  for (size_t i = 0; i < std::size(kGpmAsked); ++i) get.metrics[i].metric_id = kGpmAsked[i].id;
  if (!ask(d, q_gpm, f.gpm_metrics_get(&get))) return;
  for (size_t i = 0; i < std::size(kGpmAsked); ++i)
    if (get.metrics[i].result == nvml::kSuccess)
      out.metrics.push_back(MetricSample{now_ns, gpu, kGpmAsked[i].metric, get.metrics[i].value});
}

void NvmlSource::sample_processes(uint32_t gpu, Device& d, int64_t now_ns, SampleBatch& out) {
  const auto& f = lib_->fn();
  std::unordered_map<uint32_t, Device::Proc> now;
  bool listed = false;  // some query answered: a process missing from it is gone
  if (!d.unsupported[q_proc_mem] && f.compute_processes) {
    if (proc_buf_.empty()) proc_buf_.resize(64);
    unsigned n = static_cast<unsigned>(proc_buf_.size());
    nvml::Return r = f.compute_processes(d.handle, &n, proc_buf_.data());
    if (r == nvml::kErrorInsufficientSize) {
      proc_buf_.resize(n + 16);
      n = static_cast<unsigned>(proc_buf_.size());
      r = f.compute_processes(d.handle, &n, proc_buf_.data());
    }
    if (ask(d, q_proc_mem, r)) {
      listed = true;
      for (unsigned i = 0; i < n && i < proc_buf_.size(); ++i) {
        auto& p = now[proc_buf_[i].pid];
        if (proc_buf_[i].used_gpu_memory != nvml::kValueNotAvailable)
          p.bytes = static_cast<int64_t>(proc_buf_[i].used_gpu_memory);
      }
    }
  } else if (!f.compute_processes) {
    d.unsupported[q_proc_mem] = true;
  }
  if (!d.unsupported[q_proc_util] && f.process_utilization) {
    if (util_buf_.empty()) util_buf_.resize(64);
    unsigned n = static_cast<unsigned>(util_buf_.size());
    nvml::Return r = f.process_utilization(d.handle, util_buf_.data(), &n, d.proc_seen_us);
    if (r == nvml::kErrorInsufficientSize) {
      util_buf_.resize(n + 16);
      n = static_cast<unsigned>(util_buf_.size());
      r = f.process_utilization(d.handle, util_buf_.data(), &n, d.proc_seen_us);
    }
    if (r == nvml::kErrorNotFound) {
      // No sample since the last one: the processes keep their last values.
    } else if (ask(d, q_proc_util, r)) {
      // Several samples per process may come back; the latest counts.
      std::unordered_map<uint32_t, unsigned long long> newest;
      for (unsigned i = 0; i < n && i < util_buf_.size(); ++i) {
        const auto& s = util_buf_[i];
        if (s.timestamp_us > d.proc_seen_us) d.proc_seen_us = s.timestamp_us;
        auto [it, fresh] = newest.emplace(s.pid, s.timestamp_us);
        if (!fresh && it->second > s.timestamp_us) continue;
        it->second = s.timestamp_us;
        auto& p = now[s.pid];
        p.sm = static_cast<int32_t>(s.sm_util);
        p.mem = static_cast<int32_t>(s.mem_util);
      }
    }
  } else if (!f.process_utilization) {
    d.unsupported[q_proc_util] = true;
  }
  // A process keeps the utilization of its last sample until a new one comes.
  for (auto& [pid, p] : now) {
    auto old = d.procs.find(pid);
    if (old != d.procs.end()) {
      if (p.sm < 0) p.sm = old->second.sm, p.mem = old->second.mem;
      if (p.bytes < 0 && !listed) p.bytes = old->second.bytes;
    }
    out.processes.push_back(ProcessSample{now_ns, gpu, pid, p.sm, p.mem, p.bytes, false});
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
  // At most a few per tick: an event storm must not hold the sampler.
  for (int i = 0; i < 64; ++i) {
    nvml::EventData e{};
    nvml::Return r = f.event_set_wait(events_, &e, 0);
    if (r == nvml::kErrorTimeout) return;
    if (r != nvml::kSuccess) {
      ++errors_;
      return;
    }
    uint32_t gpu = gpus_.empty() ? 0 : gpus_.front().index;
    for (size_t k = 0; k < devices_.size(); ++k)
      if (devices_[k].handle == e.device) gpu = gpus_[k].index;
    const char* kind = e.event_type == nvml::kEventXid             ? "xid"
                       : e.event_type == nvml::kEventDoubleBitEcc  ? "ecc_double_bit"
                       : e.event_type == nvml::kEventSingleBitEcc  ? "ecc_single_bit"
                                                                    : "other";
    out.events.push_back(GpuEvent{now_ns, gpu, kind, e.event_type == nvml::kEventXid ? e.event_data : 0});
  }
}

}  // namespace gpuobs::gpumetrics
