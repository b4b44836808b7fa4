#include "diff/diff_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace gpuobs::diff {

void Reservoir::add(double v) {
  if (!std::isfinite(v)) return;  // the rank merge needs an order: NaN has none
  ++count_;
  sum_ += v;
  if (values_.size() < cap_) {
    values_.push_back(v);
    sorted_ = false;
    return;
  }
  // xorshift64*: deterministic, and good enough to pick which value to keep.
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  uint64_t r = (rng_ * 0x2545F4914F6CDD1Dull) % count_;
  if (r < cap_) {
    values_[r] = v;
    sorted_ = false;
  }
}

void Reservoir::sort() {
  if (!sorted_) std::sort(values_.begin(), values_.end());
  sorted_ = true;
}

double quantile(const std::vector<double>& s, double q) {
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  double pos = std::clamp(q, 0.0, 1.0) * double(s.size() - 1);
  size_t lo = size_t(std::floor(pos));
  size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - double(lo));
}

namespace {

double two_sided_normal_p(double z) { return std::erfc(std::fabs(z) / std::sqrt(2.0)); }

}  // namespace

std::optional<TestResult> mann_whitney(const std::vector<double>& a, const std::vector<double>& b, size_t min_n) {
  const size_t n1 = a.size(), n2 = b.size();
  if (n1 < min_n || n2 < min_n) return std::nullopt;
  // Merge the two sorted samples, ranking ties by their average rank.
  double rank_sum_a = 0, tie_term = 0;
  size_t i = 0, j = 0, rank = 0;
  while (i < n1 || j < n2) {
    double v = (j >= n2 || (i < n1 && a[i] <= b[j])) ? a[i] : b[j];
    size_t ca = 0, cb = 0;
    while (i < n1 && a[i] == v) ++i, ++ca;
    while (j < n2 && b[j] == v) ++j, ++cb;
    size_t t = ca + cb;
    double avg = double(rank) + (double(t) + 1) / 2;  // ranks rank+1 .. rank+t
    rank_sum_a += avg * double(ca);
    tie_term += double(t) * double(t) * double(t) - double(t);
    rank += t;
  }
  const double N = double(n1 + n2), m1 = double(n1), m2 = double(n2);
  double u_a = rank_sum_a - m1 * (m1 + 1) / 2;  // pairs (a, b) with a > b (ties count half)
  double u_b = m1 * m2 - u_a;                   // pairs with b > a
  TestResult r;
  r.effect = (u_b - u_a) / (m1 * m2);
  double var = m1 * m2 / 12 * ((N + 1) - tie_term / (N * (N - 1)));
  if (var <= 0) {  // every value equal on both sides
    r.p = 1;
    return r;
  }
  double d = u_a - m1 * m2 / 2;
  double z = (std::fabs(d) - 0.5) / std::sqrt(var);
  r.p = z <= 0 ? 1 : two_sided_normal_p(z);
  return r;
}

TestResult rate_test(uint64_t n_base, double e_base, uint64_t n_new, double e_new) {
  TestResult r;
  double rate_base = e_base > 0 ? double(n_base) / e_base : 0;
  double rate_new = e_new > 0 ? double(n_new) / e_new : 0;
  r.effect = rate_base > 0 ? rate_new / rate_base : (rate_new > 0 ? std::numeric_limits<double>::infinity() : 1.0);
  const uint64_t n = n_base + n_new;
  if (n == 0 || e_base <= 0 || e_new <= 0) return r;
  const double pi = e_new / (e_base + e_new);
  if (n <= 2000) {
    auto log_pmf = [&](uint64_t k) {
      return std::lgamma(double(n) + 1) - std::lgamma(double(k) + 1) - std::lgamma(double(n - k) + 1) +
             double(k) * std::log(pi) + double(n - k) * std::log1p(-pi);
    };
    double seen = log_pmf(n_new), p = 0;
    for (uint64_t k = 0; k <= n; ++k) {
      double lp = log_pmf(k);
      if (lp <= seen + 1e-9) p += std::exp(lp);
    }
    r.p = std::min(1.0, p);
    return r;
  }
  double mean = double(n) * pi, sd = std::sqrt(double(n) * pi * (1 - pi));
  double z = (std::fabs(double(n_new) - mean) - 0.5) / sd;
  r.p = z <= 0 ? 1 : two_sided_normal_p(z);
  return r;
}

std::vector<double> benjamini_hochberg(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p[x] < p[y]; });
  std::vector<double> q(m);
  double running = 1;
  for (size_t k = m; k-- > 0;) {  // from the largest p down: q_(k) = min over j >= k of p_(j) m / j
    running = std::min(running, p[order[k]] * double(m) / double(k + 1));
    q[order[k]] = running;
  }
  return q;
}

}  // namespace gpuobs::diff
