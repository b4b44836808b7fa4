// gpuobs record --gpu-time on this GPU-less machine (issue 19, part 2): the
// command gets the injection library, CUPTI and the file to write in its
// environment (and only with the option); a missing piece stops record
// before the command runs; a command that makes no CUDA call leaves no file
// and record says so. The CUPTI records themselves are checked on the H100
// (docs/gpu_time.md); their import in gpu_time_import_test.cpp. Root, BPF.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "run_util.h"
#include "unit/test_util.h"

using namespace gpuobs::testing;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A command that writes the three variables --gpu-time sets, one per line.
std::string env_dump(const std::string& out) {
  return "sh -c 'printf \"%s\\n%s\\n%s\\n\" \"$CUDA_INJECTION64_PATH\" \"$GPUOBS_CUPTI_PATH\" "
         "\"$GPUOBS_GPU_TIME_FILE\" > " +
         out + "'";
}

}  // namespace

TEST(GpuTimeRecord, TheCommandGetsTheInjectionOnlyWithTheOption) {
  TempDir dir;
  std::string cap = dir.file("g.gpuobs"), env = dir.file("env");
  auto [rc, out] = run_output(std::string(GPUOBS_BIN) + " record -f --gpu-time -o " + cap + " -- " + env_dump(env));
  ASSERT_EQ(rc, 0) << out;
  std::istringstream lines(read(env));
  std::string inject, cupti, file;
  std::getline(lines, inject), std::getline(lines, cupti), std::getline(lines, file);
  EXPECT_EQ(std::filesystem::canonical(inject), std::filesystem::canonical(CUPTI_INJECT)) << out;
  EXPECT_NE(cupti.find("libcupti.so"), std::string::npos) << cupti;
  EXPECT_TRUE(std::filesystem::exists(cupti)) << cupti;
  EXPECT_EQ(file, cap + ".gputime");
  EXPECT_NE(out.find("GPU times: none recorded (" + cap + ".gputime was not written"), std::string::npos) << out;

  auto [rc2, out2] = run_output(std::string(GPUOBS_BIN) + " record -f -o " + cap + " -- " + env_dump(env));
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_EQ(read(env), "\n\n\n") << "nothing injected without --gpu-time";
  EXPECT_EQ(out2.find("GPU times"), std::string::npos) << out2;
}

// A relative -o and a command that changes directory: the file the command
// is told to write is still the one record reads (review of issue 19: it was
// relative, so the command wrote elsewhere and record said none recorded).
TEST(GpuTimeRecord, PathsGivenToTheCommandAreAbsolute) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("sub"));
  auto [rc, out] = run_output("cd " + dir.path() + " && " + std::string(GPUOBS_BIN) +
                              " record -f --gpu-time -o rel.gpuobs -- sh -c 'cd sub && " +
                              "printf \"%s\\n%s\\n%s\\n\" \"$CUDA_INJECTION64_PATH\" \"$GPUOBS_CUPTI_PATH\" "
                              "\"$GPUOBS_GPU_TIME_FILE\" > env'");
  ASSERT_EQ(rc, 0) << out;
  std::istringstream lines(read(dir.file("sub/env")));
  std::string inject, cupti, file;
  std::getline(lines, inject), std::getline(lines, cupti), std::getline(lines, file);
  EXPECT_EQ(file, dir.file("rel.gpuobs.gputime"));
  EXPECT_EQ(inject.front(), '/') << inject;
  EXPECT_EQ(cupti.front(), '/') << cupti;
  // Made by record (empty: the command made no CUDA call), then removed.
  EXPECT_FALSE(std::filesystem::exists(file)) << "an empty activity file is removed";
}

TEST(GpuTimeRecord, AMissingPieceStopsRecordBeforeTheCommandRuns) {
  TempDir dir;
  std::string cap = dir.file("g.gpuobs"), ran = dir.file("ran");
  auto [rc, out] = run_output("GPUOBS_CUPTI_INJECT=/nonexistent/libgpuobs_cupti_inject.so " + std::string(GPUOBS_BIN) +
                              " record -f --gpu-time -o " + cap + " -- touch " + ran);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("the CUPTI injection library libgpuobs_cupti_inject.so is not installed (looked at "
                     "/nonexistent/libgpuobs_cupti_inject.so)"),
            std::string::npos)
      << out;
  EXPECT_FALSE(std::filesystem::exists(ran));
  auto [rc2, out2] = run_output("GPUOBS_CUPTI_PATH=/nonexistent/libcupti.so.13 " + std::string(GPUOBS_BIN) +
                                " record -f --gpu-time -o " + cap + " -- touch " + ran);
  EXPECT_EQ(rc2, 2) << out2;
  EXPECT_NE(out2.find("GPUOBS_CUPTI_PATH names /nonexistent/libcupti.so.13, which cannot be read"), std::string::npos)
      << out2;
  EXPECT_FALSE(std::filesystem::exists(ran));
}
