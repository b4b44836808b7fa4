// gpuobs diff's rows and verdicts over sides built in memory, and --fail-on.
#include <gtest/gtest.h>

#include <cmath>

#include "diff/diff_compare.h"
#include "diff/diff_fail_on.h"

using namespace gpuobs::diff;

namespace {

Side side_with(const std::string& host, int schema) {
  Side s;
  s.info.hosts = {host};
  s.info.min_schema = s.info.max_schema = schema;
  s.info.events = 1;
  s.info.seconds = 10;
  return s;
}

void add_count(Side& s, Measure m, const std::string& name, uint64_t n) {
  s.series[Key{m, "app", name, "", ""}].count = n;
}

void add_samples(Side& s, Measure m, const std::string& name, double from, double step, int n) {
  auto& ser = s.series[Key{m, "app", name, "", ""}];
  for (int i = 0; i < n; ++i) ser.samples.add(from + step * i);
  ser.samples.sort();
  ser.count = ser.samples.count();
  ser.total = ser.samples.sum();
}

const Row* find(const DiffResult& d, Measure m, const std::string& name) {
  for (const auto& r : d.rows)
    if (r.key.measure == m && r.key.name == name) return &r;
  return nullptr;
}

}  // namespace

TEST(DiffCompare, VerdictsNewVanishedRegressedSame) {
  Side base = side_with("h", 20), next = side_with("h", 20);
  base.info.seconds = next.info.seconds = 0.01;  // 10 ms of activity: the 80 us added are 0.8% of it
  add_count(base, Measure::launches, "k1", 1000);
  add_count(next, Measure::launches, "k1", 1000);
  add_count(base, Measure::launches, "gone", 50);
  add_count(next, Measure::launches, "fresh", 50);
  add_count(base, Measure::calls, "more", 1000);
  add_count(next, Measure::calls, "more", 1200);  // +20%, p ~ 1e-5
  add_samples(base, Measure::latency, "slow", 100, 1, 200);
  add_samples(next, Measure::latency, "slow", 300, 3, 200);  // 3x slower
  add_samples(base, Measure::latency, "steady", 100, 1, 200);
  add_samples(next, Measure::latency, "steady", 100.5, 1, 200);  // the same, shifted half a step
  base.info.kernels = {"k1", "gone"};
  next.info.kernels = {"k1", "fresh"};
  auto d = compare(base, next, CompareOptions{});
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(find(*d, Measure::launches, "k1")->verdict, Verdict::same);
  EXPECT_EQ(find(*d, Measure::launches, "gone")->verdict, Verdict::vanished);
  EXPECT_EQ(find(*d, Measure::launches, "fresh")->verdict, Verdict::new_key);
  const Row* more = find(*d, Measure::calls, "more");
  EXPECT_EQ(more->verdict, Verdict::regressed);
  EXPECT_NEAR(more->change, 0.2, 1e-12);
  const Row* slow = find(*d, Measure::latency, "slow");
  EXPECT_EQ(slow->verdict, Verdict::regressed);
  EXPECT_NEAR(slow->base, 199.5, 1e-9);  // median of 100..299
  EXPECT_NEAR(slow->next, 598.5, 1e-9);
  EXPECT_DOUBLE_EQ(slow->effect, 1.0);
  EXPECT_NEAR(slow->impact_ns, (300.0 + 897) / 2 * 200 - (100.0 + 299) / 2 * 200, 1e-6);
  EXPECT_EQ(find(*d, Measure::latency, "steady")->verdict, Verdict::same);
  EXPECT_EQ(d->regressed, 2u);
  EXPECT_EQ(d->new_kernels, std::vector<std::string>{"fresh"});
  EXPECT_EQ(d->vanished_kernels, std::vector<std::string>{"gone"});
  // Changed rows first, the one with the largest time impact on top.
  EXPECT_EQ(d->rows.front().key.name, "slow");
  EXPECT_EQ(d->rows.back().verdict, Verdict::same);
  EXPECT_TRUE(d->notes.empty());
}

TEST(DiffCompare, SmallChangesAndSmallEffectsAreNotChanges) {
  Side base = side_with("h", 20), next = side_with("h", 20);
  add_count(base, Measure::calls, "c", 100000);
  add_count(next, Measure::calls, "c", 105000);  // significant, but +5% < 10%
  auto d = compare(base, next, CompareOptions{});
  ASSERT_TRUE(d);
  const Row* c = find(*d, Measure::calls, "c");
  EXPECT_LT(c->q, 1e-10);
  EXPECT_EQ(c->verdict, Verdict::same);
  CompareOptions loose;
  loose.min_change = 0.01;
  EXPECT_EQ(find(*compare(base, next, loose), Measure::calls, "c")->verdict, Verdict::regressed);
}

// The H200's identical PyTorch runs: a 1 us call's median moves by half
// (delta 0.9, q 1e-70), a few hundred microseconds in a 12 s run: no change.
TEST(DiffCompare, ATimeChangeBelowTheImpactFloorIsNoChange) {
  Side base = side_with("h", 20), next = side_with("h", 20);
  base.info.seconds = next.info.seconds = 12;
  add_samples(base, Measure::latency, "cuKernelGetFunction", 1000, 1, 500);
  add_samples(next, Measure::latency, "cuKernelGetFunction", 1500, 1, 500);
  auto d = compare(base, next, CompareOptions{});
  ASSERT_TRUE(d);
  const Row* r = find(*d, Measure::latency, "cuKernelGetFunction");
  EXPECT_LT(r->q, 1e-50);
  EXPECT_DOUBLE_EQ(r->effect, 1.0);
  EXPECT_NEAR(r->impact_ns, 500 * 500.0, 1e-6);  // 0.25 ms of 12 s
  EXPECT_EQ(r->verdict, Verdict::same);
  CompareOptions no_floor;
  no_floor.min_impact = 0;
  EXPECT_EQ(find(*compare(base, next, no_floor), Measure::latency, "cuKernelGetFunction")->verdict, Verdict::regressed);
  // A percentile threshold does not fire on it either.
  EXPECT_TRUE(evaluate(*parse_fail_on("p95_latency>+10%"), *d).empty());
  EXPECT_EQ(evaluate(*parse_fail_on("p95_latency>+10%"), *compare(base, next, no_floor)).size(), 1u);
}

TEST(DiffCompare, PerSecondAndPerStep) {
  Side base = side_with("h", 20), next = side_with("h", 20);
  next.info.seconds = 20;
  add_count(base, Measure::launches, "k", 1000);
  add_count(next, Measure::launches, "k", 2000);
  CompareOptions per_run;
  EXPECT_EQ(find(*compare(base, next, per_run), Measure::launches, "k")->verdict, Verdict::regressed);
  CompareOptions per_s;
  per_s.per = Per::second;
  const Row* r = find(*compare(base, next, per_s), Measure::launches, "k");
  EXPECT_EQ(r->verdict, Verdict::same);
  EXPECT_DOUBLE_EQ(r->base, 100);
  EXPECT_DOUBLE_EQ(r->next, 100);
  CompareOptions per_step;
  per_step.per = Per::step;
  auto none = compare(base, next, per_step);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("step marker was not seen in the base"), std::string::npos);
  base.info.steps = 100;
  next.info.steps = 200;
  EXPECT_DOUBLE_EQ(find(*compare(base, next, per_step), Measure::launches, "k")->next, 10);
}

TEST(DiffCompare, EmptyWindowsAreRefusedAndDifferencesOfOriginAreSaid) {
  Side base = side_with("a", 19), next = side_with("b", 20);
  base.info.unwinds = {"fp"};
  next.info.unwinds = {"dwarf"};
  next.info.gpu_timed = 10;
  add_count(base, Measure::launches, "k", 1);
  add_count(next, Measure::launches, "k", 1);
  auto d = compare(base, next, CompareOptions{});
  ASSERT_TRUE(d);
  ASSERT_EQ(d->notes.size(), 4u);
  EXPECT_NE(d->notes[0].find("different hosts (base: a; new: b)"), std::string::npos);
  EXPECT_NE(d->notes[1].find("schema versions differ (base 19..19, new 20..20)"), std::string::npos);
  EXPECT_NE(d->notes[2].find("--no-stacks"), std::string::npos);
  EXPECT_NE(d->notes[3].find("only in the new capture"), std::string::npos);
  // A gpuobsd segment's memory counts start at the segment: no alloc_peak row against a recording.
  base.series[Key{Measure::alloc_peak, "app", "device", "", ""}].peak = 100;
  next.series[Key{Measure::alloc_peak, "app", "device", "", ""}].peak = 10;
  next.info.segments = true;
  auto seg = compare(base, next, CompareOptions{});
  ASSERT_TRUE(seg);
  EXPECT_EQ(find(*seg, Measure::alloc_peak, "device"), nullptr);
  ASSERT_EQ(seg->notes.size(), 5u);
  EXPECT_NE(seg->notes[3].find("only the new side is gpuobsd segments"), std::string::npos) << seg->notes[3];
  next.info.segments = false;
  EXPECT_NE(find(*compare(base, next, CompareOptions{}), Measure::alloc_peak, "device"), nullptr);
  next.info.events = 0;
  auto empty = compare(base, next, CompareOptions{});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().exit_code, 2);
  EXPECT_NE(empty.error().message.find("the new side has no launches or API calls"), std::string::npos);
}

TEST(DiffFailOn, ParsesAndRefuses) {
  auto t = parse_fail_on("p95_latency>+10%, new_kernels>0 ,bandwidth<=-5%");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0].metric, "p95_latency");
  EXPECT_EQ((*t)[0].op, Threshold::Op::gt);
  EXPECT_DOUBLE_EQ((*t)[0].value, 0.10);
  EXPECT_TRUE((*t)[0].relative);
  EXPECT_EQ((*t)[1].metric, "new_kernels");
  EXPECT_FALSE((*t)[1].relative);
  EXPECT_EQ((*t)[2].op, Threshold::Op::le);
  EXPECT_DOUBLE_EQ((*t)[2].value, -0.05);
  for (const char* bad : {"latency", "p95_latency>10", "new_kernels>1%", "speed>+1%", "p95_latency>abc%", ""}) {
    auto r = parse_fail_on(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().exit_code, 2);
  }
}

TEST(DiffFailOn, EvaluatesAgainstTheRows) {
  Side base = side_with("h", 20), next = side_with("h", 20);
  base.info.seconds = next.info.seconds = 0.01;
  add_samples(base, Measure::latency, "slow", 100, 1, 200);
  add_samples(next, Measure::latency, "slow", 300, 3, 200);
  base.info.kernels = {"a"};
  next.info.kernels = {"a", "b"};
  add_count(base, Measure::launches, "a", 10);
  add_count(next, Measure::launches, "a", 10);
  auto d = compare(base, next, CompareOptions{});
  ASSERT_TRUE(d);
  auto crossed = evaluate(*parse_fail_on("p50_latency>+100%,new_kernels>0,launches>+1%,regressed>1"), *d);
  ASSERT_EQ(crossed.size(), 2u);
  EXPECT_EQ(crossed[0].threshold, "p50_latency>+100%");
  EXPECT_NE(crossed[0].detail.find("app: slow +200.0%"), std::string::npos) << crossed[0].detail;
  EXPECT_EQ(crossed[1].threshold, "new_kernels>0");
  EXPECT_EQ(crossed[1].detail, "1 (b)");
  EXPECT_TRUE(evaluate(*parse_fail_on("p50_latency>+300%,p95_latency<-1%"), *d).empty());
}
