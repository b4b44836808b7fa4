// Every BPF counter reaches `gpuobs report capture` of a real capture, under
// the name the loader gives it (tests/unit/loader/counters_test.cpp checks that
// every GPUOBS_CNT_* has one). Root, real BPF.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "events.h"
#include "loader/engine.h"
#include "run_util.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

TEST(CountersReport, EveryBpfCounterIsInReportCapture) {
  TempDir dir;
  std::string out = dir.file("cap.gpuobs");
  std::string cmd = std::string(GPUOBS_BIN) + " record -o " + out + " --libcuda " + FAKE_LIBCUDA + " -- " +
                    LAUNCH_WORKLOAD + " --lib " + FAKE_LIBCUDA + " --threads 1 --launches 10 >/dev/null";
  ASSERT_EQ(run(cmd), 0) << cmd;
  auto [rc, report] = run_output(std::string(GPUOBS_BIN) + " report capture --format csv " + out);
  ASSERT_EQ(rc, 0) << report;
  std::set<std::string> keys;
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) keys.insert(line.substr(0, line.find(',')));
  for (int i = 0; i < GPUOBS_CNT__COUNT; ++i)
    EXPECT_TRUE(keys.count(std::string("counter.") + counter_name(i)))
        << "counter " << i << " (" << counter_name(i) << ") is not in report capture:\n"
        << report;
  // The workload's launches are counted under their name, so the rows carry values, not just names.
  EXPECT_NE(report.find("counter.submitted_launch,10\n"), std::string::npos) << report;
}
