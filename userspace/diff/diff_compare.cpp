#include "diff/diff_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpuobs::diff {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::regressed: return "regressed";
    case Verdict::improved: return "improved";
    case Verdict::new_key: return "new";
    case Verdict::vanished: return "vanished";
    case Verdict::same: return "same";
  }
  return "?";
}

std::string unit_of(Measure m, Per per) {
  std::string per_unit = per == Per::run ? "per run" : per == Per::second ? "per s" : "per step";
  switch (m) {
    case Measure::launches:
    case Measure::calls: return per_unit;
    case Measure::copy_bytes:
    case Measure::nccl_bytes: return "bytes " + per_unit;
    case Measure::alloc_peak: return "bytes";
    case Measure::copy_bandwidth: return "bytes/s (median)";
    default: return "ns (median)";
  }
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool counted(Measure m) {
  return m == Measure::launches || m == Measure::calls || m == Measure::copy_bytes || m == Measure::nccl_bytes ||
         m == Measure::alloc_peak;
}

double rel_change(double base, double next) {
  if (base == 0) return next == 0 ? 0 : kInf;
  return next / base - 1;
}

struct Exposure {
  double base, next;
};

void fill_values(Row& r, const Series* b, const Series* n, Exposure e) {
  static const Series empty;
  const Series& sb = b ? *b : empty;
  const Series& sn = n ? *n : empty;
  r.base_n = sb.count;
  r.next_n = sn.count;
  const Measure m = r.key.measure;
  r.base_p95 = r.next_p95 = r.base_p99 = r.next_p99 = kNaN;
  r.impact_ns = kNaN;
  if (m == Measure::launches || m == Measure::calls) {
    r.base = double(sb.count) / e.base;
    r.next = double(sn.count) / e.next;
    auto t = rate_test(sb.count, e.base, sn.count, e.next);
    r.tested = true;
    r.p = t.p;
    r.effect = t.effect;
  } else if (m == Measure::alloc_peak) {
    r.base = sb.peak;
    r.next = sn.peak;
    r.effect = sb.peak > 0 ? sn.peak / sb.peak : kInf;
  } else if (m == Measure::copy_bytes || m == Measure::nccl_bytes) {
    // Bytes per unit move when the count or the sizes do: both tested, the
    // smaller p doubled (Bonferroni over the two).
    r.base = sb.total / e.base;
    r.next = sn.total / e.next;
    auto t = rate_test(sb.count, e.base, sn.count, e.next);
    r.p = t.p;
    r.effect = r.base > 0 ? r.next / r.base : kInf;
    if (auto u = mann_whitney(sb.samples.values(), sn.samples.values())) r.p = std::min(r.p, u->p);
    r.p = std::min(1.0, 2 * r.p);
    r.tested = true;
  } else {
    const auto& vb = sb.samples.values();
    const auto& vn = sn.samples.values();
    r.base = vb.empty() ? kNaN : quantile(vb, 0.5);
    r.next = vn.empty() ? kNaN : quantile(vn, 0.5);
    r.base_p95 = vb.empty() ? kNaN : quantile(vb, 0.95);
    r.next_p95 = vn.empty() ? kNaN : quantile(vn, 0.95);
    r.base_p99 = vb.empty() ? kNaN : quantile(vb, 0.99);
    r.next_p99 = vn.empty() ? kNaN : quantile(vn, 0.99);
    if (auto u = mann_whitney(vb, vn)) {
      r.tested = true;
      r.p = u->p;
      r.effect = u->effect;
    }
    // The host or GPU time this series spent, per unit, on each side.
    if (m != Measure::copy_bandwidth) r.impact_ns = sn.total / e.next - sb.total / e.base;
  }
  r.change = (m == Measure::launches || m == Measure::calls || m == Measure::copy_bytes || m == Measure::nccl_bytes ||
              m == Measure::alloc_peak || !std::isnan(r.base))
                 ? rel_change(r.base, r.next)
                 : kNaN;
  r.stack_text = !sn.stack_text.empty() ? sn.stack_text : sb.stack_text;
}

// activity_ns: the longer side's activity time per unit (0: unknown).
bool significant(const Row& r, const CompareOptions& o, double activity_ns) {
  if (r.key.measure == Measure::alloc_peak) return std::fabs(r.change) >= o.min_change && r.base != r.next;
  if (!r.tested || r.q > o.alpha) return false;
  if (std::isnan(r.change) || std::fabs(r.change) < o.min_change) return false;
  if (!std::isnan(r.impact_ns) && activity_ns > 0 && std::fabs(r.impact_ns) < o.min_impact * activity_ns) return false;
  if (is_distribution(r.key.measure) && r.key.measure != Measure::copy_bytes && r.key.measure != Measure::nccl_bytes &&
      std::fabs(r.effect) < o.min_effect)
    return false;
  return true;
}

template <class Set>
std::vector<std::string> minus(const Set& a, const Set& b) {
  std::vector<std::string> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

void add_notes(const Side& base, const Side& next, DiffResult& d) {
  auto join = [](const std::set<std::string>& s) {
    std::string out;
    for (const auto& v : s) out += (out.empty() ? "" : ", ") + v;
    return out;
  };
  if (base.info.hosts != next.info.hosts)
    d.notes.push_back("the captures come from different hosts (base: " + join(base.info.hosts) +
                      "; new: " + join(next.info.hosts) + "): differences may be the machines'");
  if (base.info.min_schema != next.info.min_schema || base.info.max_schema != next.info.max_schema)
    d.notes.push_back("schema versions differ (base " + std::to_string(base.info.min_schema) + ".." +
                      std::to_string(base.info.max_schema) + ", new " + std::to_string(next.info.min_schema) + ".." +
                      std::to_string(next.info.max_schema) +
                      "): rows are compared through the documented views both have; what only the newer "
                      "captures record (collectives 17, GPU times 20) is compared only where both have it");
  if (base.info.unwinds != next.info.unwinds && !base.info.unwinds.empty() && !next.info.unwinds.empty())
    d.notes.push_back("the stacks were unwound differently (base: " + join(base.info.unwinds) +
                      "; new: " + join(next.info.unwinds) + "): rows keyed by stack may not meet; try --no-stacks");
  if (base.info.segments != next.info.segments)
    d.notes.push_back(std::string("only the ") + (base.info.segments ? "base" : "new side") +
                      " is gpuobsd segments, whose memory counts start at each segment: alloc_peak is not compared");
  if ((base.info.gpu_timed == 0) != (next.info.gpu_timed == 0))
    d.notes.push_back(std::string("GPU times were measured (record --gpu-time) only in the ") +
                      (base.info.gpu_timed ? "base" : "new") + " capture: gpu_time rows there have no counterpart");
}

}  // namespace

Result<DiffResult> compare(const Side& base, const Side& next, const CompareOptions& o) {
  if (base.info.events == 0)
    return make_error("the base has no launches or API calls in its window",
                      "check the window (--base-since/--base-until) and the filters; gpuobs report capture FILE", 2);
  if (next.info.events == 0)
    return make_error("the new side has no launches or API calls in its window",
                      "check the window (--since/--until) and the filters; gpuobs report capture FILE", 2);
  DiffResult d;
  Exposure e{1, 1};
  if (o.per == Per::second) e = {base.info.seconds, next.info.seconds};
  if (o.per == Per::step) {
    if (base.info.steps == 0 || next.info.steps == 0)
      return make_error(std::string("the step marker was not seen in the ") + (base.info.steps ? "new side" : "base"),
                        "--step-kernel/--step-api name a kernel or API called once per step, exactly as "
                        "kern_sum/api_sum print it",
                        2);
    e = {double(base.info.steps), double(next.info.steps)};
  }
  if (e.base <= 0 || e.next <= 0) return make_error("a window has no length: cannot count per second", "", 2);
  d.alpha = o.alpha;
  d.min_effect = o.min_effect;
  d.min_impact = o.min_impact;
  d.base_units = e.base;
  d.next_units = e.next;
  add_notes(base, next, d);

  // Every key of either side.
  auto ib = base.series.begin(), in = next.series.begin();
  while (ib != base.series.end() || in != next.series.end()) {
    const Series *sb = nullptr, *sn = nullptr;
    Key key;
    if (in == next.series.end() || (ib != base.series.end() && ib->first < in->first)) {
      key = ib->first, sb = &ib->second, ++ib;
    } else if (ib == base.series.end() || in->first < ib->first) {
      key = in->first, sn = &in->second, ++in;
    } else {
      key = ib->first, sb = &ib->second, sn = &in->second, ++ib, ++in;
    }
    // A key on one side only is a new or vanished row where it is counted;
    // its distributions (latency of a new call...) have nothing to meet.
    if ((!sb || !sn) && !counted(key.measure)) continue;
    // A segment's live memory counts from the segment's start (what was
    // allocated before it is not in it): its peaks meet only a segment's.
    if (key.measure == Measure::alloc_peak && base.info.segments != next.info.segments) continue;
    Row r;
    r.key = std::move(key);
    fill_values(r, sb, sn, e);
    d.rows.push_back(std::move(r));
  }
  const double activity_ns = std::max(base.info.seconds / e.base, next.info.seconds / e.next) * 1e9;
  d.activity_ns = activity_ns;
  // One adjustment over every test of this diff.
  std::vector<double> ps;
  for (const auto& r : d.rows)
    if (r.tested) ps.push_back(r.p);
  auto qs = benjamini_hochberg(ps);
  size_t qi = 0;
  for (auto& r : d.rows) {
    if (r.tested) r.q = qs[qi++];
    bool only_new = r.base_n == 0 && r.next_n > 0, only_base = r.next_n == 0 && r.base_n > 0;
    if (only_new) r.verdict = Verdict::new_key;
    else if (only_base) r.verdict = Verdict::vanished;
    else if (significant(r, o, activity_ns))
      r.verdict = ((r.next > r.base) == higher_is_worse(r.key.measure)) ? Verdict::regressed : Verdict::improved;
    d.tested += r.tested;
    d.regressed += r.verdict == Verdict::regressed;
    d.improved += r.verdict == Verdict::improved;
  }
  auto rank = [](const Row& r) { return r.verdict == Verdict::same ? 1 : 0; };
  std::stable_sort(d.rows.begin(), d.rows.end(), [&](const Row& a, const Row& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    double ia = std::isnan(a.impact_ns) ? -1 : std::fabs(a.impact_ns);
    double ib2 = std::isnan(b.impact_ns) ? -1 : std::fabs(b.impact_ns);
    if (ia != ib2) return ia > ib2;
    return a.q < b.q;
  });
  d.new_kernels = minus(next.info.kernels, base.info.kernels);
  d.vanished_kernels = minus(base.info.kernels, next.info.kernels);
  d.new_stacks = minus(next.info.stacks, base.info.stacks).size();
  d.vanished_stacks = minus(base.info.stacks, next.info.stacks).size();
  return d;
}

}  // namespace gpuobs::diff
