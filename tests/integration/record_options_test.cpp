// Every documented --stack-depth and --unwind combination loads the BPF
// programs and records launches with the stacks it promises (issue 20: depth
// 0 to 31 failed to load, the verifier rejected ioctl_exit's argument copy
// once the record had no stack area behind it); and record without -o names
// its capture itself. Root and real BPF.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "run_util.h"
#include "store/schema.h"
#include "store/writer.h"
#include "unit/test_util.h"

using namespace gpuobs;
using namespace gpuobs::testing;

namespace {

class RecordStackOptions : public ::testing::TestWithParam<std::tuple<int, const char*>> {};

// The workload lingers 100 ms after its last launch: a process that exits
// before the capture's consumer has read its mappings loses its stacks
// (counted as stack_maps_unreadable; StackResolver unit tests), and on a
// loaded 2-core CI machine a 25-launch fake-library run can be that short.
TEST_P(RecordStackOptions, LoadsAndRecordsEveryLaunchWithItsStack) {
  auto [depth, unwind] = GetParam();
  TempDir dir;
  std::string cap = dir.file("o.gpuobs"), log = dir.file("log");
  std::string cmd = std::string(GPUOBS_BIN) + " record -o " + cap + " --stack-depth " + std::to_string(depth) +
                    " --unwind " + unwind + " --libcuda " + FAKE_LIBCUDA + " -- " + LAUNCH_WORKLOAD + " --lib " +
                    FAKE_LIBCUDA + " --threads 1 --launches 25 --linger-ms 100 --truth " + dir.file("t.json") + " 2> " +
                    log;
  ASSERT_EQ(run(cmd), 0) << read_file(log);
  // No verifier log at the default level, whatever happened.
  EXPECT_EQ(read_file(log).find("BEGIN PROG LOAD LOG"), std::string::npos) << read_file(log);
  auto db = open_capture_readonly(cap);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), 25);
  // The capture says how it was made (schema 15; report capture shows it).
  EXPECT_EQ(scalar(*db, "SELECT stack_depth FROM capture"), depth);
  EXPECT_EQ(text(*db, "SELECT unwind FROM capture"), unwind);
  EXPECT_EQ(scalar(*db, "SELECT stack_copy_bytes FROM capture"),
            std::string(unwind) == "dwarf" && depth > 0 ? 16384 : 0);
  int64_t with_stack = scalar(*db, "SELECT count(*) FROM kernel_launches WHERE stack_id > 0");
  if (depth == 0) {
    EXPECT_EQ(with_stack, 0);
    return;
  }
  EXPECT_EQ(with_stack, 25);
  // Every one of them names at least the probed function's caller.
  EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches k JOIN stacks s ON s.id = k.stack_id WHERE s.depth = 0"),
            0);
  // Never more frames than asked for, and at least the probed function's caller.
  int64_t most = scalar(*db, "SELECT max(depth) FROM stacks WHERE id IN (SELECT stack_id FROM kernel_launches)");
  EXPECT_LE(most, depth);
  EXPECT_GE(most, 1) << "stacks " << text(*db, "SELECT group_concat(id || ':' || depth) FROM stacks")
                     << "; the launches' " << text(*db, "SELECT group_concat(DISTINCT stack_id) FROM kernel_launches")
                     << "; through the function "
                     << text(*db, "SELECT group_concat(DISTINCT stack_id) FROM kernel_launches_between()");
  if (depth == 127) {
    // Records are as long as the frames walked, not the depth allowed (ABI
    // 6): a launch here has a handful of frames (~180 bytes), where a
    // record reserved at depth 127 took 1128 (dwarf adds its 16 KiB copy).
    int64_t records = scalar(*db, "SELECT value FROM counters WHERE name = 'ring_records'");
    int64_t bytes = scalar(*db, "SELECT value FROM counters WHERE name = 'ring_record_bytes'");
    ASSERT_GE(records, 25);
    int64_t copy = std::string(unwind) == "dwarf" ? 16384 + 40 : 0;
    EXPECT_LT(bytes, records * (400 + copy)) << bytes << " bytes in " << records << " records";
  }
  if (depth >= 8) {  // deep enough to leave the fake library: the workload's own launch loop
    EXPECT_GE(scalar(*db,
                     "SELECT count(*) FROM stack_symbols WHERE module LIKE '%launch_workload' AND stack_id IN "
                     "(SELECT stack_id FROM kernel_launches)"),
              1);
  }
}

std::string name_of(const ::testing::TestParamInfo<std::tuple<int, const char*>>& info) {
  return std::string(std::get<1>(info.param)) + "_depth" + std::to_string(std::get<0>(info.param));
}

INSTANTIATE_TEST_SUITE_P(DocumentedValues, RecordStackOptions,
                         ::testing::Combine(::testing::Values(0, 1, 8, 31, 32, 64, 127),
                                            ::testing::Values("fp", "dwarf", "bpf")),
                         name_of);

}  // namespace

namespace {

// Without -o, record names the capture after the command and the local time
// in the current directory, never over an existing file, and says where it
// writes (issue 20). The command's base name is cleaned for the file system.
TEST(RecordOutput, WithoutOItIsNamedAfterTheCommandAndTheTime) {
  TempDir dir;
  std::string link = dir.file("my launcher");  // a space: cleaned to '_'
  ASSERT_EQ(::symlink(LAUNCH_WORKLOAD, link.c_str()), 0);
  std::string cmd = "cd " + dir.path() + " && " + GPUOBS_BIN + " record --libcuda " + FAKE_LIBCUDA +
                    " -- './my launcher' --lib " + FAKE_LIBCUDA + " --threads 1 --launches 7 --truth " +
                    dir.file("t.json");
  ASSERT_EQ(run(cmd + " 2> " + dir.file("log1")), 0) << read_file(dir.file("log1"));
  ASSERT_EQ(run(cmd + " 2> " + dir.file("log2")), 0) << read_file(dir.file("log2"));
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    if (e.path().extension() == ".gpuobs") names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names.size(), 2u);
  const std::regex pattern(R"(gpuobs-my_launcher-[0-9]{8}-[0-9]{6}(-[0-9]+)?\.gpuobs)");
  for (const auto& n : names) {
    EXPECT_TRUE(std::regex_match(n, pattern)) << n;
    auto db = open_capture_readonly(dir.file(n));
    ASSERT_TRUE(db.ok()) << db.error().message;
    EXPECT_EQ(scalar(*db, "SELECT count(*) FROM kernel_launches"), 7);
  }
  // Each run said which file it wrote, and they are the two files.
  std::string logs = read_file(dir.file("log1")) + read_file(dir.file("log2"));
  for (const auto& n : names) EXPECT_NE(logs.find("recording into " + n), std::string::npos) << logs;
}

}  // namespace
