// The statistics `gpuobs diff` decides with: a bounded sample of a measure,
// its quantiles, the Mann–Whitney U test (latency-like samples), the
// conditional binomial test of two Poisson rates (counts), and the
// Benjamini–Hochberg adjustment across all the rows one diff tests.
// Pure functions over numbers: no SQLite, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gpuobs::diff {

// Every value of a measure counted and summed; at most `cap` of them kept for
// quantiles and tests (Vitter's algorithm R with a fixed seed, so one capture
// always gives the same sample). Up to the cap the sample is exact.
class Reservoir {
 public:
  explicit Reservoir(size_t cap = 20000) : cap_(cap) {}
  void add(double v);  // a value that is not finite is ignored
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  const std::vector<double>& values() const { return values_; }
  // Sorts the kept values (quantile() and the tests need them sorted).
  void sort();

 private:
  size_t cap_;
  uint64_t count_ = 0;
  double sum_ = 0;
  uint64_t rng_ = 0x9e3779b97f4a7c15ull;
  std::vector<double> values_;
  bool sorted_ = true;
};

// Linear interpolation between closest ranks (numpy's default, R type 7) of
// sorted values; q in [0, 1]. NaN when empty.
double quantile(const std::vector<double>& sorted, double q);

struct TestResult {
  double p = 1;       // two-sided p-value
  double effect = 0;  // U test: Cliff's delta (P(new > base) - P(new < base)); rate test: new rate / base rate
};

// Mann–Whitney U on two sorted samples, normal approximation with the tie
// correction and a continuity correction. nullopt below `min_n` values on
// either side (the approximation means nothing there).
std::optional<TestResult> mann_whitney(const std::vector<double>& base_sorted, const std::vector<double>& new_sorted,
                                       size_t min_n = 8);

// Counts n_base over exposure e_base and n_new over e_new (runs, seconds or
// steps): under equal rates, n_new given n = n_base + n_new is
// Binomial(n, e_new / (e_base + e_new)). Exact two-sided p up to n = 2000
// (the sum of the outcomes no likelier than the one seen), normal beyond.
// effect: the rate ratio (infinity when the base is 0 and the new is not).
TestResult rate_test(uint64_t n_base, double e_base, uint64_t n_new, double e_new);

// Benjamini–Hochberg adjusted p-values (q-values), same order as p.
std::vector<double> benjamini_hochberg(const std::vector<double>& p);

}  // namespace gpuobs::diff
