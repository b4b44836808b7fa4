// A test suite over one capture recorded once per ctest run: `gpuobs record -o CAPTURE
// ARGS` run before the suite's first test, its workload's truth file read,
// the capture opened for each test. Suite (the derived fixture) names the
// capture file (kCapture) and what follows `-o CAPTURE` (record_args, given
// the truth file's path). Used by the API, HIP and driver-ioctl suites.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "run_util.h"
#include "shared_recordings.h"
#include "store/schema.h"
#include "unit/test_util.h"

namespace gpuobs::testing {

template <class Suite>
class RecordedSuite : public ::testing::Test {
 protected:
  // Recorded once per ctest run (shared_recordings.h), in a directory named
  // after the capture.
  static void SetUpTestSuite() {
    dir_ = new SharedRecordings(Suite::kCapture, [](const std::string& dir) {
      return run(std::string(GPUOBS_BIN) + " record -o " + dir + "/" + Suite::kCapture + " " +
                 Suite::record_args(dir + "/truth.json") + " 2>" + dir + "/err") == 0;
    });
    out_ = dir_->file(Suite::kCapture);
    if (dir_->ok()) truth_ = new nlohmann::json(read_json(dir_->file("truth.json")));
  }
  static void TearDownTestSuite() {
    delete truth_;
    truth_ = nullptr;
    delete dir_;
  }
  void SetUp() override {
    ASSERT_TRUE(dir_->ok()) << read_file(dir_->file("err"));
    auto db = open_capture_readonly(out_);
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(db.value());
  }
  int64_t q(const std::string& sql) { return scalar(db_, sql); }
  std::string text(const std::string& sql) { return gpuobs::testing::text(db_, sql); }

  static inline SharedRecordings* dir_;  // the recording: read, never written
  TempDir tmp_;                          // a test's own outputs
  static inline std::string out_;
  static inline nlohmann::json* truth_;
  Db db_;
};

}  // namespace gpuobs::testing
