#include "gpu_metrics/metrics_sampler.h"

#include <chrono>

#include "common/monotonic_clock.h"
#include "gpu_metrics/amd_sysfs_source.h"
#include "gpu_metrics/nvml_library.h"
#include "gpu_metrics/nvml_source.h"

namespace gpuobs::gpumetrics {

std::unique_ptr<MetricsSampler> MetricsSampler::create(uint32_t hz, int64_t detail_period_ns) {
  std::vector<std::unique_ptr<MetricSource>> sources;
  std::vector<SourceStatus> absent;
  uint32_t next = 0;
  if (auto lib = NvmlLibrary::open(); lib.ok()) {
    auto nv = std::make_unique<NvmlSource>(std::move(lib.value()), next);
    nv->set_period_ns(NvmlSource::q_gpm, detail_period_ns);
    nv->set_period_ns(NvmlSource::q_proc_util, detail_period_ns);
    next += static_cast<uint32_t>(nv->gpus().size());
    sources.push_back(std::move(nv));
  } else {
    absent.push_back(SourceStatus{"nvml", "", lib.error().message, 0});
  }
  sources.push_back(std::make_unique<AmdSysfsSource>(AmdSysfsSource::default_root(), next));
  return with_sources(hz, std::move(sources), std::move(absent));
}

std::unique_ptr<MetricsSampler> MetricsSampler::with_sources(uint32_t hz,
                                                             std::vector<std::unique_ptr<MetricSource>> sources,
                                                             std::vector<SourceStatus> absent) {
  std::unique_ptr<MetricsSampler> s(new MetricsSampler());
  s->hz_ = hz;
  s->absent_ = std::move(absent);
  for (auto& src : sources)
    for (const auto& g : src->gpus()) s->gpus_.push_back(g);
  s->sources_ = std::move(sources);
  return s;
}

MetricsSampler::~MetricsSampler() { stop(); }

std::vector<SourceStatus> MetricsSampler::statuses() const {
  std::vector<SourceStatus> out = absent_;
  for (const auto& s : sources_) out.push_back(s->status());
  return out;
}

std::string MetricsSampler::summary() const {
  std::string parts;
  for (const auto& st : statuses()) {
    if (gpus_.empty() || st.gpus > 0)
      parts += (parts.empty() ? "" : "; ") + st.source + ": " +
               (st.gpus > 0 ? (st.library.empty() ? st.status : st.library) : st.status);
  }
  if (gpus_.empty()) return "no GPU (" + parts + ")";
  return std::to_string(gpus_.size()) + (gpus_.size() == 1 ? " GPU (" : " GPUs (") + parts + "), " +
         std::to_string(hz_) + " Hz";
}

void MetricsSampler::start() {
  // Without a GPU of its sources it still runs for the DRM clients (an
  // Intel or AMD GPU seen through fdinfo only).
  if (hz_ == 0 || (gpus_.empty() && !drm_) || thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void MetricsSampler::stop() {
  {
    std::lock_guard lk(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MetricsSampler::run() {
  const auto period = std::chrono::nanoseconds(1'000'000'000 / hz_);
  auto next = std::chrono::steady_clock::now();
  std::unique_lock lk(mu_);
  while (!stopping_) {
    lk.unlock();
    tick(monotonic_now_ns());
    lk.lock();
    next += period;
    auto now = std::chrono::steady_clock::now();
    if (now >= next + period) {
      // More than a whole period behind (a slow query, a stopped process):
      // skip the missed ticks instead of firing them back to back.
      stats_.late_ticks += static_cast<uint64_t>((now - next) / period);
      next = now;
    }
    cv_.wait_until(lk, next, [this] { return stopping_; });
  }
}

void MetricsSampler::tick(int64_t now_ns) {
  scratch_.clear();
  uint64_t errors = 0;
  for (auto& s : sources_) {
    s->sample(now_ns, scratch_);
    errors += s->query_errors();
  }
  if (drm_) scratch_.drm = drm_->sample(now_ns);
  uint64_t cpu = thread_cpu_ns();
  std::lock_guard lk(mu_);
  stats_.ticks++;
  if (drm_) {
    stats_.drm = drm_->stats();
    latest_drm_ = scratch_.drm;
  }
  stats_.query_errors = errors;
  stats_.cpu_ns = cpu;
  // One slot per (GPU, metric), found by index: a tick of 8 GPUs' 28
  // metrics no longer scans the list once per sample.
  const size_t per_gpu = metric_catalogue().size() + 1;
  if (latest_slot_.size() < gpus_.size() * per_gpu) latest_slot_.assign(gpus_.size() * per_gpu, kNoSlot);
  for (const auto& m : scratch_.metrics) {
    size_t key = size_t{m.gpu} * per_gpu + static_cast<size_t>(m.metric);
    if (key >= latest_slot_.size()) continue;  // a GPU the sampler did not list: not one of its sources'
    if (latest_slot_[key] == kNoSlot) {
      latest_slot_[key] = latest_.size();
      latest_.push_back(LatestValue{m.gpu, m.metric, m.value});
    } else {
      latest_[latest_slot_[key]].value = m.value;
    }
  }
  size_t held = outbox_.metrics.size() + outbox_.processes.size() + outbox_.drm.size();
  if (held > kMaxOutbox) {
    stats_.dropped +=
        scratch_.metrics.size() + scratch_.processes.size() + scratch_.events.size() + scratch_.drm.size();
    return;
  }
  outbox_.drm.insert(outbox_.drm.end(), scratch_.drm.begin(), scratch_.drm.end());
  outbox_.metrics.insert(outbox_.metrics.end(), scratch_.metrics.begin(), scratch_.metrics.end());
  outbox_.processes.insert(outbox_.processes.end(), scratch_.processes.begin(), scratch_.processes.end());
  outbox_.events.insert(outbox_.events.end(), scratch_.events.begin(), scratch_.events.end());
}

void MetricsSampler::take(SampleBatch& out) {
  std::lock_guard lk(mu_);
  if (out.empty()) {
    std::swap(out, outbox_);
    outbox_.clear();
    return;
  }
  out.metrics.insert(out.metrics.end(), outbox_.metrics.begin(), outbox_.metrics.end());
  out.processes.insert(out.processes.end(), outbox_.processes.begin(), outbox_.processes.end());
  out.events.insert(out.events.end(), outbox_.events.begin(), outbox_.events.end());
  out.drm.insert(out.drm.end(), outbox_.drm.begin(), outbox_.drm.end());
  outbox_.clear();
}

std::vector<DrmClientSample> MetricsSampler::latest_drm() const {
  std::lock_guard lk(mu_);
  return latest_drm_;
}

std::vector<LatestValue> MetricsSampler::latest() const {
  std::lock_guard lk(mu_);
  return latest_;
}

SamplerStats MetricsSampler::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

}  // namespace gpuobs::gpumetrics
