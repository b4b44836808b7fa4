// `gpuobs replay FILE`: the command a user runs, on a capture with known truth.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <cstdio>

#include "replay_capture.h"
#include "store/db.h"
#include "test_util.h"

using gpuobs::testing::ReplayCapture;

namespace {

// Runs the gpuobs binary; returns (exit status, stdout + stderr).
std::pair<int, std::string> run_gpuobs(const std::string& args) {
  return gpuobs::testing::run_output(std::string(GPUOBS_BIN) + " " + args);
}

void buggy_program(ReplayCapture& c) {
  c.stream_create(10, 0xA);
  c.event_create(20, 0xE1);
  c.launch(100, 0xA, 1);
  c.call(110, "cuStreamWaitEvent", {0xA, 0xE1, 0}, 0, 1, 0, 2);  // never recorded
  c.call(120, "cuStreamSynchronize", {0xA}, 0, 30, 0, 3);
  c.launch(200, 0xA, 1);
}

}  // namespace

TEST(ReplayCli, WritesTablesAndPrintsSummary) {
  ReplayCapture c;
  buggy_program(c);
  const std::string& file = c.finish(1000);
  auto [rc, out] = run_gpuobs("replay " + file);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("wait_unrecorded_event"), std::string::npos) << out;
  EXPECT_NE(out.find("never recorded"), std::string::npos) << out;
  auto db = gpuobs::Db::open(file, SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(*db->scalar("SELECT count(*) FROM replay_ops"), 3);
  EXPECT_EQ(*db->scalar("SELECT count(*) FROM replay_ops WHERE latest_end_ns IS NULL"), 1);
  EXPECT_EQ(*db->scalar("SELECT count(*) FROM replay_hazards WHERE kind = 'wait_unrecorded_event' AND stack_id = 2"),
            1);
  EXPECT_EQ(*db->scalar("SELECT blocked_ns FROM replay_observations WHERE kind = 'stream_sync'"), 30);
  EXPECT_EQ(*db->scalar("SELECT unproven_ops FROM replay_runs"), 1);
}

TEST(ReplayCli, JsonSummaryAndNoWrite) {
  ReplayCapture c;
  buggy_program(c);
  const std::string& file = c.finish(1000);
  auto [rc, out] = run_gpuobs("replay --no-write --format json " + file);
  ASSERT_EQ(rc, 0) << out;
  auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["queues"].size(), 1u);
  EXPECT_EQ(j["queues"][0]["ops"], 3);
  EXPECT_EQ(j["queues"][0]["max_depth"], 2);
  EXPECT_EQ(j["never_proven"], 1);
  EXPECT_EQ(j["hazards"].size(), 1u);
  EXPECT_EQ(j["hazards"][0]["kind"], "wait_unrecorded_event");
  // --no-write left the capture's schema as it was: no replay rows.
  auto db = gpuobs::Db::open(file, SQLITE_OPEN_READONLY);
  EXPECT_EQ(*db->scalar("SELECT count(*) FROM replay_ops"), 0);
}

// --format csv: each summary table headed by its title, CSV under it (issue 20).
TEST(ReplayCli, CsvSummary) {
  ReplayCapture c;
  buggy_program(c);
  const std::string& file = c.finish(1000);
  auto [rc, out] = run_gpuobs("replay --no-write --format csv " + file);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out.rfind("== ", 0), 0u) << out;
  EXPECT_NE(out.find("wait_unrecorded_event"), std::string::npos) << out;
  EXPECT_EQ(out.find("---"), std::string::npos) << "a table, not CSV: " << out;
}

TEST(ReplayCli, BadInputIsAClearError) {
  auto [rc, out] = run_gpuobs("replay /nonexistent/x.gpuobs");
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("no such file"), std::string::npos) << out;
  ReplayCapture c;
  const std::string& file = c.finish(1000);
  auto [rc2, out2] = run_gpuobs("replay --format xml " + file);
  EXPECT_EQ(rc2, 2) << out2;
}

// The replay reports read the tables `gpuobs replay` wrote.
TEST(ReplayCli, ReportsOverTheReplayTables) {
  ReplayCapture c;
  buggy_program(c);
  const std::string& file = c.finish(1000);
  ASSERT_EQ(run_gpuobs("replay " + file).first, 0);
  auto report = [&](const std::string& name) {
    auto [rc, out] = run_gpuobs("report " + name + " " + file + " --format json");
    EXPECT_EQ(rc, 0) << out;
    return nlohmann::json::parse(out);
  };
  auto blocked = report("replay_blocked");
  ASSERT_EQ(blocked.size(), 1u) << blocked.dump();
  EXPECT_EQ(blocked[0]["tid"], 100);
  EXPECT_EQ(blocked[0]["kind"], "stream_sync");
  EXPECT_EQ(blocked[0]["target"], "stream#1 0xa");
  EXPECT_EQ(blocked[0]["blocked_ns"], 30);
  EXPECT_EQ(blocked[0]["ops_proven"], 2);
  auto queues = report("replay_queues");
  ASSERT_EQ(queues.size(), 1u);
  EXPECT_EQ(queues[0]["ops"], 3);
  EXPECT_EQ(queues[0]["max_depth"], 2);
  EXPECT_EQ(queues[0]["never_proven"], 1);
  EXPECT_EQ(queues[0]["deps_in"], 0);
  auto hazards = report("replay_hazards");
  ASSERT_EQ(hazards.size(), 1u);
  EXPECT_EQ(hazards[0]["kind"], "wait_unrecorded_event");
  EXPECT_EQ(hazards[0]["op"], 2);
  EXPECT_EQ(hazards[0]["api"], "cuStreamWaitEvent");
  EXPECT_EQ(hazards[0]["stack"], "?");  // one frame in a pseudo-module: no symbol
}
