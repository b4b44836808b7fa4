// The words the enums of common/modes.h become in SQL and on the command
// line: captures already on disk and the reports' SQL hold these exact
// strings (probes.status, capture.mode), so they may never change.
#include <gtest/gtest.h>

#include "common/modes.h"

using namespace gpuobs;

TEST(Modes, WordsAreTheStoredOnesAndParseBack) {
  for (auto [v, w] : {std::pair{ProbeStatus::attached, "attached"}, std::pair{ProbeStatus::missing, "missing"},
                      std::pair{ProbeStatus::failed, "failed"}}) {
    EXPECT_EQ(to_string(v), w);
    EXPECT_EQ(parse<ProbeStatus>(w), v);
  }
  for (auto [v, w] :
       {std::pair{UnwindMode::fp, "fp"}, std::pair{UnwindMode::dwarf, "dwarf"}, std::pair{UnwindMode::bpf, "bpf"}}) {
    EXPECT_EQ(to_string(v), w);
    EXPECT_EQ(parse<UnwindMode>(w), v);
  }
  for (auto [v, w] : {std::pair{CaptureMode::record, "record"}, std::pair{CaptureMode::daemon, "daemon"}}) {
    EXPECT_EQ(to_string(v), w);
    EXPECT_EQ(parse<CaptureMode>(w), v);
  }
}

TEST(Modes, OtherWordsDoNotParse) {
  EXPECT_FALSE(parse<ProbeStatus>("Attached"));
  EXPECT_FALSE(parse<UnwindMode>(""));
  EXPECT_FALSE(parse<UnwindMode>("fp "));
  EXPECT_FALSE(parse<CaptureMode>("recorder"));
}
