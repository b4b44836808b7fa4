#include "daemon/diff_watch.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "diff/diff_compare.h"

namespace gpuobs::daemon {

void DiffWatch::start() {
  {
    std::lock_guard lk(mu_);
    state_.baseline = baseline_;
  }
  thread_ = std::thread([this] { run(); });
}

void DiffWatch::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DiffWatch::set_current(const std::string& path) {
  std::lock_guard lk(mu_);
  current_ = path;
}

DiffWatchState DiffWatch::state() const {
  std::lock_guard lk(mu_);
  return state_;
}

void DiffWatch::run() {
  std::unique_lock lk(mu_);
  while (!cv_.wait_for(lk, interval_, [&] { return stopping_; })) {
    lk.unlock();
    compare_once();
    lk.lock();
  }
}

void DiffWatch::compare_once() {
  std::string current;
  {
    std::lock_guard lk(mu_);
    current = current_;
  }
  // A comparison that could not be made shows nothing regressed: the last
  // good one's figures would otherwise stay on the gauges indefinitely.
  auto clear = [&] {
    state_.regressed = 0;
    state_.new_kernels = 0;
    state_.worst_ratio = 1;
  };
  auto fail = [&](const std::string& why) {
    std::lock_guard lk(mu_);
    ++state_.errors;
    clear();
    if (state_.last_error != why) spdlog::warn("diff: {}", why);
    state_.last_error = why;
  };
  auto stopping = [&] {
    std::lock_guard lk(mu_);
    return stopping_;
  };
  if (current.empty()) return;
  // The baseline is read again each time: it is small next to a segment,
  // and a replaced file is then picked up without a restart.
  diff::Filters f;
  auto base = diff::read_side(diff::WindowSpec{{baseline_}, -1, -1}, f);
  if (!base) return fail("baseline " + baseline_ + ": " + base.error().message);
  if (stopping()) return;  // shutting down: the daemon's exit budget is 2 s
  diff::WindowSpec w{{current}, -1, -1};
  w.last_s = window_s_;
  auto next = diff::read_side(w, f);
  if (!next) return fail("segment " + current + ": " + next.error().message);
  if (next->info.events == 0) {  // an idle GPU host: nothing to compare, and no error
    std::lock_guard lk(mu_);
    clear();
    state_.last_error.clear();
    return;
  }
  diff::CompareOptions o;
  o.per = diff::Per::second;
  auto d = diff::compare(*base, *next, o);
  if (!d) return fail(d.error().message);
  // What limits the comparison (stacks unwound differently: no row meets),
  // said once each, as the CLI prints it.
  for (const auto& n : d->notes)
    if (notes_said_.insert(n).second) spdlog::warn("diff: note: {}", n);
  double worst = 1;
  for (const auto& r : d->rows) {
    if (r.verdict != diff::Verdict::regressed) continue;
    double ratio = r.base != 0 ? r.next / r.base : NAN;
    if (std::isfinite(ratio)) worst = std::max(worst, diff::higher_is_worse(r.key.measure) ? ratio : 1 / ratio);
  }
  std::lock_guard lk(mu_);
  if (d->regressed > 0 && state_.regressed == 0)
    spdlog::warn("diff: {} series regressed against {} in the last {} s (worst {:.2f}x; gpuobs diff {} {})",
                 d->regressed, baseline_, window_s_, worst, baseline_, current);
  ++state_.comparisons;
  state_.regressed = d->regressed;
  state_.new_kernels = d->new_kernels.size();
  state_.worst_ratio = worst;
  state_.last_error.clear();
}

}  // namespace gpuobs::daemon
