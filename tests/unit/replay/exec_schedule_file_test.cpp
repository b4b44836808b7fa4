// The executor's reading of a schedule file (exec/schedule_file.cpp): the
// file --schedule-out writes reads back step for step, and what is not a
// schedule, or a schedule that names a thread, stream or event it does not
// have, is refused naming the problem, before any CUDA call is made.
#include <gtest/gtest.h>

#include <fstream>

#include "exec/schedule_file.h"
#include "replay/exec_schedule.h"
#include "unit/test_util.h"

namespace gpuobs {
namespace {

std::string why_not(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  exec::ScheduleFile s;
  std::string why;
  return exec::read_schedule(path, s, why) ? std::string("(read)") : why;
}

}  // namespace

TEST(ExecScheduleFile, WhatTheBuilderWritesReadsBackStepForStep) {
  replay::Schedule s;
  s.streams = {{0, 3, 1, 10, "created", "stream#1", true, -2}, {1, 4, 1, 10, "legacy", "", false, 0}};
  s.threads = {{0, 1, 11}};
  s.events = 1;
  replay::ExecStep k;
  k.index = 0, k.kind = replay::StepKind::kernel, k.stream = 0, k.at_ns = 5, k.gap_ns = 0, k.gpu_ns = 2500;
  replay::ExecStep c;
  c.index = 1, c.kind = replay::StepKind::copy, c.stream = 1, c.at_ns = 900, c.gap_ns = 40, c.host_ns = 300;
  c.bytes = 4096, c.direction = "DtoH", c.async = true;
  replay::ExecStep r;
  r.index = 2, r.kind = replay::StepKind::event_record, r.stream = 0, r.event = 0, r.at_ns = 1000, r.gap_ns = 7;
  s.steps = {k, c, r};
  s.no_host_gaps = true, s.speed = 2;
  testing::TempDir dir;
  std::string f = dir.file("s.json");
  std::ofstream(f) << replay::schedule_json(s);
  exec::ScheduleFile got;
  std::string why;
  ASSERT_TRUE(exec::read_schedule(f, got, why)) << why;
  ASSERT_EQ(got.streams.size(), 2u);
  EXPECT_TRUE(got.streams[0].non_blocking);
  EXPECT_EQ(got.streams[0].priority, -2);
  EXPECT_EQ(got.streams[1].kind, "legacy");
  ASSERT_EQ(got.steps.size(), 3u);
  EXPECT_EQ(got.steps[0].kind, exec::Kind::kernel);
  EXPECT_EQ(got.steps[0].gpu_ns, 2500);
  EXPECT_EQ(got.steps[1].kind, exec::Kind::copy);
  EXPECT_EQ(got.steps[1].bytes, 4096u);
  EXPECT_EQ(got.steps[1].direction, "DtoH");
  EXPECT_TRUE(got.steps[1].async);
  EXPECT_EQ(got.steps[1].host_ns, 300);
  EXPECT_EQ(got.steps[1].gap_ns, 40);
  EXPECT_EQ(got.steps[2].event, 0);
  EXPECT_EQ(got.events, 1);
  EXPECT_TRUE(got.no_host_gaps);
  EXPECT_EQ(got.speed, 2.0);
}

TEST(ExecScheduleFile, WhatIsNotAUsableScheduleIsRefusedByName) {
  testing::TempDir dir;
  std::string f = dir.file("x.json");
  const std::string head = R"({"format":"gpuobs-schedule","version":1,"events":1,)"
                           R"("streams":[{"id":0,"process_id":1,"kind":"created"}],)"
                           R"("threads":[{"id":0,"process_id":1,"tid":5}],"steps":[)";
  EXPECT_NE(why_not(f, "not json").find("is not JSON"), std::string::npos);
  EXPECT_NE(why_not(f, R"({"format":"chrome"})").find("is not a gpuobs schedule"), std::string::npos);
  EXPECT_NE(why_not(f, R"({"format":"gpuobs-schedule","version":2})").find("this executor reads version 1"),
            std::string::npos);
  EXPECT_EQ(why_not(f, head + R"({"i":0,"kind":"kernel","thread":0,"stream":0,"at_ns":0,"gap_ns":0}]})"), "(read)");
  EXPECT_NE(why_not(f, head + R"({"i":0,"kind":"kernel","thread":3,"stream":0,"at_ns":0,"gap_ns":0}]})")
                .find("step 0: no thread 3"),
            std::string::npos);
  EXPECT_NE(why_not(f, head + R"({"i":0,"kind":"kernel","thread":0,"stream":9,"at_ns":0,"gap_ns":0}]})")
                .find("step 0: no stream 9"),
            std::string::npos);
  EXPECT_NE(why_not(f, head + R"({"i":0,"kind":"event_wait","thread":0,"stream":0,"event":4,"at_ns":0,"gap_ns":0}]})")
                .find("step 0: no event 4"),
            std::string::npos);
  EXPECT_NE(why_not(f, head + R"({"i":0,"kind":"teleport","thread":0,"stream":0,"at_ns":0,"gap_ns":0}]})")
                .find("unknown kind teleport"),
            std::string::npos);
  EXPECT_NE(why_not(f, head + R"({"i":1,"kind":"kernel","thread":0,"stream":0,"at_ns":0,"gap_ns":0}]})")
                .find("step indexes must run 0, 1, ..."),
            std::string::npos);
  EXPECT_NE(why_not(f, head + R"({"i":0,"kind":"kernel","thread":0,"stream":0,"at_ns":0,"gap_ns":-5}]})")
                .find("negative time"),
            std::string::npos);
  EXPECT_NE(why_not(f, head + R"({"i":0,"kind":"kernel","thread":0,"stream":0}]})").find("x.json: "), std::string::npos)
      << "a missing field names the file";
  exec::ScheduleFile s;
  std::string why;
  EXPECT_FALSE(exec::read_schedule(dir.file("missing.json"), s, why));
  EXPECT_NE(why.find("cannot open"), std::string::npos);
}

}  // namespace gpuobs
