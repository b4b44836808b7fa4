// The statistics gpuobs diff decides with, against values computed by hand
// (and by R's wilcox.test(exact = FALSE, correct = TRUE) and binom.test).
#include <gtest/gtest.h>

#include <cmath>

#include "diff/diff_stats.h"

using namespace gpuobs::diff;

TEST(DiffStats, MannWhitneySeparatedSamples) {
  std::vector<double> a{1, 2, 3, 4, 5, 6, 7, 8}, b{9, 10, 11, 12, 13, 14, 15, 16};
  auto r = mann_whitney(a, b);
  ASSERT_TRUE(r);
  EXPECT_NEAR(r->p, 0.000939106, 1e-8);  // R: W = 0, p-value = 0.0009391
  EXPECT_DOUBLE_EQ(r->effect, 1.0);      // every new value above every base value
  auto back = mann_whitney(b, a);
  EXPECT_NEAR(back->p, r->p, 1e-12);
  EXPECT_DOUBLE_EQ(back->effect, -1.0);
}

TEST(DiffStats, MannWhitneyTiesUseAverageRanksAndTheTieCorrection) {
  std::vector<double> a{1, 1, 2, 2, 3, 3, 4, 4, 5, 5}, b{3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
  auto r = mann_whitney(a, b);
  ASSERT_TRUE(r);
  EXPECT_NEAR(r->p, 0.0158562097, 1e-9);
  EXPECT_NEAR(r->effect, 0.64, 1e-12);
}

TEST(DiffStats, MannWhitneyEqualSamplesAndTooFewValues) {
  std::vector<double> a(20, 5.0);
  auto r = mann_whitney(a, a);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->p, 1.0);
  EXPECT_EQ(r->effect, 0.0);
  std::vector<double> few{1, 2, 3, 4, 5, 6, 7};
  EXPECT_FALSE(mann_whitney(few, a));  // 7 < 8 values: no test
}

TEST(DiffStats, RateTestExactAndNormal) {
  auto r = rate_test(10, 1, 20, 1);
  EXPECT_NEAR(r.p, 0.0987371467, 1e-9);  // R: binom.test(20, 30)
  EXPECT_DOUBLE_EQ(r.effect, 2.0);
  EXPECT_NEAR(rate_test(300, 1, 300, 1).p, 1.0, 1e-9);
  EXPECT_EQ(rate_test(0, 1, 0, 1).p, 1.0);
  // Exposures: 300 in 1 s vs 600 in 2 s is the same rate.
  EXPECT_GT(rate_test(300, 1, 600, 2).p, 0.9);
  EXPECT_DOUBLE_EQ(rate_test(300, 1, 600, 2).effect, 1.0);
  // Beyond 2000 events: the normal approximation with continuity correction.
  EXPECT_NEAR(rate_test(10000, 1, 10500, 1).p, 0.000491830, 1e-8);
  EXPECT_TRUE(std::isinf(rate_test(0, 1, 5, 1).effect));
  EXPECT_NEAR(rate_test(0, 1, 8, 1).p, 2 * std::pow(0.5, 8), 1e-12);
}

TEST(DiffStats, BenjaminiHochberg) {
  auto q = benjamini_hochberg({0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(q.size(), 4u);
  EXPECT_DOUBLE_EQ(q[0], 0.02);
  EXPECT_DOUBLE_EQ(q[1], 0.04);
  EXPECT_DOUBLE_EQ(q[2], 0.04);
  EXPECT_DOUBLE_EQ(q[3], 0.02);
  EXPECT_TRUE(benjamini_hochberg({}).empty());
}

TEST(DiffStats, QuantilesInterpolateBetweenClosestRanks) {
  std::vector<double> v{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(quantile(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile(v, 0.95), 3.85);
  EXPECT_DOUBLE_EQ(quantile(v, 0), 1);
  EXPECT_DOUBLE_EQ(quantile(v, 1), 4);
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
  EXPECT_DOUBLE_EQ(quantile(v, 1.5), 4);  // clamped
  Reservoir r;
  r.add(1);
  r.add(std::nan(""));
  r.add(INFINITY);
  EXPECT_EQ(r.count(), 1u);  // (a NaN would stall the U test's merge)
}

TEST(DiffStats, ReservoirCountsEverythingKeepsACapAndIsDeterministic) {
  Reservoir a(1000), b(1000);
  for (int i = 0; i < 100000; ++i) a.add(i), b.add(i);
  EXPECT_EQ(a.count(), 100000u);
  EXPECT_DOUBLE_EQ(a.sum(), 99999.0 * 100000 / 2);
  ASSERT_EQ(a.values().size(), 1000u);
  EXPECT_EQ(a.values(), b.values());
  a.sort();
  // A uniform sample of 0..99999: its median is near 50000.
  EXPECT_NEAR(quantile(a.values(), 0.5), 50000, 5000);
}
