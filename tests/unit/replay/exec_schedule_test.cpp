// The schedule `gpuobs replay --schedule-out` writes (issue 41), on a capture
// whose truth is worked out by hand below: two created streams (one
// non-blocking with a priority), a cross-stream event wait, an async copy, a
// graph launch, a stream sync and a context sync; one launch measured with
// --gpu-time. Every step's order, stream, event, gap and GPU length is
// asserted, and each "what if" edit.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "replay/exec_schedule.h"
#include "replay_capture.h"
#include "store/schema.h"

using namespace gpuobs;
using gpuobs::testing::ReplayCapture;
using Strs = std::vector<std::string>;

namespace {

// The capture (times in ns after kT0; calls take 1 ns unless said):
//   10 stream A; 20 stream B (non-blocking, priority -2); 30 event E1
//   100 launch A (measured 150..400); 110 launch A; 120 record E1 on A
//   130 B waits E1; 140 launch B; 150 HtoD async 512 B on B (2 ns)
//   200 graph launch on A; 300 sync B (700 ns blocked); 1100 context sync (100)
//   1300 launch A (never proven)
std::string make_capture(ReplayCapture& c) {
  c.stream_create(10, 0xA);
  c.call(20, "cuStreamCreateWithPriority", {0x7000, 1, static_cast<uint64_t>(-2)}, 0, 1, 0xB);
  c.event_create(30, 0xE1);
  c.launch(100, 0xA);
  c.launch(110, 0xA);
  c.record(120, 0xE1, 0xA);
  c.wait(130, 0xB, 0xE1);
  c.launch(140, 0xB);
  c.call(150, "cuMemcpyHtoDAsync_v2", {0xD000, 0x9000, 512, 0xB}, 0, 2);
  c.call(200, "cuGraphLaunch", {0x6100, 0xA}, 0, 1);
  c.call(300, "cuStreamSynchronize", {0xB}, 0, 700);
  c.call(1100, "cuCtxSynchronize", {}, 0, 100);
  c.launch(1300, 0xA);
  std::string file = c.finish(2000);
  auto db = Db::open(file, SQLITE_OPEN_READWRITE);
  EXPECT_TRUE(db.ok());
  // The first launch measured on the GPU: 150..400 after the capture start
  // (launch ids are positions in the compact runs, not 1..n).
  auto first = db->scalar("SELECT min(id) FROM kernel_launches");
  EXPECT_TRUE(first.ok());
  EXPECT_TRUE(
      db->exec("INSERT INTO gpu_time_rows VALUES (0, " + std::to_string(*first) + ", 1, NULL, 150, 250, 0, 7, 1, 1, 0)")
          .ok())
      << db->errmsg();
  return file;
}

replay::Schedule schedule(const std::string& file, const replay::ScheduleOptions& o = {}) {
  auto db = open_capture_readonly(file);
  EXPECT_TRUE(db.ok());
  auto s = replay::build_schedule(*db, o);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return s.ok() ? std::move(*s) : replay::Schedule{};
}

// "index kind s<stream> e<event> at/gap gpu:from bytes after"
Strs steps(const replay::Schedule& s) {
  Strs out;
  for (const auto& st : s.steps) {
    std::string line = std::to_string(st.index) + " " + to_string(st.kind) + " s" + std::to_string(st.stream) + " e" +
                       std::to_string(st.event) + " " + std::to_string(st.at_ns) + "/" + std::to_string(st.gap_ns);
    if (st.gpu_from != replay::DurationSource::none)
      line += " " + std::to_string(st.gpu_ns) + ":" + to_string(st.gpu_from);
    if (st.bytes) line += " " + std::to_string(st.bytes) + "B " + st.direction + (st.async ? " async" : "");
    for (int64_t a : st.after) line += " after" + std::to_string(a);
    out.push_back(line);
  }
  return out;
}

}  // namespace

TEST(ExecSchedule, StepsStreamsEventsAndGpuLengthsOfAKnownCapture) {
  ReplayCapture c;
  auto s = schedule(make_capture(c));
  ASSERT_EQ(s.streams.size(), 2u);
  EXPECT_EQ(s.streams[0].kind, "created");
  EXPECT_FALSE(s.streams[0].non_blocking);
  EXPECT_EQ(s.streams[0].priority, 0);
  EXPECT_TRUE(s.streams[1].non_blocking);
  EXPECT_EQ(s.streams[1].priority, -2);
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(s.threads[0].tid, ReplayCapture::kPid);
  EXPECT_EQ(s.events, 1);
  EXPECT_EQ(s.start_ns, static_cast<int64_t>(ReplayCapture::kT0) + 100);
  // Lengths: launch 1 measured 250; launch 2 shares what sync B proved of A
  // (100..1000, less the measured 250) = 650; launch 3 on B: 140..1000 = 860;
  // the graph the context sync proved after 1000: 1000..1200 = 200; the last
  // launch, never proven: the median of its name's lengths (250, 650, 860).
  EXPECT_EQ(steps(s), (Strs{"0 kernel s0 e-1 0/0 250:measured", "1 kernel s0 e-1 10/10 650:window",
                            "2 event_record s0 e0 20/10", "3 event_wait s1 e0 30/9 after2",
                            "4 kernel s1 e-1 40/9 860:window", "5 copy s1 e-1 50/10 512B HtoD async",
                            "6 graph s0 e-1 100/48 200:window", "7 stream_sync s1 e-1 200/99",
                            "8 context_sync s-1 e-1 1000/100", "9 kernel s0 e-1 1200/100 650:same_name"}));
  // The capture's end as its host saw it: the last launch's return (1300).
  EXPECT_EQ(s.end_ns - s.start_ns, 1200);
  EXPECT_EQ(s.dropped_syncs, 0);
  EXPECT_TRUE(s.skipped.empty());
}

TEST(ExecSchedule, WhatIfEditsAndTheWindow) {
  ReplayCapture c;
  std::string file = make_capture(c);
  replay::ScheduleOptions o;
  o.drop_syncs = true;  // the syncs' blocked time leaves the next gaps
  auto s = schedule(file, o);
  EXPECT_EQ(s.dropped_syncs, 2);
  ASSERT_EQ(s.steps.size(), 8u);
  EXPECT_EQ(steps(s).back(), "7 kernel s0 e-1 1200/100 650:same_name");

  o = {};
  o.drop_observations = {2};  // the context sync only (observation 2)
  s = schedule(file, o);
  EXPECT_EQ(s.dropped_syncs, 1);
  EXPECT_EQ(steps(s)[7], "7 stream_sync s1 e-1 200/99");
  EXPECT_EQ(steps(s)[8], "8 kernel s0 e-1 1200/100 650:same_name");

  o = {};
  o.no_host_gaps = true;
  s = schedule(file, o);
  for (const auto& st : s.steps) EXPECT_EQ(st.gap_ns, 0) << st.index;
  EXPECT_TRUE(s.no_host_gaps) << "said, so that an executor starts each thread's first call at once";
  EXPECT_NE(schedule_json(s).find("\"no_host_gaps\": true"), std::string::npos);

  o = {};
  o.speed = 2;  // 99 / 2 rounds to 50 (llround: half away from zero)
  s = schedule(file, o);
  EXPECT_EQ(s.speed, 2.0);
  EXPECT_EQ(s.steps[1].gap_ns, 5);
  EXPECT_EQ(s.steps[7].gap_ns, 50);

  o = {};
  o.merge = {{2, 1}};  // B's work on A: the event wait is then within one stream
  s = schedule(file, o);
  EXPECT_EQ(steps(s)[3], "3 event_wait s0 e0 30/9");
  EXPECT_EQ(steps(s)[4], "4 kernel s0 e-1 40/9 860:window");

  o = {};
  o.from_ns = 105, o.to_ns = 1050;  // from launch 2 to the stream sync
  s = schedule(file, o);
  ASSERT_EQ(s.steps.size(), 7u);
  EXPECT_EQ(steps(s).front(), "0 kernel s0 e-1 0/0 650:window");
  EXPECT_EQ(to_string(s.steps.back().kind), std::string("stream_sync"));

  o = {};
  o.pid = 999;  // no such process
  EXPECT_TRUE(schedule(file, o).steps.empty());

  auto db = open_capture_readonly(file);
  ASSERT_TRUE(db.ok());
  o = {};
  o.merge = {{1, 7}};
  auto bad = replay::build_schedule(*db, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("cannot merge queue 1 into 7"), std::string::npos);
  o = {};
  o.speed = 0;
  EXPECT_FALSE(replay::build_schedule(*db, o).ok());
}

// The CLI writes the same schedule as JSON and refuses a malformed edit.
TEST(ExecSchedule, CliWritesTheScheduleAsJson) {
  ReplayCapture c;
  std::string file = make_capture(c);
  std::string out = file + ".schedule.json";
  std::string cmd = std::string(GPUOBS_BIN) + " replay " + file + " --schedule-out " + out + " --drop-sync 2 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["format"], "gpuobs-schedule");
  EXPECT_EQ(j["dropped_syncs"], 1);
  ASSERT_EQ(j["steps"].size(), 9u);
  EXPECT_EQ(j["steps"][0]["gpu_ns"], 250);
  EXPECT_EQ(j["steps"][0]["gpu_from"], "measured");
  EXPECT_EQ(j["steps"][3]["after"], nlohmann::json::array({2}));
  EXPECT_EQ(j["steps"][5]["bytes"], 512);
  EXPECT_EQ(j["steps"][5]["direction"], "HtoD");
  EXPECT_EQ(j["streams"][1]["priority"], -2);
  EXPECT_EQ(j["streams"][1]["non_blocking"], true);
  std::string bad = std::string(GPUOBS_BIN) + " replay " + file + " --schedule-out " + out + " --merge 1-2 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(bad.c_str())), 2);
  std::string unwritable = std::string(GPUOBS_BIN) + " replay " + file + " --schedule-out /proc/none/s.json 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(unwritable.c_str())), 1);  // cannot write: an error, not a partial file
}

// --chakra-out: the same schedule as a Chakra trace, one delimited message
// for the metadata and one per operation and sync (records and waits become
// dependencies); protoc reads the metadata through the build's schema.
TEST(ExecSchedule, CliWritesTheSameScheduleAsAChakraTrace) {
  ReplayCapture c;
  std::string file = make_capture(c);
  std::string json = file + ".schedule.json", et = file + ".et";
  std::string cmd =
      std::string(GPUOBS_BIN) + " replay " + file + " --schedule-out " + json + " --chakra-out " + et + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  size_t nodes = 0;
  for (const auto& s : j["steps"]) nodes += s["kind"] != "event_record" && s["kind"] != "event_wait";
  std::string bytes = gpuobs::testing::file_bytes(et);
  std::vector<std::string> msgs;
  for (size_t i = 0; i < bytes.size();) {
    uint64_t n = 0;
    for (int shift = 0; i < bytes.size(); shift += 7) {
      auto b = static_cast<uint8_t>(bytes[i++]);
      n |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
    }
    ASSERT_LE(i + n, bytes.size()) << "a message runs past the end";
    msgs.push_back(bytes.substr(i, n));
    i += n;
  }
  EXPECT_EQ(msgs.size(), 1 + nodes);
  std::ofstream(file + ".meta", std::ios::binary) << msgs.at(0);
  auto [rc, out] = gpuobs::testing::run_output(std::string("protoc --proto_path=") + CHAKRA_PROTO_DIR +
                                               " --decode gpuobs.chakra.GlobalMetadata chakra_et_subset.proto < " +
                                               file + ".meta 2>&1");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("version: \"0.0.4\""), std::string::npos) << out;
  EXPECT_NE(out.find("string_val: \"" + file + "\""), std::string::npos) << out;
}
