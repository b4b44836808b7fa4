#include "exec/executor.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <thread>

#include "exec/spin_kernel.h"

namespace gpuobs::exec {
namespace {

uint32_t gettid_() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

// Waits until CLOCK_MONOTONIC reaches `target`: sleeps through all but the
// last 200 µs, then spins, so a host gap of a few µs stays a few µs.
void wait_until(int64_t target) {
  constexpr int64_t kSpinNs = 200'000;
  int64_t left = target - now_mono_ns();
  if (left > kSpinNs) {
    int64_t sleep = left - kSpinNs;
    timespec ts{static_cast<time_t>(sleep / 1'000'000'000), static_cast<long>(sleep % 1'000'000'000)};
    ::nanosleep(&ts, nullptr);
  }
  while (now_mono_ns() < target) {}
}

// A host function's stream time: the host thread CUDA runs it on spins.
void spin_host(void* ns) { wait_until(now_mono_ns() + *static_cast<const int64_t*>(ns)); }

// A copy's host side: HtoD and HtoA read host memory, DtoH and AtoH write
// it; the rest (DtoD, arrays, peer, unified "default") run device to device.
enum class CopyWay : uint8_t { to_device, to_host, on_device };
CopyWay copy_way(const std::string& dir) {
  if (dir == "HtoD" || dir == "HtoA") return CopyWay::to_device;
  if (dir == "DtoH" || dir == "AtoH") return CopyWay::to_host;
  return CopyWay::on_device;
}
bool uses_host(const std::string& dir) { return copy_way(dir) != CopyWay::on_device; }

}  // namespace

int64_t now_mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

uint64_t Calibration::cycles_for(int64_t ns) const {
  double c = (static_cast<double>(ns) - fixed_ns) / ns_per_cycle;
  return c <= 0 ? 0 : static_cast<uint64_t>(std::llround(c));
}

std::string ProcessReport::json() const {
  nlohmann::ordered_json j{{"process_id", process_id},
                           {"pid", pid},
                           {"t0_mono_ns", t0_mono_ns},
                           {"issued_mono_ns", issued_mono_ns},
                           {"end_mono_ns", end_mono_ns},
                           {"calibration",
                            {{"measured", calibration.measured},
                             {"source", calibration.source},
                             {"ns_per_cycle", calibration.ns_per_cycle},
                             {"fixed_ns", calibration.fixed_ns}}}};
  auto& s = j["streams"] = nlohmann::ordered_json::array();
  for (const auto& x : streams) s.push_back({{"id", x.id}, {"handle", x.handle}, {"tid", x.tid}});
  auto& t = j["threads"] = nlohmann::ordered_json::array();
  for (const auto& x : threads) t.push_back({{"id", x.id}, {"tid", x.tid}});
  return j.dump();
}

Executor::Executor(const CudaDriver& cuda, const ScheduleFile& schedule, int64_t process_id)
    : cu_(cuda), sched_(schedule), process_id_(process_id) {
  report_.process_id = process_id;
  report_.pid = static_cast<uint32_t>(::getpid());
  position_.assign(sched_.steps.size(), -1);
  for (const Step& s : sched_.steps)
    if (sched_.threads[s.thread].process_id == process_id_) {
      position_[s.index] = static_cast<int64_t>(order_.size());
      order_.push_back(s.index);
    }
}

bool Executor::check(CUresult r, const char* call, std::string& why) const {
  if (r == 0) return true;
  why = std::string(call) + " failed: " + cu_.error_text(r);
  return false;
}

bool Executor::init(std::string& why) {
  CUdevice dev = 0;
  if (!check(cu_.cuDeviceGet(&dev, 0), "cuDeviceGet", why) ||
      !check(cu_.cuDevicePrimaryCtxRetain(&ctx_, dev), "cuDevicePrimaryCtxRetain", why) ||
      !check(cu_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent", why) ||
      !check(cu_.cuModuleLoadData(&module_, kSpinPtx), "cuModuleLoadData (the spin kernel)", why) ||
      !check(cu_.cuModuleGetFunction(&spin_, module_, kSpinKernelName), "cuModuleGetFunction", why))
    return false;
  streams_.assign(sched_.streams.size(), nullptr);
  for (const Stream& s : sched_.streams) {
    if (s.process_id != process_id_) continue;
    ProcessReport::StreamInfo info{s.id, 0, 0};
    if (s.kind == "legacy") {
      streams_[s.id] = nullptr;
    } else if (s.kind == "per_thread") {
      streams_[s.id] = kPerThreadStream;
      info.handle = 0x2;
    } else {  // created, or used but never seen created: a stream of its own
      unsigned flags = s.non_blocking ? kStreamNonBlocking : 0;
      if (!check(cu_.cuStreamCreateWithPriority(&streams_[s.id], flags, s.priority), "cuStreamCreateWithPriority", why))
        return false;
      info.handle = reinterpret_cast<uintptr_t>(streams_[s.id]);
    }
    report_.streams.push_back(info);
  }
  events_.assign(static_cast<size_t>(sched_.events), nullptr);
  std::vector<bool> used(events_.size(), false);
  uint64_t dev_bytes = 0, pinned_bytes = 0, pageable_bytes = 0;
  for (int64_t i : order_) {
    const Step& s = sched_.steps[i];
    if (s.event >= 0) used[s.event] = true;
    if (s.kind != Kind::copy && s.kind != Kind::memset) continue;
    dev_bytes = std::max(dev_bytes, s.bytes);
    if (s.kind == Kind::copy && uses_host(s.direction))
      (s.async ? pinned_bytes : pageable_bytes) = std::max(s.async ? pinned_bytes : pageable_bytes, s.bytes);
  }
  for (size_t e = 0; e < events_.size(); ++e)
    if (used[e] && !check(cu_.cuEventCreate(&events_[e], kEventDisableTiming), "cuEventCreate", why)) return false;
  // Real sizes: a device pair for device copies and memsets, pinned host
  // memory for async copies (as an async copy needs to be async), pageable
  // for synchronous ones; touched once so the first copy pays no page faults.
  if (dev_bytes && (!check(cu_.cuMemAlloc(&dev_a_, dev_bytes), "cuMemAlloc", why) ||
                    !check(cu_.cuMemAlloc(&dev_b_, dev_bytes), "cuMemAlloc", why)))
    return false;
  if (pinned_bytes && !check(cu_.cuMemAllocHost(&pinned_, pinned_bytes), "cuMemAllocHost", why)) return false;
  pageable_.assign(pageable_bytes, 1);
  return true;
}

bool Executor::calibrate(std::string& why) {
  if (!cu_.cuEventElapsedTime) return true;  // the defaults, reported as not measured
  Handle s = nullptr, a = nullptr, b = nullptr;
  if (!check(cu_.cuStreamCreate(&s, kStreamNonBlocking), "cuStreamCreate", why) ||
      !check(cu_.cuEventCreate(&a, 0), "cuEventCreate", why) || !check(cu_.cuEventCreate(&b, 0), "cuEventCreate", why))
    return false;
  // Back-to-back kernels of `cycles` between two events: ns per kernel.
  auto per_kernel = [&](uint64_t cycles, int n, double& ns) {
    void* args[] = {&cycles};
    if (!check(cu_.cuEventRecord(a, s), "cuEventRecord", why)) return false;
    for (int i = 0; i < n; ++i)
      if (!check(cu_.cuLaunchKernel(spin_, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr), "cuLaunchKernel", why)) return false;
    float ms = 0;
    if (!check(cu_.cuEventRecord(b, s), "cuEventRecord", why) ||
        !check(cu_.cuEventSynchronize(b), "cuEventSynchronize", why) ||
        !check(cu_.cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime", why))
      return false;
    ns = static_cast<double>(ms) * 1e6 / n;
    return true;
  };
  double warm = 0, fixed = 0, big = 0;
  constexpr uint64_t kBig = 2'000'000;  // ~1 ms at H100 clocks: event resolution (0.5 µs) is far below it
  if (!per_kernel(kBig, 3, warm) || !per_kernel(0, 200, fixed) || !per_kernel(kBig, 10, big)) return false;
  if (big <= fixed) return true;  // a driver whose events do not time: keep the defaults
  report_.calibration.measured = true;
  report_.calibration.source = "events";
  report_.calibration.fixed_ns = fixed;
  report_.calibration.ns_per_cycle = (big - fixed) / static_cast<double>(kBig);
  return true;
}

bool Executor::calibration_sequence(std::string& json, std::string& why) {
  Handle s = nullptr;
  if (!check(cu_.cuStreamCreate(&s, kStreamNonBlocking), "cuStreamCreate", why)) return false;
  // 0 to ~1 ms at H100 clocks: the lengths of real kernels, each often enough
  // that a stray sample does not move the fit.
  const std::vector<std::pair<uint64_t, int>> seq{{0, 40},     {1000, 40},   {4000, 40},   {16000, 40},
                                                  {64000, 30}, {256000, 20}, {1000000, 10}};
  nlohmann::json j = nlohmann::json::array();
  for (auto [cycles, n] : seq) {
    for (int i = 0; i < n; ++i) {
      uint64_t c = cycles;
      void* args[] = {&c};
      if (!check(cu_.cuLaunchKernel(spin_, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr), "cuLaunchKernel", why)) return false;
    }
    j.push_back({cycles, n});
  }
  if (!check(cu_.cuStreamSynchronize(s), "cuStreamSynchronize", why)) return false;
  json = j.dump();
  return true;
}

bool Executor::issue(const Step& s, std::string& why) {
  Handle st = s.stream >= 0 ? streams_[s.stream] : nullptr;
  Handle ev = s.event >= 0 ? events_[s.event] : nullptr;
  switch (s.kind) {
    case Kind::kernel:
    case Kind::graph: {  // a graph: one piece of work of its measured span
      uint64_t cycles = report_.calibration.cycles_for(s.gpu_ns);
      void* args[] = {&cycles};
      return check(cu_.cuLaunchKernel(spin_, 1, 1, 1, 1, 1, 1, 0, st, args, nullptr), "cuLaunchKernel", why);
    }
    case Kind::host_func:
      return check(cu_.cuLaunchHostFunc(st, spin_host, const_cast<int64_t*>(&s.gpu_ns)), "cuLaunchHostFunc", why);
    case Kind::copy: {
      size_t n = s.bytes;
      CopyWay way = copy_way(s.direction);
      if (way == CopyWay::to_device)
        return s.async ? check(cu_.cuMemcpyHtoDAsync(dev_a_, pinned_, n, st), "cuMemcpyHtoDAsync", why)
                       : check(cu_.cuMemcpyHtoD(dev_a_, pageable_.data(), n), "cuMemcpyHtoD", why);
      if (way == CopyWay::to_host)
        return s.async ? check(cu_.cuMemcpyDtoHAsync(pinned_, dev_a_, n, st), "cuMemcpyDtoHAsync", why)
                       : check(cu_.cuMemcpyDtoH(pageable_.data(), dev_a_, n), "cuMemcpyDtoH", why);
      return s.async ? check(cu_.cuMemcpyDtoDAsync(dev_b_, dev_a_, n, st), "cuMemcpyDtoDAsync", why)
                     : check(cu_.cuMemcpyDtoD(dev_b_, dev_a_, n), "cuMemcpyDtoD", why);
    }
    case Kind::memset: return check(cu_.cuMemsetD8Async(dev_a_, 0, s.bytes, st), "cuMemsetD8Async", why);
    case Kind::event_record: return check(cu_.cuEventRecord(ev, st), "cuEventRecord", why);
    case Kind::event_wait: return check(cu_.cuStreamWaitEvent(st, ev, 0), "cuStreamWaitEvent", why);
    case Kind::stream_sync: return check(cu_.cuStreamSynchronize(st), "cuStreamSynchronize", why);
    case Kind::event_sync: return check(cu_.cuEventSynchronize(ev), "cuEventSynchronize", why);
    case Kind::context_sync: return check(cu_.cuCtxSynchronize(), "cuCtxSynchronize", why);
  }
  why = "unknown step kind";
  return false;
}

// One captured thread: its first step at t0 + its entry, each later one its
// gap after the previous returned, and never before every earlier step of
// the process has been issued (the capture's order across threads).
void Executor::replay_thread(int32_t thread, int64_t t0, std::string& why) {
  if (!check(cu_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent", why)) {
    failed_ = true;
    return;
  }
  bool first = true;
  // The gap counts from where the capture measured it: the previous call's
  // return, or its entry when the capture has no return for it (a launch is
  // probed at entry only: its gap is entry to entry, the call's own time in it).
  int64_t prev_from = t0;
  for (int64_t i : order_) {
    const Step& s = sched_.steps[i];
    if (s.thread != thread) continue;
    // A thread's first call at its entry time (scaled as the gaps were), or at once without host gaps.
    int64_t first_at =
        sched_.no_host_gaps ? t0 : t0 + static_cast<int64_t>(static_cast<double>(s.at_ns) / sched_.speed);
    wait_until(first ? first_at : prev_from + s.gap_ns);
    first = false;
    int64_t pos = position_[i];
    for (int spins = 0; next_.load(std::memory_order_acquire) != pos; ++spins) {
      if (failed_.load(std::memory_order_relaxed)) return;
      if (spins > 64) sched_yield();  // fewer cores than replay threads: let the one whose turn it is run
    }
    next_.store(pos + 1, std::memory_order_release);  // at entry: a blocking sync must not hold back the others
    int64_t entry = now_mono_ns();
    if (!issue(s, why)) {
      why = "step " + std::to_string(s.index) + ": " + why;
      failed_ = true;
      return;
    }
    prev_from = s.host_ns > 0 ? now_mono_ns() : entry;
  }
}

bool Executor::run(int64_t t0, std::string& why) {
  report_.t0_mono_ns = t0;
  std::vector<int32_t> threads;
  for (const Thread& t : sched_.threads)
    if (t.process_id == process_id_) threads.push_back(t.id);
  std::vector<std::string> errors(threads.size());
  std::vector<uint32_t> tids(threads.size(), 0);
  std::vector<std::thread> pool;
  pool.reserve(threads.size());
  for (size_t k = 0; k < threads.size(); ++k)
    pool.emplace_back([&, k] {
      tids[k] = gettid_();
      replay_thread(threads[k], t0, errors[k]);
    });
  for (auto& t : pool) t.join();
  for (size_t k = 0; k < threads.size(); ++k) {
    report_.threads.push_back({threads[k], tids[k]});
    if (!errors[k].empty() && why.empty()) why = errors[k];
  }
  if (failed_) return false;
  report_.issued_mono_ns = now_mono_ns();
  for (auto& info : report_.streams) {  // a per-thread stream is its issuing thread's
    const Stream& s = sched_.streams[info.id];
    if (s.kind != "per_thread") continue;
    for (int64_t i : order_)
      if (sched_.steps[i].stream == info.id) {
        for (size_t k = 0; k < threads.size(); ++k)
          if (threads[k] == sched_.steps[i].thread) info.tid = tids[k];
        break;
      }
  }
  if (!check(cu_.cuCtxSynchronize(), "cuCtxSynchronize", why)) return false;
  report_.end_mono_ns = now_mono_ns();
  return true;
}

}  // namespace gpuobs::exec
