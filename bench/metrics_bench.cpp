// The GPU metrics sampler's own cost (issue 19: < 0.5% of one core for 8
// GPUs' worth of queries at 10 Hz). Runs the real sampler over NVML for
// --seconds at --hz, with the host's GPUs asked --replicas times per tick
// (one H100 asked 8 times stands for an 8-GPU host), and, in the same run,
// the floor: the same thread waking at the same rate with nothing to ask.
// Prints the sampler thread's CPU time per second of each, as a share of
// one core, and per GPU query round.
//   metrics_bench [--seconds 30] [--hz 10] [--replicas 8]
#include <CLI/CLI.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "gpu_metrics/metrics_sampler.h"
#include "gpu_metrics/nvml_library.h"
#include "gpu_metrics/nvml_source.h"

using namespace gpuobs::gpumetrics;

namespace {

// One GPU that reports nothing: the sampler's wake-ups alone.
class EmptySource : public MetricSource {
 public:
  EmptySource() { gpus_.push_back(GpuInfo{0, "none", "", "", "", "", 0, false}); }
  const std::vector<GpuInfo>& gpus() const override { return gpus_; }
  void sample(int64_t, SampleBatch&) override {}
  SourceStatus status() const override { return {"empty", "", "ok", 1}; }
  uint64_t query_errors() const override { return 0; }

 private:
  std::vector<GpuInfo> gpus_;
};

struct Run {
  SamplerStats stats;
  size_t samples = 0;
  double seconds = 0;
};

// before_stop: read the sources' own figures while they still exist.
Run run(std::unique_ptr<MetricsSampler> s, double seconds, const std::function<void()>& before_stop = {}) {
  auto t0 = std::chrono::steady_clock::now();
  s->start();
  SampleBatch b;
  size_t samples = 0;
  // Emptied as the session would (every poll), so the outbox stays small.
  while (std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(seconds)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    s->take(b);
    samples += b.metrics.size() + b.processes.size();
    b.clear();
  }
  s->stop();
  if (before_stop) before_stop();
  Run r{s->stats(), samples, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the GPU metrics sampler's CPU cost"};
  double seconds = 30;
  uint32_t hz = 10, replicas = 8;
  int64_t gpm_period_ms = -1, proc_period_ms = -1;  // -1: the sampler's defaults
  app.add_option("--seconds", seconds, "seconds per run")->capture_default_str();
  app.add_option("--hz", hz, "ticks per second")->capture_default_str();
  app.add_option("--replicas", replicas, "times each GPU is asked per tick (GPUs emulated: GPUs x replicas)")
      ->capture_default_str();
  app.add_option("--gpm-period-ms", gpm_period_ms, "GPM sampled at most this often (default: the sampler's)");
  app.add_option("--proc-period-ms", proc_period_ms, "per-process queries at most this often (default: the sampler's)");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::unique_ptr<MetricSource>> sources;
  std::vector<NvmlSource*> nvml_sources;  // profiled: the CPU time of each query
  uint32_t gpus = 0;
  for (uint32_t r = 0; r < replicas; ++r) {
    auto lib = NvmlLibrary::open();
    if (!lib.ok()) {
      std::fprintf(stderr, "metrics_bench: %s\n", lib.error().message.c_str());
      return 1;
    }
    auto src = std::make_unique<NvmlSource>(std::move(lib.value()), gpus);
    src->set_profile(true);
    if (gpm_period_ms >= 0) src->set_period_ns(NvmlSource::q_gpm, gpm_period_ms * 1'000'000);
    if (proc_period_ms >= 0) {
      src->set_period_ns(NvmlSource::q_proc_util, proc_period_ms * 1'000'000);
      src->set_period_ns(NvmlSource::q_proc_mem, proc_period_ms * 1'000'000);
    }
    nvml_sources.push_back(src.get());
    gpus += static_cast<uint32_t>(src->gpus().size());
    if (r == 0)
      for (const auto& g : src->gpus())
        std::printf("GPU %u: %s (%s), GPM %s\n", g.index, g.name.c_str(), g.uuid.c_str(), g.gpm ? "yes" : "no");
    sources.push_back(std::move(src));
  }
  if (gpus == 0) {
    std::fprintf(stderr, "metrics_bench: NVML found no GPU\n");
    return 1;
  }
  std::vector<std::unique_ptr<MetricSource>> floor_sources;
  floor_sources.push_back(std::make_unique<EmptySource>());
  Run floor = run(MetricsSampler::with_sources(hz, std::move(floor_sources), {}), seconds);
  // Read before the sources go (run() destroys the sampler, and with it them).
  std::array<NvmlSource::QueryCost, NvmlSource::q_count> costs{};
  auto sampler = MetricsSampler::with_sources(hz, std::move(sources), {});
  Run nvml = run(std::move(sampler), seconds, [&] {
    for (auto* src : nvml_sources)
      for (int q = 0; q < NvmlSource::q_count; ++q) {
        costs[q].calls += src->costs()[q].calls;
        costs[q].cpu_ns += src->costs()[q].cpu_ns;
      }
  });
  auto pct = [](const Run& r) { return 100.0 * static_cast<double>(r.stats.cpu_ns) / (r.seconds * 1e9); };
  std::printf(
      "sampler at %u Hz for %.1f s, %u GPU query rounds per tick (%u replicas); GPM every %s ms, "
      "processes every %s ms\n",
      hz, seconds, gpus, replicas,
      gpm_period_ms < 0 ? std::to_string(NvmlSource::default_period_ns(NvmlSource::q_gpm) / 1'000'000).c_str()
                        : std::to_string(gpm_period_ms).c_str(),
      proc_period_ms < 0 ? std::to_string(NvmlSource::default_period_ns(NvmlSource::q_proc_util) / 1'000'000).c_str()
                         : std::to_string(proc_period_ms).c_str());
  std::printf("floor (empty source): %llu ticks, %.3f ms CPU, %.4f%% of one core\n",
              (unsigned long long)floor.stats.ticks, floor.stats.cpu_ns / 1e6, pct(floor));
  std::printf(
      "nvml: %llu ticks (%llu late), %zu samples, %llu query errors, %.3f ms CPU, %.4f%% of one core, "
      "%.1f us per GPU per tick\n",
      (unsigned long long)nvml.stats.ticks, (unsigned long long)nvml.stats.late_ticks, nvml.samples,
      (unsigned long long)nvml.stats.query_errors, nvml.stats.cpu_ns / 1e6, pct(nvml),
      nvml.stats.ticks ? nvml.stats.cpu_ns / 1e3 / static_cast<double>(nvml.stats.ticks) / gpus : 0.0);
  std::printf("%-22s %8s %12s %10s %8s\n", "query", "calls", "cpu_ms", "us/call", "share");
  uint64_t total = 0;
  for (const auto& c : costs) total += c.cpu_ns;
  for (int q = 0; q < NvmlSource::q_count; ++q)
    if (costs[q].calls)
      std::printf("%-22s %8llu %12.3f %10.1f %7.1f%%\n", NvmlSource::query_name(static_cast<NvmlSource::Query>(q)),
                  (unsigned long long)costs[q].calls, costs[q].cpu_ns / 1e6,
                  costs[q].cpu_ns / 1e3 / static_cast<double>(costs[q].calls),
                  total ? 100.0 * static_cast<double>(costs[q].cpu_ns) / static_cast<double>(total) : 0.0);
  std::printf("target: < 0.5%% of one core for 8 GPUs at 10 Hz\n");
  return 0;
}
