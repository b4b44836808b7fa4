// The one list of gpuobsd's health fields (daemon_state/health_fields.cpp)
// and what is made from it: the status file written and read back field by
// field, an older file's missing fields at their defaults, a file without a
// required field refused, each Prometheus family exported once (diff and
// ship families only while those are on), and each one documented.
#include "daemon_state/health_fields.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "daemon_state/health_json.h"
#include "metrics_text.h"

using namespace gpuobs;

namespace {

// Every field a distinct value (n-th field: n + 1000, or "vN").
HealthSnapshot distinct_snapshot() {
  HealthSnapshot h;
  int n = 0;
  for (const HealthField& f : health_fields()) {
    ++n;
    std::visit(
        [&](auto member) {
          using T = std::remove_reference_t<decltype(h.*member)>;
          if constexpr (std::is_same_v<T, std::string>) h.*member = "v" + std::to_string(n);
          else h.*member = static_cast<T>(n) + static_cast<T>(1000);
        },
        f.member);
  }
  return h;
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(HealthFields, EveryFieldSurvivesTheStatusFile) {
  HealthSnapshot h = distinct_snapshot();
  auto back = health_from_json(nlohmann::json::parse(to_json(h).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  for (const HealthField& f : health_fields())
    std::visit([&](auto member) { EXPECT_EQ(h.*member, (*back).*member) << f.key; }, f.member);
  // Nested keys land in their objects.
  auto j = to_json(h);
  EXPECT_TRUE(j.at("diff").contains("comparisons"));
  EXPECT_TRUE(j.at("ship").contains("backlog_bytes"));
}

TEST(HealthFields, AnOlderFileKeepsDefaultsAndARequiredFieldIsNeeded) {
  auto j = to_json(distinct_snapshot());
  for (const HealthField& f : health_fields()) {
    if (f.required) continue;
    std::string key = f.key;
    if (size_t dot = key.find('.'); dot != std::string::npos) j.erase(key.substr(0, dot));
    else j.erase(key);
  }
  auto old = health_from_json(j);
  ASSERT_TRUE(old.ok()) << old.error().message;
  const HealthSnapshot defaults;
  for (const HealthField& f : health_fields())
    if (!f.required) {
      std::visit([&](auto member) { EXPECT_EQ((*old).*member, defaults.*member) << f.key; }, f.member);
    }
  EXPECT_EQ(old->diff_worst_ratio, 1.0);  // "none regressed", not 0
  auto k = to_json(distinct_snapshot());
  k.erase("events_total");
  auto bad = health_from_json(k);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("events_total"), std::string::npos) << bad.error().message;
}

TEST(HealthFields, EachFamilyExportedOnceAndOnlyWhileItsFeatureIsOn) {
  HealthSnapshot h = distinct_snapshot();
  std::set<std::string> names;
  for (const HealthField& f : health_fields()) {
    if (!f.metric) continue;
    EXPECT_TRUE(names.insert(f.metric).second) << "two fields export " << f.metric;
    EXPECT_EQ(std::string(f.metric).ends_with("_total"), std::string(f.type) == "counter") << f.metric;
    EXPECT_FALSE(std::holds_alternative<std::string HealthSnapshot::*>(f.member)) << f.metric << " is text";
    EXPECT_NE(std::string(f.help), "") << f.metric;
  }
  std::string on = render_prometheus(h);
  for (const auto& n : names) EXPECT_EQ(count_of(on, "# TYPE " + n + " "), 1) << n;
  EXPECT_NE(on.find("gpuobs_ship_rows_total 10"), std::string::npos) << on;  // its distinct value
  h.diff_baseline.clear();
  h.ship_url.clear();
  std::string off = render_prometheus(h);
  for (const HealthField& f : health_fields()) {
    if (!f.metric) continue;
    int want = f.when == HealthField::When::always ? 1 : 0;
    EXPECT_EQ(count_of(off, std::string("# TYPE ") + f.metric + " "), want) << f.metric;
  }
}

TEST(HealthFields, EveryFamilyIsInTheOperationsGuide) {
  std::ifstream in(std::string(GPUOBS_SOURCE_DIR) + "/docs/operations.md");
  std::stringstream doc;
  doc << in.rdbuf();
  for (const HealthField& f : health_fields())
    if (f.metric) { EXPECT_NE(doc.str().find(std::string("`") + f.metric + "`"), std::string::npos) << f.metric; }
}
