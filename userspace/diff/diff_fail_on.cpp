#include "diff/diff_fail_on.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "common/split.h"

namespace gpuobs::diff {

namespace {

// A row metric: which measure, and which of its values (0: the row's main
// value, 95 / 99: that percentile of a distribution).
struct RowMetric {
  const char* name;
  Measure measure;
  int percentile;
};
constexpr RowMetric kRowMetrics[] = {
    {"launches", Measure::launches, 0},
    {"calls", Measure::calls, 0},
    {"latency", Measure::latency, 0},
    {"p50_latency", Measure::latency, 0},
    {"p95_latency", Measure::latency, 95},
    {"p99_latency", Measure::latency, 99},
    {"blocked", Measure::blocked, 0},
    {"p50_blocked", Measure::blocked, 0},
    {"p95_blocked", Measure::blocked, 95},
    {"p99_blocked", Measure::blocked, 99},
    {"gpu_time", Measure::gpu_time, 0},
    {"p50_gpu_time", Measure::gpu_time, 0},
    {"p95_gpu_time", Measure::gpu_time, 95},
    {"p99_gpu_time", Measure::gpu_time, 99},
    {"copy_bytes", Measure::copy_bytes, 0},
    {"bandwidth", Measure::copy_bandwidth, 0},
    {"alloc_peak", Measure::alloc_peak, 0},
    {"launch_gap", Measure::launch_gap, 0},
    {"p95_launch_gap", Measure::launch_gap, 95},
    {"nccl_bytes", Measure::nccl_bytes, 0},
};
constexpr const char* kCountMetrics[] = {"new_kernels", "vanished_kernels", "new_stacks", "vanished_stacks",
                                         "regressed",   "improved",         "changed"};

const RowMetric* row_metric(std::string_view name) {
  for (const auto& m : kRowMetrics)
    if (name == m.name) return &m;
  return nullptr;
}

bool is_count_metric(std::string_view name) {
  for (const char* m : kCountMetrics)
    if (name == m) return true;
  return false;
}

bool crosses(double v, Threshold::Op op, double limit) {
  switch (op) {
    case Threshold::Op::gt: return v > limit;
    case Threshold::Op::ge: return v >= limit;
    case Threshold::Op::lt: return v < limit;
    case Threshold::Op::le: return v <= limit;
  }
  return false;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string percent(double change) {
  if (std::isinf(change)) return change > 0 ? "new" : "-inf";
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f%%", change * 100);
  return b;
}

std::string row_name(const Row& r) {
  std::string s = r.key.name.empty() ? r.key.stream : r.key.name;
  if (!r.key.process.empty()) s = r.key.process + ": " + s;
  return s;
}

}  // namespace

std::string fail_on_metrics() {
  std::string out;
  for (const auto& m : kRowMetrics) out += (out.empty() ? "" : ", ") + std::string(m.name);
  out += " (relative: +10%, -5%); ";
  std::string counts;
  for (const char* m : kCountMetrics) counts += (counts.empty() ? "" : ", ") + std::string(m);
  return out + counts + " (counts)";
}

Result<std::vector<Threshold>> parse_fail_on(std::string_view spec) {
  std::vector<Threshold> out;
  for (const auto& raw : split_list(std::string(spec), ',')) {
    std::string part = trim(raw);
    if (part.empty()) continue;
    auto bad = [&](const std::string& why) {
      return make_error("--fail-on: " + part + ": " + why, "metrics: " + fail_on_metrics(), 2);
    };
    size_t op_at = part.find_first_of("<>");
    if (op_at == std::string::npos || op_at == 0) return bad("expected METRIC>VALUE, METRIC<VALUE, >= or <=");
    Threshold t;
    t.text = part;
    t.metric = trim(std::string_view(part).substr(0, op_at));
    bool eq = op_at + 1 < part.size() && part[op_at + 1] == '=';
    t.op = part[op_at] == '>' ? (eq ? Threshold::Op::ge : Threshold::Op::gt)
                              : (eq ? Threshold::Op::le : Threshold::Op::lt);
    std::string value = trim(std::string_view(part).substr(op_at + (eq ? 2 : 1)));
    t.relative = !value.empty() && value.back() == '%';
    if (t.relative) value.pop_back();
    char* end = nullptr;
    t.value = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(t.value))
      return bad("the value " + value + " is not a number");
    if (row_metric(t.metric)) {
      if (!t.relative) return bad(t.metric + " compares relative changes: give a percentage (+10%)");
      t.value /= 100;
    } else if (is_count_metric(t.metric)) {
      if (t.relative) return bad(t.metric + " is a count: give a number (new_kernels>0)");
    } else {
      return bad("unknown metric " + t.metric);
    }
    out.push_back(std::move(t));
  }
  if (out.empty())
    return make_error("--fail-on: no threshold given", "e.g. --fail-on 'p95_latency>+10%,new_kernels>0'", 2);
  return out;
}

std::vector<Breach> evaluate(const std::vector<Threshold>& ts, const DiffResult& d) {
  std::vector<Breach> out;
  for (const auto& t : ts) {
    if (!t.relative) {
      double v = 0;
      std::string names;
      auto list = [&](const std::vector<std::string>& v2) {
        for (size_t i = 0; i < v2.size() && i < 3; ++i) names += (i ? ", " : "") + v2[i];
        if (v2.size() > 3) names += ", ...";
        return double(v2.size());
      };
      if (t.metric == "new_kernels") v = list(d.new_kernels);
      else if (t.metric == "vanished_kernels") v = list(d.vanished_kernels);
      else if (t.metric == "new_stacks") v = double(d.new_stacks);
      else if (t.metric == "vanished_stacks") v = double(d.vanished_stacks);
      else if (t.metric == "regressed") v = double(d.regressed);
      else if (t.metric == "improved") v = double(d.improved);
      else if (t.metric == "changed") v = double(d.regressed + d.improved);
      if (crosses(v, t.op, t.value)) {
        char b[64];
        std::snprintf(b, sizeof b, "%.0f", v);
        out.push_back({t.text, std::string(b) + (names.empty() ? "" : " (" + names + ")")});
      }
      continue;
    }
    const RowMetric* m = row_metric(t.metric);
    // The worst row that crosses it: significant rows (and new/vanished
    // ones of counted measures) only.
    const Row* worst = nullptr;
    double worst_change = 0;
    for (const auto& r : d.rows) {
      if (r.key.measure != m->measure) continue;
      // The median's verdict; for a percentile, distributions that differ as
      // a verdict needs (q and effect) though the median may not have moved:
      // a tail alone moves between runs of one program (p95 +100% in
      // tests/integration/diff_test.cpp's unchanged pair).
      bool counts = m->percentile == 0 ? r.verdict != Verdict::same
                                       : (r.tested && r.q <= d.alpha && std::fabs(r.effect) >= d.min_effect &&
                                          (std::isnan(r.impact_ns) || d.activity_ns <= 0 ||
                                           std::fabs(r.impact_ns) >= d.min_impact * d.activity_ns));
      if (!counts) continue;
      double c = r.change;
      if (m->percentile == 95) c = r.base_p95 > 0 ? r.next_p95 / r.base_p95 - 1 : NAN;
      if (m->percentile == 99) c = r.base_p99 > 0 ? r.next_p99 / r.base_p99 - 1 : NAN;
      if (std::isnan(c) || !crosses(c, t.op, t.value)) continue;
      if (!worst || std::fabs(c) > std::fabs(worst_change)) worst = &r, worst_change = c;
    }
    if (worst) {
      char q[32];
      std::snprintf(q, sizeof q, "%.2g", worst->q);
      out.push_back({t.text, row_name(*worst) + " " + percent(worst_change) +
                                 (worst->tested ? std::string(" (q=") + q + ")" : std::string())});
    }
  }
  return out;
}

}  // namespace gpuobs::diff
