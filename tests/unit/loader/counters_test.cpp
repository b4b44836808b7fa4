// Every BPF counter (GPUOBS_CNT_* in bpf/events.h) has a name in the C++
// table (loader/engine.cpp: counter_name), so it reaches the capture's
// counters table and `gpuobs report capture`. The header is read as text: a
// counter added there without a name, or without raising GPUOBS_CNT__COUNT,
// fails here. (tests/integration/counters_report_test.cpp checks a real
// capture's report.)
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "events.h"
#include "loader/engine.h"

using namespace gpuobs;

namespace {

// GPUOBS_CNT_<NAME> -> index, for every counter defined in bpf/events.h.
std::map<std::string, int> counters_in_header() {
  std::ifstream in(std::string(GPUOBS_SOURCE_DIR) + "/bpf/events.h");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  std::map<std::string, int> out;
  std::regex def(R"(#define\s+GPUOBS_CNT_(\w+)\s+(\d+))");
  for (std::sregex_iterator it(text.begin(), text.end(), def), end; it != end; ++it)
    if ((*it)[1] != "_COUNT") out[(*it)[1]] = std::stoi((*it)[2]);
  return out;
}

}  // namespace

TEST(Counters, EveryCounterInTheHeaderIsCountedAndNamed) {
  auto defs = counters_in_header();
  ASSERT_FALSE(defs.empty()) << "no GPUOBS_CNT_* found in " << GPUOBS_SOURCE_DIR << "/bpf/events.h";
  std::set<int> indexes;
  std::set<std::string> names;
  for (const auto& [def, idx] : defs) {
    EXPECT_TRUE(indexes.insert(idx).second) << "GPUOBS_CNT_" << def << ": index " << idx << " used twice";
    EXPECT_LT(idx, GPUOBS_CNT__COUNT) << "GPUOBS_CNT_" << def << " is not below GPUOBS_CNT__COUNT: never read";
    std::string name = counter_name(idx);
    EXPECT_NE(name, "unknown") << "GPUOBS_CNT_" << def << " (" << idx << ") has no name in counter_name()";
    EXPECT_TRUE(names.insert(name).second) << "GPUOBS_CNT_" << def << ": name " << name << " used twice";
  }
  // Indexes 0 .. COUNT-1, no gaps: the loader reads exactly these.
  EXPECT_EQ(defs.size(), static_cast<size_t>(GPUOBS_CNT__COUNT));
  if (!indexes.empty()) { EXPECT_EQ(*indexes.rbegin(), GPUOBS_CNT__COUNT - 1); }
}

TEST(Counters, AnIndexWithoutACounterIsUnknown) {
  // The control: the check above can see a missing name.
  EXPECT_STREQ(counter_name(GPUOBS_CNT__COUNT), "unknown");
  EXPECT_STREQ(counter_name(-1), "unknown");
}
